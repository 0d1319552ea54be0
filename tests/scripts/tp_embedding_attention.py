"""Tensor parallelism the way pytorch/examples' distributed/tensor_parallelism/fsdp_tp_example.py lays out its llama2
blocks: a vocab-parallel embedding (RowwiseParallel, Replicate in, Shard(1) out), SequenceParallel norms,
PrepareModuleInput, q/k/v ColwiseParallel(use_local_output=False) so that scaled_dot_product_attention runs on
DTensors, RowwiseParallel output projections, a ColwiseParallel vocabulary head; then group_norm of a DTensor and
its gradient.

Run with `python -m tidal.comm.launch --nproc-per-node 2 -m tidal.compat tp_embedding_attention.py` (tidal); with
PLAIN=1 the model is not parallelized (real torch's reference: its CPU attention kernel has no DTensor sharding
rule, and the parallel model computes what the plain one does). Rank 0 prints the per-step losses.
"""
import os

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import Replicate, Shard, distribute_tensor
from torch.distributed.tensor.parallel import (ColwiseParallel, PrepareModuleInput, RowwiseParallel,
                                               SequenceParallel, parallelize_module)

from _common import init_params, report

dist.init_process_group("gloo")
rank, world_size = dist.get_rank(), dist.get_world_size()
mesh = init_device_mesh("cpu", (world_size,))
VOCAB, DIM, HEADS = 32, 16, 4


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.wq, self.wk, self.wv, self.wo = (nn.Linear(DIM, DIM, bias=False) for _ in range(4))

    def forward(self, x):
        bsz, seqlen, _ = x.shape
        heads = [w(x).view(bsz, seqlen, -1, DIM // HEADS).transpose(1, 2) for w in (self.wq, self.wk, self.wv)]
        out = F.scaled_dot_product_attention(*heads, is_causal=True)
        return self.wo(out.transpose(1, 2).contiguous().view(bsz, seqlen, -1))


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok_embeddings = nn.Embedding(VOCAB, DIM)
        self.attention_norm = nn.LayerNorm(DIM)
        self.attention = Attention()
        self.norm = nn.LayerNorm(DIM)
        self.output = nn.Linear(DIM, VOCAB, bias=False)

    def forward(self, tokens):
        h = self.tok_embeddings(tokens)
        h = h + self.attention(self.attention_norm(h))
        return self.output(self.norm(h))


model = Model()
init_params(model, seed=3)
plan = {
    "tok_embeddings": RowwiseParallel(input_layouts=Replicate(), output_layouts=Shard(1)),
    "attention_norm": SequenceParallel(),
    "attention": PrepareModuleInput(input_layouts=(Shard(1),), desired_input_layouts=(Replicate(),)),
    "attention.wq": ColwiseParallel(use_local_output=False),
    "attention.wk": ColwiseParallel(use_local_output=False),
    "attention.wv": ColwiseParallel(use_local_output=False),
    "attention.wo": RowwiseParallel(output_layouts=Shard(1)),
    "norm": SequenceParallel(),
    "output": ColwiseParallel(input_layouts=Shard(1), output_layouts=Replicate()),
}
if os.environ.get("PLAIN") != "1":
    parallelize_module(model, mesh, plan)
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
rng = np.random.default_rng(11)
tokens = torch.from_numpy(rng.integers(0, VOCAB, size=(2, 8)))
losses = []
for _ in range(3):
    optimizer.zero_grad()
    logits = model(tokens)
    loss = F.cross_entropy(logits[:, :-1].flatten(0, 1), tokens[:, 1:].flatten())
    loss.backward()
    optimizer.step()
    losses.append(float(loss))
x = torch.from_numpy(rng.normal(size=(2, 4, 6)).astype(np.float32))
x = (x if os.environ.get("PLAIN") == "1" else distribute_tensor(x, mesh, [Shard(2)])).requires_grad_()
y = F.group_norm(x, 2)
full = (lambda t: t.full_tensor() if hasattr(t, "full_tensor") else t)
(full(y) * torch.linspace(-1.0, 1.0, 6)).sum().backward()
group_norm = [full(y).detach().flatten().tolist(), full(x.grad).flatten().tolist()]
dist.barrier()
if rank == 0:
    report(losses, world_size=world_size, parallel=os.environ.get("PLAIN") != "1", group_norm=group_norm)
dist.destroy_process_group()

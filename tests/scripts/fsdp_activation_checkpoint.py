"""FSDP2 with activation checkpointing, the torchtitan way and two others: blocks wrapped by
apply_activation_checkpointing(checkpoint_wrapper) and then fully_shard-ed (the checkpoint recomputes the wrapped
block, whose FSDP wrapper is not called again); fully_shard-ed blocks called through utils.checkpoint (reentrant
and not); the same with reshard_after_forward=False. AdamW, each rank on its own batch.

Run with `torchrun --nproc-per-node 2 fsdp_activation_checkpoint.py` (real torch, gloo) or
`python -m tidal.comm.launch --nproc-per-node 2 -m tidal.compat fsdp_activation_checkpoint.py` (tidal). Rank 0
prints the per-step losses summed over ranks and the sums of the final full parameters.
"""
import functools

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import (CheckpointImpl,
                                                                         apply_activation_checkpointing,
                                                                         checkpoint_wrapper)
from torch.distributed.fsdp import fully_shard
from torch.utils.checkpoint import checkpoint

from _common import init_params, report


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)
        self.norm = nn.LayerNorm(8)

    def forward(self, x):
        return x + torch.tanh(self.lin(self.norm(x)))


class Through(nn.Module):
    """Calls its fully_shard-ed layers itself, checkpointing the two blocks."""

    def __init__(self, layers):
        super().__init__()
        self.layers = layers

    def forward(self, x):
        h = self.layers[0](x)
        h = checkpoint(self.layers[1], h, use_reentrant=False)
        h = checkpoint(self.layers[2], h, use_reentrant=True)
        return self.layers[3](h)


def build(mode):
    layers = nn.Sequential(nn.Linear(4, 8), Block(), Block(), nn.Linear(8, 2))
    init_params(layers, seed=0)
    if mode == "wrapper":
        wrap = functools.partial(checkpoint_wrapper, checkpoint_impl=CheckpointImpl.NO_REENTRANT)
        apply_activation_checkpointing(layers, checkpoint_wrapper_fn=wrap, check_fn=lambda m: isinstance(m, Block))
        for layer in layers[1:3]:
            fully_shard(layer)
        fully_shard(layers)
        return layers
    for layer in layers:
        fully_shard(layer, reshard_after_forward=mode == "through")
    return Through(layers)


dist.init_process_group("gloo")
rank = dist.get_rank()
losses, sums = [], []
for mode in ("wrapper", "through", "through_no_reshard"):
    model = build(mode)
    opt = torch.optim.AdamW(model.parameters(), lr=0.05)
    for step in range(3):
        x = torch.from_numpy(np.random.default_rng(10 * rank + step).normal(size=(6, 4)).astype(np.float32))
        loss = model(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.detach())
    sums += [float(p.full_tensor().double().sum()) for p in model.parameters()]
total = torch.stack(losses)
dist.all_reduce(total)
if rank == 0:
    report(total.tolist(), sums=sums)
dist.destroy_process_group()

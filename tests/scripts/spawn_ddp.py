"""DistributedDataParallel started with torch.multiprocessing.spawn (no launcher): two processes join a
gloo group from MASTER_ADDR/MASTER_PORT, each trains the same MLP on its half of every batch, and rank 0
sends the averaged loss curve and the final weights back to the parent through a queue."""
import os
import socket
import sys

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import init_params, report  # noqa: E402

WORLD, STEPS, BATCH = 2, 12, 32


def train(rank, world, port, results):
    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 1))
    init_params(model, seed=3)
    ddp = DDP(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
    rng = np.random.default_rng(4)
    x = rng.normal(size=(STEPS, BATCH, 8)).astype(np.float32)
    y = np.tanh(x[..., :2].sum(-1, keepdims=True) - x[..., 2:3]).astype(np.float32)
    half = BATCH // world
    losses = []
    for step in range(STEPS):
        rows = slice(rank * half, (rank + 1) * half)
        loss = F.mse_loss(ddp(torch.from_numpy(x[step, rows])), torch.from_numpy(y[step, rows]))
        opt.zero_grad()
        loss.backward()
        opt.step()
        mean = loss.detach().clone()
        dist.all_reduce(mean)
        losses.append(mean.item() / world)
    if rank == 0:
        results.put((losses, [p.detach().sum().item() for p in model.parameters()]))
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        free_port = probe.getsockname()[1]
    queue = mp.get_context("spawn").SimpleQueue()
    mp.spawn(train, args=(WORLD, free_port, queue), nprocs=WORLD, join=True)
    curve, weight_sums = queue.get()
    report(curve, weight_sums=weight_sums)

"""DDP with uneven inputs under `model.join()`: rank r trains on 3 + 2r batches; the joined rank shadows the other's
buffer broadcasts and gradient all-reduces; at the end every rank holds the last joiner's model. Run once with
divide_by_initial_world_size=True (the default: joined ranks count as zero gradients) and once with False (the
sum divided by the ranks still running), and once inside a bare Join([ddp]) with no_sync steps between.

Run with `torchrun --nproc-per-node 2 ddp_join.py` or `python -m tidal.comm.launch --nproc-per-node 2 -m
tidal.compat ddp_join.py`. Rank 0 prints JSON."""
import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed.algorithms.join import Join
from torch.nn.parallel import DistributedDataParallel as DDP

from _common import init_params, report

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
rng = np.random.default_rng(5 + rank)
batches = [(torch.from_numpy(rng.normal(size=(6, 4)).astype(np.float32)),
            torch.from_numpy(rng.normal(size=(6, 1)).astype(np.float32))) for _ in range(3 + 2 * rank)]


def train(divide, bare=False):
    model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Tanh(), nn.Linear(8, 1))
    init_params(model, seed=rank)
    ddp = DDP(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    losses = []
    context = Join([ddp], divide_by_initial_world_size=divide) if bare else ddp.join(divide_by_initial_world_size=divide)
    with context:
        for step, (x, y) in enumerate(batches):
            opt.zero_grad()
            if bare and step == 1:
                with ddp.no_sync():
                    F.mse_loss(ddp(x), y).backward()
            loss = F.mse_loss(ddp(x), y)
            loss.backward()
            opt.step()
            losses.append(round(loss.item(), 6))
    state = [round(float(p.detach().double().sum()), 6) for p in model.parameters()]
    state += [round(float(b.double().sum()), 6) for b in model.buffers()]
    return {"losses": losses, "state": state}


def train_zero():
    """Join([ddp, zero]) as torch's docs show it: DDP shadows the collectives, ZeRO's step runs on joined ranks."""
    from torch.distributed.optim import ZeroRedundancyOptimizer
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
    init_params(model, seed=rank)
    ddp = DDP(model)
    zero = ZeroRedundancyOptimizer(ddp.parameters(), optimizer_class=torch.optim.Adam, lr=0.05)
    losses = []
    with Join([ddp, zero]):
        for x, y in batches:
            zero.zero_grad()
            loss = F.mse_loss(ddp(x), y)
            loss.backward()
            zero.step()
            losses.append(round(loss.item(), 6))
    return {"losses": losses, "state": [round(float(p.detach().double().sum()), 6) for p in model.parameters()]}


result = {"initial": train(True), "by_running": train(False), "bare": train(True, bare=True), "zero": train_zero()}
everyone = [None] * world
dist.all_gather_object(everyone, result)
if rank == 0:
    report([], ranks=everyone)
dist.destroy_process_group()

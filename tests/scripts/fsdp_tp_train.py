"""FSDP2, tensor parallelism and a distributed checkpoint the torchrun way: init_device_mesh, fully_shard,
parallelize_module (Colwise/Rowwise), get_state_dict + dcp.save/load + set_state_dict to resume.

Run with `torchrun --nproc-per-node 2 fsdp_tp_train.py` (real torch, gloo) or
`python -m tidal.comm.launch --nproc-per-node 2 -m tidal.compat fsdp_tp_train.py` (tidal). Rank 0
prints the per-step losses averaged over ranks (FSDP, then the resumed run, then the TP model's).
"""
import numpy as np
import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard
from torch.distributed.tensor import DTensor
from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

from _common import init_params, report

dist.init_process_group("gloo")
rank, world_size = dist.get_rank(), dist.get_world_size()
mesh = init_device_mesh("cpu", (world_size,))

rng = np.random.default_rng(5)
x_all = torch.from_numpy(rng.normal(size=(16, 8)).astype(np.float32))
y_all = torch.from_numpy(rng.normal(size=(16, 4)).astype(np.float32))
rows = len(x_all) // world_size
x_mine, y_mine = x_all[rank * rows:(rank + 1) * rows], y_all[rank * rows:(rank + 1) * rows]


def sharded_model(seed):
    model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 4))
    init_params(model, seed=seed)
    for layer in (model[0], model[2]):
        fully_shard(layer, mesh=mesh)
    fully_shard(model, mesh=mesh)
    return model


def train(model, optimizer, steps, x, y):
    out = []
    for _ in range(steps):
        optimizer.zero_grad()
        loss = F.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        out.append(loss.detach())
    return out


model = sharded_model(seed=0)
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
losses = train(model, optimizer, 5, x_mine, y_mine)
model_sd, optim_sd = get_state_dict(model, optimizer)
dcp.save({"model": model_sd, "optim": optim_sd}, checkpoint_id="fsdp_ckpt")

resumed = sharded_model(seed=1)
optimizer2 = torch.optim.Adam(resumed.parameters(), lr=0.01)
model_sd2, optim_sd2 = get_state_dict(resumed, optimizer2)
state = {"model": model_sd2, "optim": optim_sd2}
dcp.load(state, checkpoint_id="fsdp_ckpt")
set_state_dict(resumed, optimizer2, model_state_dict=state["model"], optim_state_dict=state["optim"])
losses += train(resumed, optimizer2, 3, x_mine, y_mine)

tp = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
init_params(tp, seed=2)
parallelize_module(tp, mesh, {"0": ColwiseParallel(), "2": RowwiseParallel()})
tp_losses = train(tp, torch.optim.SGD(tp.parameters(), lr=0.1), 4, x_all, y_all)

mean_losses = torch.stack(losses + tp_losses)
dist.all_reduce(mean_losses)
mean_losses /= world_size
placements = [str(p.placements) for p in list(model.parameters()) + list(tp.parameters())]
all_dtensors = all(isinstance(p, DTensor) for p in list(model.parameters()) + list(tp.parameters()))
dist.barrier()
if rank == 0:
    report(mean_losses.tolist(), placements=placements, all_dtensors=all_dtensors, world_size=world_size)
dist.destroy_process_group()

"""FSDP2 with meta-device initialization, as pytorch/examples' distributed/FSDP2/example.py does it: the model built
under `torch.device("meta")`, fully_shard per layer, `to_empty(device="cpu")`, parameters then filled shard by shard
(distribute_tensor of NumPy-made values, so torch and tidal start equal), an Adam with a tensor lr, and
torch.distributed.checkpoint.state_dict._init_optim_state (the private helper the example's checkpointer calls);
then its checkpointer's two resumes: a meta model given DTensor parameters with load_state_dict(assign=True), and
one given the whole state dict by set_model_state_dict(full_state_dict=True, broadcast_from_rank0=True).

Run with `torchrun --nproc-per-node 2 fsdp_meta_init.py` (real torch, gloo) or
`python -m tidal.comm.launch --nproc-per-node 2 -m tidal.compat fsdp_meta_init.py` (tidal). Rank 0 prints the
per-step losses averaged over ranks.
"""
import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed.checkpoint.state_dict import StateDictOptions, _init_optim_state, set_model_state_dict
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard
from torch.distributed.tensor import distribute_tensor

from _common import report

dist.init_process_group("gloo")
rank, world_size = dist.get_rank(), dist.get_world_size()
mesh = init_device_mesh("cpu", (world_size,))

with torch.device("meta"):
    model = nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 4))
for layer in (model[0], model[2]):
    fully_shard(layer, mesh=mesh)
fully_shard(model, mesh=mesh)
meta = [str(p.device) for p in model.parameters()]
model.to_empty(device="cpu")
rng = np.random.default_rng(7)
with torch.no_grad():
    for p in model.parameters():
        full = torch.from_numpy(rng.normal(0.0, 0.3, size=tuple(p.shape)).astype(np.float32))
        p.copy_(distribute_tensor(full, p.device_mesh, p.placements))

optimizer = torch.optim.Adam(model.parameters(), lr=torch.tensor(0.01))
_init_optim_state(optimizer)  # state made by a step with zero gradients and lr 0: the parameters do not move
state_sizes = sorted(len(s) for s in optimizer.state.values())
lr_after_init = float(optimizer.param_groups[0]["lr"])

x_all = torch.from_numpy(rng.normal(size=(16, 8)).astype(np.float32))
y_all = torch.from_numpy(rng.normal(size=(16, 4)).astype(np.float32))
rows = len(x_all) // world_size
x_mine, y_mine = x_all[rank * rows:(rank + 1) * rows], y_all[rank * rows:(rank + 1) * rows]
losses = []


def train(net, opt, steps):
    for _ in range(steps):
        opt.zero_grad()
        loss = F.mse_loss(net(x_mine), y_mine)
        loss.backward()
        opt.step()
        losses.append(loss.detach())


train(model, optimizer, 4)



def meta_model():
    with torch.device("meta"):
        fresh = nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 4))
    for layer in (fresh[0], fresh[2]):
        fully_shard(layer, mesh=mesh)
    fully_shard(fresh, mesh=mesh)
    return fresh


full_sd = {name: p.full_tensor() for name, p in model.state_dict().items()}  # the checkpointer's saved file
resumed = meta_model()
meta_sd = resumed.state_dict()
resumed.load_state_dict({name: nn.Parameter(distribute_tensor(full, meta_sd[name].device_mesh,
                                                              meta_sd[name].placements))
                         for name, full in full_sd.items()}, strict=False, assign=True)
train(resumed, torch.optim.Adam(resumed.parameters(), lr=0.01), 2)
resumed_devices = sorted({str(p.device) for p in resumed.parameters()})

by_dcp = meta_model()  # the example's --dcp-api resume
set_model_state_dict(by_dcp, {name: full.clone() for name, full in full_sd.items()},
                     options=StateDictOptions(full_state_dict=True, broadcast_from_rank0=True))
train(by_dcp, torch.optim.Adam(by_dcp.parameters(), lr=0.01), 2)
resumed_devices += sorted({str(p.device) for p in by_dcp.parameters()})

mean_losses = torch.stack(losses)
dist.all_reduce(mean_losses)
mean_losses /= world_size
placements = [str(p.placements) for p in model.parameters()]
devices = sorted({str(p.device) for p in model.parameters()})
dist.barrier()
if rank == 0:
    report(mean_losses.tolist(), placements=placements, meta=meta, devices=devices, state_sizes=state_sizes,
           lr_after_init=lr_after_init, resumed_devices=resumed_devices, world_size=world_size)
dist.destroy_process_group()

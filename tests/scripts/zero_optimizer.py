"""ZeroRedundancyOptimizer with DDP on 2 ranks (Adam, state sharded), consolidate_state_dict/state_dict/
load_state_dict (under Join, with DDP: scripts/ddp_join.py). Run with `torchrun --nproc-per-node 2
zero_optimizer.py` or under tidal's launcher; rank 0 prints JSON."""
import json

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed.optim import ZeroRedundancyOptimizer
from torch.nn.parallel import DistributedDataParallel as DDP

from _common import init_params

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
rng = np.random.default_rng(11 + rank)
x = torch.from_numpy(rng.normal(size=(6, 4)).astype(np.float32))
y = torch.from_numpy(rng.normal(size=(6, 1)).astype(np.float32))


def net():
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3), nn.Tanh(), nn.Linear(3, 1))
    init_params(model, seed=0)
    return model


def sums(params):
    return [round(float(p.detach().double().sum()), 6) for p in params]


result = {}
model = net()
ddp = DDP(model)
zero = ZeroRedundancyOptimizer(ddp.parameters(), optimizer_class=torch.optim.Adam, lr=0.05)
result["local_params"] = len(zero.optim.param_groups[0]["params"])
losses = []
for _ in range(3):
    zero.zero_grad()
    loss = F.mse_loss(ddp(x), y)
    loss.backward()
    zero.step()
    losses.append(round(loss.item(), 6))
result["losses"], result["weights"] = losses, sums(model.parameters())
try:
    zero.state_dict()
except RuntimeError as e:
    result["unconsolidated"] = str(e)
for to in range(world):  # (each rank takes the whole state in turn: consolidating to another rank drops it)
    zero.consolidate_state_dict(to=to)
    if rank == to:
        sd = zero.state_dict()
result["state"] = {str(k): {n: round(float(v.double().sum()), 5) if torch.is_tensor(v) else v for n, v in s.items()}
                   for k, s in sd["state"].items()}
result["groups"] = [{k: v for k, v in g.items() if k in ("lr", "betas", "params")} for g in sd["param_groups"]]
copy = net()
again = ZeroRedundancyOptimizer(copy.parameters(), optimizer_class=torch.optim.Adam, lr=0.05)
again.load_state_dict(sd)
for to in range(world):  # (the loaded shards, gathered again)
    again.consolidate_state_dict(to=to)
    if rank == to:
        reloaded = again.state_dict()
result["reloaded"] = {str(k): {n: round(float(v.double().sum()), 5) if torch.is_tensor(v) else v for n, v in s.items()}
                      for k, s in reloaded["state"].items()}

everyone = [None] * world
dist.all_gather_object(everyone, result)
if rank == 0:
    print(json.dumps({"framework": torch.__name__, "ranks": everyone}))
dist.destroy_process_group()

"""The torch.distributed.checkpoint tutorial's pattern: an AppState(Stateful) holding an FSDP2 model and its
optimizer, saved with dcp.save({"app": AppState(...)}) and loaded into a fresh model with dcp.load, which
calls AppState.load_state_dict; training then resumes. Also a module saved directly as a Stateful value, and
a partial load with DefaultLoadPlanner(allow_partial_load=True), and the sharded checkpoint converted to
one torch.save file by format_utils.dcp_to_torch_save.

Run with `torchrun --nproc-per-node 2 dcp_stateful.py` (real torch, gloo) or
`python -m tidal.comm.launch --nproc-per-node 2 -m tidal.compat dcp_stateful.py` (tidal). Rank 0 prints the
per-step losses summed over ranks.
"""
import numpy as np
import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
import torch.nn as nn
from torch.distributed.checkpoint.default_planner import DefaultLoadPlanner
from torch.distributed.checkpoint.format_utils import dcp_to_torch_save
from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict
from torch.distributed.checkpoint.stateful import Stateful
from torch.distributed.fsdp import fully_shard

from _common import init_params, report


class AppState(Stateful):
    def __init__(self, model, optimizer=None):
        self.model = model
        self.optimizer = optimizer

    def state_dict(self):
        model_state_dict, optimizer_state_dict = get_state_dict(self.model, self.optimizer)
        return {"model": model_state_dict, "optim": optimizer_state_dict}

    def load_state_dict(self, state_dict):
        set_state_dict(self.model, self.optimizer, model_state_dict=state_dict["model"],
                       optim_state_dict=state_dict["optim"])


def toy(seed):
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
    init_params(model, seed=seed)
    fully_shard(model)
    return model


def train(model, optimizer, steps, seed):
    out = []
    rng = np.random.default_rng(seed + rank)
    for _ in range(steps):
        optimizer.zero_grad()
        loss = model(torch.from_numpy(rng.normal(size=(6, 8)).astype(np.float32))).pow(2).mean()
        loss.backward()
        optimizer.step()
        out.append(loss.detach())
    return out


dist.init_process_group("gloo")
rank = dist.get_rank()
model = toy(0)
optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
losses = train(model, optimizer, 3, 10)
dcp.save({"app": AppState(model, optimizer), "step": 3}, checkpoint_id="ckpt")

resumed = toy(1)
optimizer2 = torch.optim.Adam(resumed.parameters(), lr=0.05)
state = {"app": AppState(resumed, optimizer2), "step": 0}
dcp.load(state, checkpoint_id="ckpt")
step = state["step"]
losses += train(resumed, optimizer2, 3, 20)

plain = nn.Linear(8, 4)
init_params(plain, seed=3)
dcp.save({"net": plain}, checkpoint_id="ckpt_module")       # a module is Stateful too
other = nn.Linear(8, 4)
init_params(other, seed=4)
dcp.load({"net": other, "extra": torch.zeros(2)}, checkpoint_id="ckpt_module",
         planner=DefaultLoadPlanner(allow_partial_load=True))   # "extra" is not in the checkpoint
same = bool(torch.equal(other.weight, plain.weight) and torch.equal(other.bias, plain.bias))

total = torch.stack(losses)
dist.all_reduce(total)
dist.barrier()
if rank == 0:
    dcp_to_torch_save("ckpt", "full.pt")
    full = torch.load("full.pt", weights_only=False)
    app = full["app"]
    layout = {k: sorted(v) if isinstance(v, dict) else v for k, v in sorted(full.items()) if k != "app"}
    whole = {name: [list(t.shape), float(t.double().sum())] for name, t in app["model"].items()}
    moments = {f"{k}.{n}": float(v.double().sum()) for k, st in app["optim"]["state"].items() for n, v in st.items()}
    report(total.tolist(), step=step, same=same, layout=layout, whole=whole, moments=moments,
           groups=len(app["optim"]["param_groups"]))
dist.destroy_process_group()

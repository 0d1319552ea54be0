"""Pipeline parallelism (torch.distributed.pipelining): an MLP cut in two by hand (PipelineStage, ScheduleGPipe,
Schedule1F1B) and automatically (pipeline() with a SplitPoint, or pipe_split() in the forward), stage k on rank k,
4 microbatches per step, the loss on the last stage, SGD on each stage's own parameters. Run with `torchrun --nproc-per-node 2 pipeline_stages.py` or under tidal's launcher;
rank 0 prints JSON: every step's microbatch losses and both stages' final weights, for both schedules."""
import json

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed.pipelining import (PipelineStage, Schedule1F1B, ScheduleGPipe, SplitPoint, build_stage,
                                         pipe_split, pipeline)

from _common import init_params

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
rng = np.random.default_rng(3)
x = torch.from_numpy(rng.normal(size=(8, 4)).astype(np.float32))
y = torch.from_numpy(rng.normal(size=(8, 1)).astype(np.float32))


def run(schedule_cls, steps=4):
    full = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 6), nn.Tanh(), nn.Linear(6, 1))
    init_params(full, seed=0)
    part = full[:2] if rank == 0 else full[2:]
    stage = PipelineStage(part, rank, world, torch.device("cpu"))
    schedule = schedule_cls(stage, n_microbatches=4, loss_fn=F.mse_loss)
    opt = torch.optim.SGD(part.parameters(), lr=0.2)
    losses, outs = [], None
    for _ in range(steps):
        opt.zero_grad()
        if rank == 0:
            outs = schedule.step(x)
        else:
            step_losses = []
            outs = schedule.step(target=y, losses=step_losses)
            losses.append([round(float(v), 6) for v in step_losses])
        opt.step()
    weights = [round(float(p.detach().double().sum()), 6) for p in part.parameters()]
    return {"losses": losses, "weights": weights, "out": None if outs is None else [round(float(v), 5) for v in
                                                                                      outs.reshape(-1)]}


class Layers(nn.Module):
    """Cut automatically: by split_spec at layers.1, or by the pipe_split() call in its forward."""

    def __init__(self, marked):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(4, 8), nn.Linear(8, 6), nn.Linear(6, 1)])
        self.marked = marked

    def forward(self, x):
        for k, layer in enumerate(self.layers):
            if self.marked and k == 2:
                pipe_split()
            x = torch.tanh(layer(x))
        return x


def run_auto(marked, steps=3):
    model = Layers(marked)
    init_params(model, seed=0)
    spec = None if marked else {"layers.1": SplitPoint.BEGINNING}
    pipe = pipeline(model, mb_args=(x[:2],), split_spec=spec)
    if marked:  # (the module-level spelling)
        stage = build_stage(pipe.get_stage_module(rank), rank, pipe.info(), torch.device("cpu"))
    else:
        stage = pipe.build_stage(rank, torch.device("cpu"))
    schedule = ScheduleGPipe(stage, n_microbatches=4, loss_fn=F.mse_loss)
    opt = torch.optim.SGD(stage.submod.parameters(), lr=0.2)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        if rank == 0:
            schedule.step(x)
        else:
            step_losses = []
            schedule.step(target=y, losses=step_losses)
            losses.append([round(float(v), 6) for v in step_losses])
        opt.step()
    return {"stages": pipe.num_stages, "children": [n for n, _ in pipe.split_gm.named_children()],
            "params": [n for n, _ in stage.submod.named_parameters()], "losses": losses,
            "weights": [round(float(p.detach().double().sum()), 6) for p in stage.submod.parameters()]}


result = {"gpipe": run(ScheduleGPipe), "1f1b": run(Schedule1F1B), "auto": run_auto(False), "marked": run_auto(True)}
try:
    PipelineStage(nn.Linear(2, 2), world + 3, world, torch.device("cpu"))
except ValueError as e:
    result["bad_index"] = str(e)
everyone = [None] * world
dist.all_gather_object(everyone, result)
if rank == 0:
    print(json.dumps({"framework": torch.__name__, "ranks": everyone}))
dist.destroy_process_group()

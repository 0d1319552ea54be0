"""F.batch_norm of DTensors (input sharded on the batch dim, on a feature dim, or replicated; Replicate weight, bias
and running statistics): values, the input's and weight's gradients, the running statistics after a training step,
and eval mode. Run on 2 ranks with `python -m torch.distributed.run --nproc-per-node 2 dtensor_batch_norm.py` (real
torch, gloo) or `python -m tidal.comm.launch --nproc-per-node 2 -m tidal.compat dtensor_batch_norm.py` (tidal);
rank 0 prints the numbers."""
import json

import numpy as np
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import Replicate, Shard, distribute_tensor

dist.init_process_group("gloo")
mesh = init_device_mesh("cpu", (dist.get_world_size(),))
x0 = torch.from_numpy(np.random.default_rng(0).normal(size=(4, 3, 5)).astype(np.float32))
w0, b0 = torch.linspace(0.5, 1.5, 3), torch.linspace(-0.2, 0.2, 3)


def full(t):
    return t.full_tensor() if hasattr(t, "full_tensor") else t


out = {}
for placement in ([Shard(0)], [Shard(2)], [Replicate()]):
    x = distribute_tensor(x0, mesh, placement).requires_grad_()
    w, b = (distribute_tensor(t, mesh, [Replicate()]).requires_grad_() for t in (w0, b0))
    mean, var = (distribute_tensor(t, mesh, [Replicate()]) for t in (torch.zeros(3), torch.ones(3)))
    y = F.batch_norm(x, mean, var, w, b, training=True, momentum=0.3)
    (full(y) * torch.linspace(-1, 1, 5)).sum().backward()
    evaluated = F.batch_norm(x.detach(), mean, var, w.detach(), b.detach(), training=False)
    out[str(placement)] = [full(y).flatten().tolist(), full(x.grad).flatten().tolist(), full(w.grad).tolist(),
                           full(b.grad).tolist(), full(mean).tolist(), full(var).tolist(),
                           full(evaluated).flatten().tolist(), bool(y.requires_grad)]
if dist.get_rank() == 0:
    print(json.dumps({"framework": torch.__name__, "results": out}))
dist.destroy_process_group()

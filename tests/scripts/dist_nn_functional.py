"""torch.distributed.nn.functional's differentiable collectives on 2 ranks: all_reduce, all_gather (a contrastive
loss over every rank's embeddings), reduce_scatter, broadcast, all_to_all; rank 0 prints each rank's input gradients.
Run with `python -m torch.distributed.run --nproc-per-node 2 dist_nn_functional.py` (real torch, gloo) or
`python -m tidal.comm.launch --nproc-per-node 2 -m tidal.compat dist_nn_functional.py` (tidal)."""
import json

import numpy as np
import torch
import torch.distributed as dist
import torch.distributed.nn.functional as dnn

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
rng = np.random.default_rng(21)
data = [torch.from_numpy(rng.normal(size=(3, 4)).astype(np.float32)) for _ in range(world)]
weights = torch.linspace(-1.0, 1.0, 12).reshape(3, 4)
results = {}


def leaf():
    return data[rank].clone().requires_grad_()


x = leaf()
(dnn.all_reduce(x * 2) * weights).sum().backward()
results["all_reduce"] = x.grad.tolist()

x = leaf()
everyone = torch.cat(dnn.all_gather(x))                      # (world*3, 4)
logits = x @ everyone.T                                     # a contrastive loss against all ranks' rows
loss = torch.nn.functional.cross_entropy(logits, torch.arange(3) + rank * 3)
loss.backward()
results["all_gather"] = x.grad.tolist()
results["loss"] = loss.item()

x = leaf()
pieces = [x * (k + 1) for k in range(world)]
(dnn.reduce_scatter(torch.empty(3, 4), pieces) * weights).sum().backward()
results["reduce_scatter"] = x.grad.tolist()

x = leaf()
(dnn.broadcast(x, 1) * weights * (rank + 1)).sum().backward()
results["broadcast"] = x.grad.tolist()

x = leaf()
received = dnn.all_to_all([torch.empty(3, 2) for _ in range(world)], list(x.split(2, dim=1)))
(torch.cat(received, 1) * weights * (rank + 1)).sum().backward()
results["all_to_all"] = x.grad.tolist()

gathered = [None] * world
dist.all_gather_object(gathered, results)
if rank == 0:
    print(json.dumps({"framework": torch.__name__, "ranks": gathered}))
dist.destroy_process_group()

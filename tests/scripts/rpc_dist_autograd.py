"""Distributed autograd over RPC (the shape of PyTorch's rpc/parameter_server example): worker 0 holds the first
layer; worker 1 calls it inside dist_autograd.context(), applies its own head, runs dist_autograd.backward across
both workers, reads its gradients with get_gradients, and steps a DistributedOptimizer over the parameters of
both. Run with `torchrun --nproc-per-node 2 rpc_dist_autograd.py` or under tidal's launcher; worker 1 prints JSON."""
import json
import os

import numpy as np
import torch
import torch.distributed.autograd as dist_autograd
import torch.distributed.rpc as rpc
import torch.nn as nn
from torch.distributed.optim import DistributedOptimizer

from _common import init_params


class Server:
    def __init__(self):
        self.layer = nn.Linear(4, 3)
        init_params(self.layer, seed=0)

    def forward(self, x):
        return self.layer(x)


def server_forward(rref, x):
    return rref.local_value().forward(x)


def parameter_rrefs(rref):
    return [rpc.RRef(p) for p in rref.local_value().layer.parameters()]


def server_weights(rref):
    return [p.detach().clone() for p in rref.local_value().layer.parameters()]


class Shard:
    """One stage of an RRef pipeline (the shape of PyTorch's rpc/pipeline example): its input arrives as an RRef."""

    def __init__(self, n_in, n_out, seed):
        self.layer = nn.Linear(n_in, n_out)
        init_params(self.layer, seed=seed)

    def forward(self, x_rref):
        return torch.tanh(self.layer(x_rref.to_here()))

    def parameter_rrefs(self):
        return [rpc.RRef(p) for p in self.layer.parameters()]


def shard_forward(shard_rref, x_rref):
    return shard_rref.local_value().forward(x_rref)


def shard_params(shard_rref):
    return shard_rref.local_value().parameter_rrefs()


def shard_weights(shard_rref):
    return [round(float(p.detach().sum()), 6) for p in shard_rref.local_value().layer.parameters()]


rank = int(os.environ["RANK"])
rpc.init_rpc(f"worker{rank}", rank=rank, world_size=2)
if rank == 1:
    server = rpc.remote("worker0", Server)
    head = nn.Linear(3, 1)
    init_params(head, seed=1)
    rng = np.random.default_rng(2)
    x = torch.from_numpy(rng.normal(size=(8, 4)).astype(np.float32)).requires_grad_()
    y = torch.from_numpy(rng.normal(size=(8, 1)).astype(np.float32))
    params = rpc.rpc_sync("worker0", parameter_rrefs, args=(server,)) + [rpc.RRef(p) for p in head.parameters()]
    opt = DistributedOptimizer(torch.optim.SGD, params, lr=0.2, momentum=0.5)
    losses, local = [], []
    for step in range(5):
        with dist_autograd.context() as ctx:
            h = rpc.rpc_sync("worker0", server_forward, args=(server, x))
            loss = ((head(h.tanh()) - y) ** 2).mean()
            dist_autograd.backward(ctx, [loss])
            grads = dist_autograd.get_gradients(ctx)
            local.append([len(grads), round(float(grads[x].sum()), 6), round(float(grads[head.weight].sum()), 6),
                          x.grad is None and head.weight.grad is None])
            opt.step(ctx)
        losses.append(round(loss.item(), 6))
    weights = [round(float(w.sum()), 6) for w in rpc.rpc_sync("worker0", server_weights, args=(server,))]
    weights += [round(float(p.detach().sum()), 6) for p in head.parameters()]
    # an RRef pipeline: worker 1's input -> shard on worker 0 -> shard on worker 1, outputs passed as RRefs
    first, second = rpc.remote("worker0", Shard, args=(4, 5, 3)), rpc.remote("worker1", Shard, args=(5, 1, 4))
    params = rpc.rpc_sync("worker0", shard_params, args=(first,)) + rpc.rpc_sync("worker1", shard_params,
                                                                                  args=(second,))
    opt = DistributedOptimizer(torch.optim.SGD, params, lr=0.3)
    pipeline_losses = []
    for step in range(4):
        with dist_autograd.context() as ctx:
            h = rpc.remote("worker0", shard_forward, args=(first, rpc.RRef(x.detach())))
            out = rpc.remote("worker1", shard_forward, args=(second, h)).to_here()
            loss = ((out - y) ** 2).mean()
            dist_autograd.backward(ctx, [loss])
            opt.step(ctx)
        pipeline_losses.append(round(loss.item(), 6))
    pipeline_weights = rpc.rpc_sync("worker0", shard_weights, args=(first,)) + shard_weights(second)
    print(json.dumps({"framework": torch.__name__, "losses": losses, "local": local, "weights": weights,
                      "pipeline_losses": pipeline_losses, "pipeline_weights": pipeline_weights}))
rpc.shutdown()

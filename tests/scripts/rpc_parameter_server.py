"""A parameter server over RPC (the shape of PyTorch's rpc/parameter_server example, without distributed autograd):
worker 0 owns the model and its optimizer; worker 1 fetches the weights through an RRef's method, computes the loss
and gradients locally and sends them back with rpc_sync; the server applies SGD steps. Run with `torchrun
--nproc-per-node 2 rpc_parameter_server.py` or under tidal's launcher. Worker 1 prints JSON."""
import json
import os

import numpy as np
import torch
import torch.distributed.rpc as rpc
import torch.nn as nn


class ParameterServer:
    def __init__(self):
        self.model = nn.Linear(4, 1)
        rng = np.random.default_rng(0)
        with torch.no_grad():
            self.model.weight.copy_(torch.from_numpy(rng.normal(size=(1, 4)).astype(np.float32)))
            self.model.bias.zero_()
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1, momentum=0.5)

    def weights(self):
        return [p.detach().clone() for p in self.model.parameters()]

    def apply(self, grads):
        for p, g in zip(self.model.parameters(), grads):
            p.grad = g
        self.opt.step()
        self.opt.zero_grad()
        return True


rank = int(os.environ["RANK"])
rpc.init_rpc(f"worker{rank}", rank=rank, world_size=2)
if rank == 1:
    ps = rpc.remote("worker0", ParameterServer)
    rng = np.random.default_rng(1)
    x = torch.from_numpy(rng.normal(size=(16, 4)).astype(np.float32))
    y = x @ torch.tensor([[1.0], [-2.0], [0.5], [3.0]]) + 0.25
    losses = []
    for step in range(12):
        w, b = [t.requires_grad_() for t in ps.rpc_sync().weights()]
        loss = ((x @ w.t() + b - y) ** 2).mean()
        loss.backward()
        ps.rpc_sync().apply([w.grad, b.grad])
        losses.append(loss.item())
    final = torch.cat([t.reshape(-1) for t in ps.rpc_sync().weights()]).tolist()
    print(json.dumps({"framework": torch.__name__, "losses": losses, "weights": final}))
rpc.shutdown()

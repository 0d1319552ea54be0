"""Differentially private SGD on a small regression MLP: per-sample gradients with torch.func
(vmap(grad(functional_call))), each clipped to a norm bound, averaged and applied by hand; then the same
MLP's deeper twin trained with activation checkpointing (utils.checkpoint on one block,
checkpoint_sequential on the rest, use_reentrant=False). Prints both loss curves and the first batch's
per-sample gradient norms."""
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.func import functional_call, grad, vmap
from torch.utils.checkpoint import checkpoint, checkpoint_sequential

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import init_params, report  # noqa: E402

STEPS, BATCH, CLIP, LR = 12, 16, 1.0, 0.1
rng = np.random.default_rng(0)
X = rng.normal(size=(STEPS * BATCH, 6)).astype(np.float32)
Y = (np.sin(X[:, :1]) + 0.5 * X[:, 1:2] * X[:, 2:3]).astype(np.float32)


def batches():
    for step in range(STEPS):
        rows = slice(step * BATCH, (step + 1) * BATCH)
        yield torch.from_numpy(X[rows]), torch.from_numpy(Y[rows])


# -- per-sample gradients (DP-SGD) ------------------------------------------------------------------------
model = nn.Sequential(nn.Linear(6, 32), nn.Tanh(), nn.Linear(32, 1))
init_params(model, seed=1)
params = {name: p.detach() for name, p in model.named_parameters()}


def sample_loss(params, x, y):
    out = functional_call(model, params, (x.unsqueeze(0),))
    return F.mse_loss(out, y.unsqueeze(0))


per_sample_grads = vmap(grad(sample_loss), in_dims=(None, 0, 0))
dp_losses, first_norms = [], None
for x, y in batches():
    dp_losses.append(functional_call(model, params, (x,)).sub(y).pow(2).mean().item())
    grads = per_sample_grads(params, x, y)
    norms = torch.sqrt(sum(g.flatten(1).pow(2).sum(1) for g in grads.values()))
    if first_norms is None:
        first_norms = norms.tolist()
    scale = (CLIP / (norms + 1e-6)).clamp(max=1.0)
    params = {name: p - LR * (grads[name] * scale.view(-1, *([1] * (grads[name].dim() - 1)))).mean(0)
              for name, p in params.items()}


# -- activation checkpointing --------------------------------------------------------------------------------
class Deep(nn.Module):
    def __init__(self):
        super().__init__()
        self.inp = nn.Linear(6, 24)
        self.block = nn.Sequential(nn.Linear(24, 24), nn.GELU(), nn.LayerNorm(24))
        self.rest = nn.Sequential(*[nn.Sequential(nn.Linear(24, 24), nn.Tanh()) for _ in range(4)])
        self.out = nn.Linear(24, 1)

    def forward(self, x):
        h = torch.relu(self.inp(x))
        h = checkpoint(self.block, h, use_reentrant=False)
        h = checkpoint_sequential(self.rest, 2, h, use_reentrant=False)
        return self.out(h)


deep = Deep()
init_params(deep, seed=2)
opt = torch.optim.Adam(deep.parameters(), lr=3e-3)
ckpt_losses = []
for _ in range(2):
    for x, y in batches():
        loss = F.mse_loss(deep(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        ckpt_losses.append(loss.item())

report(dp_losses + ckpt_losses, first_norms=first_norms)

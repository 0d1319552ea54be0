"""End to end: small models trained on synthetic data follow PyTorch's loss curve step by step."""
import numpy as np
import pytest
import torch

import tidal
from tidal import nn


def copy_weights(ours, theirs):
    ours.load_state_dict({k: tidal.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()})


def mlp(lib):
    return lib.nn.Sequential(lib.nn.Linear(20, 64), lib.nn.ReLU(), lib.nn.Linear(64, 64), lib.nn.GELU(),
                             lib.nn.Linear(64, 5))


def cnn(lib):
    return lib.nn.Sequential(
        lib.nn.Conv2d(1, 8, 3, padding=1), lib.nn.BatchNorm2d(8), lib.nn.ReLU(), lib.nn.MaxPool2d(2),
        lib.nn.Conv2d(8, 16, 3), lib.nn.ReLU(), lib.nn.AdaptiveAvgPool2d(2), lib.nn.Flatten(),
        lib.nn.Dropout(0.0), lib.nn.Linear(64, 10))


def train(model, opt, sched, x, y, lib, steps):
    losses = []
    loss_fn = lib.nn.CrossEntropyLoss(label_smoothing=0.05)
    for _ in range(steps):
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        lib.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        opt.step()
        sched.step()
        losses.append(loss.item())
    return np.array(losses)


@pytest.mark.parametrize("arch,opt_name,steps", [("mlp", "SGD", 25), ("mlp", "AdamW", 25), ("cnn", "Adam", 12)])
def test_training_follows_torch(arch, opt_name, steps):
    rng = np.random.default_rng(0)
    torch.manual_seed(0)
    theirs = (mlp if arch == "mlp" else cnn)(torch)
    ours = (mlp if arch == "mlp" else cnn)(tidal)
    copy_weights(ours, theirs)
    shape = (64, 20) if arch == "mlp" else (32, 1, 12, 12)
    xn = rng.standard_normal(shape).astype(np.float32)
    yn = rng.integers(0, 5 if arch == "mlp" else 10, size=shape[0])
    kwargs = dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=1e-4) if opt_name == "SGD" else \
        dict(lr=3e-3, weight_decay=0.01)
    t_opt = getattr(torch.optim, opt_name)(theirs.parameters(), **kwargs)
    o_opt = getattr(tidal.optim, opt_name)(ours.parameters(), **kwargs)
    t_sched = torch.optim.lr_scheduler.CosineAnnealingLR(t_opt, T_max=steps)
    o_sched = tidal.optim.lr_scheduler.CosineAnnealingLR(o_opt, T_max=steps)
    t_losses = train(theirs, t_opt, t_sched, torch.tensor(xn), torch.tensor(yn), torch, steps)
    o_losses = train(ours, o_opt, o_sched, tidal.tensor(xn), tidal.tensor(yn), tidal, steps)
    np.testing.assert_allclose(o_losses, t_losses, rtol=2e-3, atol=2e-4)
    assert o_losses[-1] < o_losses[0] * 0.95  # it learns
    for (name, p), (_, tp) in zip(ours.named_parameters(), theirs.named_parameters()):
        np.testing.assert_allclose(p.detach().numpy(), tp.detach().numpy(), rtol=5e-3, atol=5e-4, err_msg=name)
    if arch == "cnn":
        np.testing.assert_allclose(ours[1].running_mean.numpy(), theirs[1].running_mean.numpy(), rtol=1e-3,
                                   atol=1e-5)

"""tidal.utils.checkpoint and tidal.nn.utils.{parametrize, parametrizations, weight_norm, spectral_norm, prune}
against torch: values, gradients, state-dict keys, and the memory checkpointing saves."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import tidal
import tidal.nn as nn
from tidal.utils.checkpoint import checkpoint, checkpoint_sequential
from nn_helpers import assert_close, load_from_torch, to_tidal


def mlp(lib, width: int, depth: int, dropout: float = 0.0):
    layers = []
    for _ in range(depth):
        layers += [lib.nn.Linear(width, width), lib.nn.Tanh()]
        if dropout:
            layers.append(lib.nn.Dropout(dropout))
    return lib.nn.Sequential(*layers)


# -- checkpoint ----------------------------------------------------------------------------------
@pytest.mark.parametrize("use_reentrant", [False, True])
def test_checkpoint_gradients_match_torch(use_reentrant):
    rng = np.random.default_rng(0)
    ref = mlp(torch, 6, 2).double()
    ours = mlp(tidal, 6, 2).double()
    load_from_torch(ours, ref)
    data = rng.standard_normal((5, 6))
    x, xr = tidal.tensor(data, requires_grad=True), torch.tensor(data, requires_grad=True)
    y = checkpoint(lambda a, s: ours(a) * s, x, 2.0, use_reentrant=use_reentrant)
    yr = torch.utils.checkpoint.checkpoint(lambda a, s: ref(a) * s, xr, 2.0, use_reentrant=use_reentrant)
    assert type(y.grad_fn).__name__ == "CheckpointFunctionBackward0"
    assert_close(y, yr)
    (y ** 2).sum().backward()
    (yr ** 2).sum().backward()
    assert_close(x.grad, xr.grad)
    for (name, p), q in zip(ours.named_parameters(), ref.parameters()):
        assert_close(p.grad, q.grad)


def test_checkpoint_captured_parameters_reach_autograd_grad_and_double_backward():
    rng = np.random.default_rng(1)
    w = tidal.tensor(rng.standard_normal((3, 3)), requires_grad=True)
    x = tidal.tensor(rng.standard_normal((2, 3)), requires_grad=True)
    fn = lambda a: tidal.sin(a @ w)  # noqa: E731 - w is captured, not an argument
    gx, gw = tidal.autograd.grad(checkpoint(fn, x, use_reentrant=False).sum(), (x, w), create_graph=True)
    ex, ew = tidal.autograd.grad(fn(x).sum(), (x, w), create_graph=True)
    assert_close(gx, ex)
    assert_close(gw, ew)
    (second,) = tidal.autograd.grad(gx.sum(), w)
    (expected,) = tidal.autograd.grad(ex.sum(), w)
    assert_close(second, expected)


def test_checkpoint_recomputes_with_the_same_dropout_mask():
    model = mlp(tidal, 8, 3, dropout=0.5)
    x = tidal.randn(4, 8, requires_grad=True)
    tidal.manual_seed(3)
    y = checkpoint(model, x, use_reentrant=False)
    y.sum().backward()
    got = [p.grad.numpy().copy() for p in model.parameters()] + [x.grad.numpy().copy()]
    model.zero_grad()
    x.grad = None
    tidal.manual_seed(3)
    y2 = model(x)
    y2.sum().backward()
    want = [p.grad.numpy() for p in model.parameters()] + [x.grad.numpy()]
    np.testing.assert_array_equal(y.detach().numpy(), y2.detach().numpy())
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


def test_checkpoint_tuple_outputs_and_no_grad_passthrough():
    x = tidal.randn(3, requires_grad=True)
    a, b, n = checkpoint(lambda t: (t * 2, t.exp(), 7), x, use_reentrant=False)
    assert n == 7
    (a.sum() + b.sum()).backward()
    assert_close(x.grad, torch.from_numpy(2 + np.exp(x.detach().numpy())))
    with tidal.no_grad():
        out = checkpoint(lambda t: t * 2, x, use_reentrant=False)
    assert out.grad_fn is None
    with pytest.raises(ValueError, match="Unexpected keyword arguments: flag"):
        checkpoint(lambda t, flag: t, x, use_reentrant=True, flag=1)


def test_checkpoint_sequential_matches_torch_and_lowers_peak_memory():
    rng = np.random.default_rng(2)
    ref = mlp(torch, 32, 16)  # activations (1024 x 32) dominate the weights (32 x 32)
    ours = mlp(tidal, 32, 16)
    load_from_torch(ours, ref)
    data = rng.standard_normal((1024, 32)).astype(np.float32)

    def peak(run) -> tuple:
        ours.zero_grad()
        x = tidal.tensor(data, requires_grad=True)
        tidal.sync()
        tidal.vm.reset_stats()
        run(x).sum().backward()
        tidal.sync()
        return tidal.vm.memory_stats()["peak_bytes"], x.grad, [p.grad for p in ours.parameters()]

    mode = tidal.vm.get_mode()
    tidal.vm.set_mode("sync")  # each release lands at once, so the peak is the program's, not the queue's
    try:
        plain, gx_plain, gp_plain = peak(ours)
        ckpt, gx, gp = peak(lambda x: checkpoint_sequential(ours, 4, x, use_reentrant=False))
    finally:
        tidal.vm.set_mode(mode)
    xr = torch.tensor(data, requires_grad=True)
    torch.utils.checkpoint.checkpoint_sequential(ref, 4, xr, use_reentrant=False).sum().backward()
    assert_close(gx, xr.grad, rtol=1e-4, atol=1e-5)
    for p, q, r in zip(gp, ref.parameters(), gp_plain):
        assert_close(p, q.grad, rtol=1e-4, atol=1e-5)
        assert_close(p, r, rtol=1e-5, atol=1e-6)
    activation = 1024 * 32 * 4  # plain keeps 16 of them for backward, 4 segments about 9 at the peak
    assert ckpt < plain - 4 * activation, (ckpt, plain)

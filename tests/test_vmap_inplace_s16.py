"""vmap runs the function once per batch element (no batching rules yet), so an in-place write to a tensor it
does not map over would happen once per element: BatchNorm's running stats updated B times where torch refuses,
a counter bumped B times where torch bumps it once. tidal now refuses both with a clear RuntimeError; values of
writes to mapped inputs and of functions that write nothing shared stay those of torch."""
import numpy as np
import pytest
import torch

import tidal
from tidal import nn
from tidal.func import functional_call, grad, vmap

MESSAGE = "wrote in place to a tensor it does not map over"


def _bn_per_sample_grads(lib, func):
    lib.manual_seed(0)
    model = lib.nn.Sequential(lib.nn.Linear(4, 6), lib.nn.BatchNorm1d(6), lib.nn.ReLU(), lib.nn.Linear(6, 2))
    params = {k: v.detach() for k, v in model.named_parameters()}
    buffers = {k: v.detach() for k, v in model.named_buffers()}

    def loss(p, b, x, y):
        out = func.functional_call(model, (p, b), (x.unsqueeze(0).expand(2, 4),))
        return lib.nn.functional.cross_entropy(out, y.unsqueeze(0).expand(2))
    x, y = lib.randn(5, 4), lib.randint(2, (5,))
    return func.vmap(func.grad(loss), in_dims=(None, None, 0, 0))(params, buffers, x, y), model


def test_batch_norm_running_stats_in_vmap_refused_as_torch():
    with pytest.raises(RuntimeError, match="Batch norm got a batched tensor as input while the running_mean"):
        _bn_per_sample_grads(torch, torch.func)
    import tidal.func as tf
    with pytest.raises(RuntimeError, match=MESSAGE):
        _bn_per_sample_grads(tidal, tf)
    model = nn.BatchNorm1d(3)
    with pytest.raises(RuntimeError, match=r"vmap\(BatchNorm1d\(3, .*\), ...\): the function " + MESSAGE):
        vmap(model)(tidal.randn(4, 2, 3))
    model = nn.BatchNorm1d(3).eval()   # eval mode writes nothing: fine, as torch
    ref = torch.nn.BatchNorm1d(3).eval()
    x = np.random.default_rng(0).standard_normal((4, 2, 3)).astype(np.float32)
    np.testing.assert_allclose(vmap(model)(tidal.tensor(x)).detach().numpy(),
                               torch.func.vmap(ref)(torch.tensor(x)).detach().numpy(), rtol=1e-6)


def test_writes_to_unmapped_inputs_and_captures_refused():
    count = tidal.zeros(())

    def bump(a, c):
        c.add_(1)
        return a * 2
    with pytest.raises(RuntimeError, match=MESSAGE):
        vmap(bump, in_dims=(0, None))(tidal.randn(3), count)
    buf = tidal.zeros(2)
    with pytest.raises(RuntimeError, match=MESSAGE):
        vmap(lambda a: buf.add_(a))(tidal.randn(3, 2))


def test_writes_to_mapped_inputs_and_fresh_tensors_as_torch():
    data = np.random.default_rng(1).standard_normal((3, 4)).astype(np.float32)

    def f(lib):
        def g(a, w):
            t = a * w
            t.add_(1)
            a.mul_(2)
            return t + a
        x = lib.tensor(data)
        return lib.func.vmap(g, in_dims=(0, None))(x, lib.ones(4)), x
    (got, x_ours), (want, x_theirs) = f(tidal), f(torch)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
    np.testing.assert_allclose(x_ours.numpy(), x_theirs.numpy(), rtol=1e-6)   # the mapped input written per row


def test_per_sample_grads_with_shared_parameters_still_as_torch():
    lin = nn.Linear(3, 2)
    params = {k: v.detach() for k, v in lin.named_parameters()}
    x = tidal.randn(4, 3)
    g = vmap(grad(lambda p, s: functional_call(lin, p, (s,)).pow(2).sum()), in_dims=(None, 0))(params, x)
    for i in range(4):
        w = params["weight"].numpy()
        b = params["bias"].numpy()
        out = w @ x.numpy()[i] + b
        np.testing.assert_allclose(g["weight"].numpy()[i], np.outer(2 * out, x.numpy()[i]), rtol=1e-5, atol=1e-6)

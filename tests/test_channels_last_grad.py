"""A leaf's .grad laid out as the leaf (torch's AccumulateGrad layout contract): a non-overlapping and dense
leaf (channels_last, transposed) gets its own strides, any other leaf a row-major gradient; torch.autograd.grad
returns gradients as computed. Compared with torch: strides, values, the create_graph copy, optimizer steps."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import tidal
import tidal.compat as tc
from nn_helpers import assert_close



def _leaves(lib, arr):
    """Leaves of several layouts made from the same values: channels_last, transposed, sliced, expanded."""
    t = lib.tensor(arr)
    return {
        "channels_last": t.to(memory_format=lib.channels_last).requires_grad_(),
        "transposed": t.reshape(6, 20).t().requires_grad_(),
        "sliced": t.reshape(12, 10)[:, ::2].requires_grad_(),
        "expanded": t.reshape(120, 1)[:3].expand(3, 4).requires_grad_(),
        "contiguous": t.clone().requires_grad_(),
    }


def _programs(lib, kind, x):
    """Losses through a convolution, an elementwise op, a reduction and a contiguous copy."""
    if kind == "conv":
        if x.dim() != 4:
            return None
        w = lib.tensor(np.linspace(-1, 1, 4 * 3 * 9, dtype=np.float32).reshape(4, 3, 3, 3))
        return lib.nn.functional.conv2d(x, w).square().sum()
    if kind == "mul":
        return (x * x * 2).sum()
    if kind == "sum":
        return x.sum()
    return (x.contiguous() * 3).sum()


_ARR = np.random.default_rng(0).standard_normal((2, 3, 4, 5)).astype(np.float32)


def _grads(kinds):
    out = []
    for lib in (torch, tc):
        leaves = _leaves(lib, _ARR)
        row = {}
        for name, leaf in leaves.items():
            for kind in kinds:
                loss = _programs(lib, kind, leaf)
                if loss is None:
                    continue
                leaf.grad = None
                loss.backward()
                row[(name, kind)] = (tuple(leaf.grad.stride()), leaf.grad)
        out.append(row)
    return out


@pytest.mark.parametrize("kind", ["conv", "mul", "sum", "contiguous"])
def test_dense_leaf_grad_takes_the_leaf_strides(kind):
    want, got = _grads([kind])
    assert got.keys() == want.keys()
    for key in want:
        assert got[key][0] == want[key][0], key
        assert_close(got[key][1], want[key][1], rtol=1e-5, atol=1e-5)
    x = tc.tensor(_ARR).to(memory_format=tc.channels_last).requires_grad_()
    if kind == "conv":
        _programs(tc, kind, x).backward()
        assert x.grad.is_contiguous(memory_format=tc.channels_last) and not x.grad.is_contiguous()


def test_non_dense_leaf_grad_is_row_major_and_autograd_grad_as_computed():
    want, got = _grads(["mul"])
    for key in (("sliced", "mul"), ("expanded", "mul"), ("contiguous", "mul")):
        assert got[key][0] == want[key][0]
        assert_close(got[key][1], want[key][1], rtol=1e-5, atol=1e-5)
    for lib in (torch, tc):  # autograd.grad is not bound by the contract: the computed gradient's layout
        x = lib.tensor(_ARR).to(memory_format=lib.channels_last).requires_grad_()
        (g,) = lib.autograd.grad((x * 2).sum(), x)
        assert tuple(g.stride()) == (60, 20, 5, 1)


def test_accumulation_keeps_the_layout_and_create_graph_copies():
    results = []
    for lib in (torch, tc):
        x = lib.tensor(_ARR).to(memory_format=lib.channels_last).requires_grad_()
        (x * 2).sum().backward()
        (x.contiguous() * x).sum().backward()  # accumulated in place into the channels_last grad
        first = (tuple(x.grad.stride()), x.grad.detach().clone())
        y = lib.tensor(_ARR).to(memory_format=lib.channels_last).requires_grad_()
        (y * y * y).sum().backward(create_graph=True)
        g = y.grad
        assert type(g.grad_fn).__name__ == "CopyBackwards"
        (gy,) = lib.autograd.grad(g.sum(), y)  # d/dy sum(3 y^2) through the copy
        results.append((first, tuple(g.stride()), gy.detach()))
    (s0, v0), g0, gy0 = results[0]
    (s1, v1), g1, gy1 = results[1]
    assert s1 == s0 == (60, 1, 15, 3) and g1 == g0 == (60, 1, 15, 3)
    assert_close(v1, v0, rtol=1e-5, atol=1e-5)
    assert_close(gy1, gy0, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("opt", ["SGD", "Adam"])
def test_channels_last_parameter_trains_as_torch(opt):
    params, losses = [], []
    for lib in (torch, tc):
        conv = lib.nn.Conv2d(3, 4, 3)
        with lib.no_grad():
            conv.weight.copy_(lib.tensor(np.linspace(-0.5, 0.5, 108, dtype=np.float32).reshape(4, 3, 3, 3)))
            conv.bias.zero_()
        conv = conv.to(memory_format=lib.channels_last)
        kwargs = {"lr": 0.1, "momentum": 0.9} if opt == "SGD" else {"lr": 0.05}
        optimizer = getattr(lib.optim, opt)(conv.parameters(), **kwargs)
        x = lib.tensor(_ARR).to(memory_format=lib.channels_last)
        for _ in range(3):
            optimizer.zero_grad()
            loss = conv(x).square().mean()
            loss.backward()
            optimizer.step()
            losses.append(float(loss.detach()))
        params.append(conv.weight.detach())
    assert_close(params[1], params[0], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(losses[3:], losses[:3], rtol=1e-4)
    assert tidal.Tensor.is_contiguous(params[1], memory_format=tc.channels_last)

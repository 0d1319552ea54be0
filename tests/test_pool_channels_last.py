"""Pools of channels_last(_3d) inputs against torch: the layout of results, indices and gradients (strides and
is_contiguous in each format), values, grad_fn names and second derivatives. torch's CPU kernels keep the layout
the input suggests for max_pool2d/3d, avg_pool2d and the 2-d adaptive pools; avg_pool3d and the other 3-d adaptive
pools give row-major results; an adaptive average to one element is a mean made channels_last by as_strided_."""
import numpy as np
import pytest
import torch

import tidal.compat as tc

RNG = np.random.default_rng(1313)
FORMATS = ("contiguous_format", "channels_last", "channels_last_3d")

POOLS_2D = {
    "max_pool2d": lambda F, x: F.max_pool2d(x, 2),
    "max_pool2d_indices": lambda F, x: F.max_pool2d(x, 3, 2, 1, return_indices=True),
    "max_pool2d_dilated_ceil": lambda F, x: F.max_pool2d(x, 2, 1, 0, 2, True),
    "max_pool2d_1x2": lambda F, x: F.max_pool2d(x, (1, 2)),
    "avg_pool2d": lambda F, x: F.avg_pool2d(x, 2),
    "avg_pool2d_padded_ceil": lambda F, x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False),
    "avg_pool2d_divisor": lambda F, x: F.avg_pool2d(x, 3, 2, 1, divisor_override=2),
    "adaptive_avg_pool2d": lambda F, x: F.adaptive_avg_pool2d(x, (3, 4)),
    "adaptive_avg_pool2d_none": lambda F, x: F.adaptive_avg_pool2d(x, (None, 2)),
    "adaptive_avg_pool2d_to_1": lambda F, x: F.adaptive_avg_pool2d(x, 1),
    "adaptive_max_pool2d": lambda F, x: F.adaptive_max_pool2d(x, (3, 4), return_indices=True),
    "module_max_pool": lambda F, x: tc.nn.MaxPool2d(2)(x) if F is tc.nn.functional else torch.nn.MaxPool2d(2)(x),
    "module_adaptive_avg": lambda F, x: (tc if F is tc.nn.functional else torch).nn.AdaptiveAvgPool2d(1)(x),
}
POOLS_3D = {
    "max_pool3d": lambda F, x: F.max_pool3d(x, 2, return_indices=True),
    "avg_pool3d": lambda F, x: F.avg_pool3d(x, 2),
    "adaptive_avg_pool3d": lambda F, x: F.adaptive_avg_pool3d(x, (2, 3, 3)),
    "adaptive_avg_pool3d_to_1": lambda F, x: F.adaptive_avg_pool3d(x, 1),
    "adaptive_max_pool3d": lambda F, x: F.adaptive_max_pool3d(x, 2, return_indices=True),
}
POOLS_1D = {  # torch runs these as 2-d pools of the (N, C, 1, L) view: channels-innermost inputs stay so
    "max_pool1d": lambda F, x: F.max_pool1d(x, 2),  # (its own kernel, row-major, when no indices are needed)
    "max_pool1d_indices": lambda F, x: F.max_pool1d(x, 3, 2, 1, return_indices=True),
    "avg_pool1d": lambda F, x: F.avg_pool1d(x, 3, 2, 1, ceil_mode=True),
    "adaptive_avg_pool1d": lambda F, x: F.adaptive_avg_pool1d(x, 2),
    "adaptive_avg_pool1d_to_1": lambda F, x: F.adaptive_avg_pool1d(x, 1),
    "adaptive_max_pool1d": lambda F, x: F.adaptive_max_pool1d(x, 3, return_indices=True),
}

# (shape, how the input is laid out): channels_last dense and sliced, with size-1 dims, and inputs that are not
LAYOUTS_2D = [((2, 3, 6, 7), "channels_last"), ((1, 3, 6, 7), "channels_last"), ((2, 1, 6, 7), "channels_last"),
              ((2, 3, 2, 7), "channels_last"), ((2, 3, 6, 7), "sliced"), ((2, 3, 6, 7), "contiguous"),
              ((2, 3, 6, 7), "permuted"), ((3, 6, 7), "contiguous")]
LAYOUTS_3D = [((2, 3, 4, 6, 5), "channels_last_3d"), ((2, 3, 4, 6, 5), "contiguous"), ((3, 4, 6, 5), "channels_last")]
LAYOUTS_1D = [((2, 3, 5), "permuted"), ((1, 3, 5), "permuted"), ((2, 1, 5), "permuted"), ((2, 3, 5), "contiguous"),
              ((3, 5), "permuted")]


def _inputs(shape: tuple, how: str, grad: bool = False) -> tuple:
    """The same values as a tidal and a torch tensor, laid out as `how` says."""
    a = RNG.standard_normal(shape).astype("float32")
    out = []
    for L in (tc, torch):
        x = L.tensor(a)
        if how in ("channels_last", "channels_last_3d"):
            x = x.contiguous(memory_format=getattr(L, how))
        elif how == "sliced":  # channels_last, then every other column: still suggests channels_last, not dense
            x = L.tensor(np.repeat(a, 2, axis=-1)).contiguous(memory_format=L.channels_last)[..., ::2]
        elif how == "permuted":
            x = L.tensor(np.array(np.swapaxes(a, -1, -2))).transpose(-1, -2)  # (a fresh copy: canonical strides)
        out.append(x.requires_grad_() if grad else x)
    return tuple(out)


def _same(ours, ref) -> None:
    """Same shape, strides, contiguity in each format and values (or indices)."""
    assert tuple(ours.shape) == tuple(ref.shape)
    assert ours.stride() == ref.stride()
    for f in FORMATS:
        assert ours.is_contiguous(memory_format=getattr(tc, f)) == ref.is_contiguous(memory_format=getattr(torch, f))
    np.testing.assert_allclose(ours.detach().numpy(), ref.detach().numpy(), rtol=1e-5, atol=1e-6)


def _each(result) -> tuple:
    return result if isinstance(result, tuple) else (result,)


def _outcome(fn) -> tuple:
    """The results, or the error's type and message."""
    try:
        return _each(fn())
    except Exception as e:  # noqa: BLE001 (compared with torch's)
        return type(e).__name__, str(e)


@pytest.mark.parametrize("op,pools,layouts", [(op, POOLS_2D, LAYOUTS_2D) for op in sorted(POOLS_2D)] +
                         [(op, POOLS_3D, LAYOUTS_3D) for op in sorted(POOLS_3D)] +
                         [(op, POOLS_1D, LAYOUTS_1D) for op in sorted(POOLS_1D)])
def test_pool_result_layouts(op, pools, layouts):
    for shape, how in layouts:
        if op.startswith("module_") and len(shape) != 4:
            continue
        x, t = _inputs(shape, how)
        got = _outcome(lambda: pools[op](tc.nn.functional, x))
        want = _outcome(lambda: pools[op](torch.nn.functional, t))
        assert len(got) == len(want)
        if isinstance(want[0], str):
            assert got == want
            continue
        for g, w in zip(got, want):
            _same(g, w)


@pytest.mark.parametrize("op,pools,how", [(op, POOLS_2D, "channels_last") for op in sorted(POOLS_2D)] +
                         [(op, POOLS_3D, "channels_last_3d") for op in sorted(POOLS_3D)] +
                         [(op, POOLS_1D, "permuted") for op in sorted(POOLS_1D)])
def test_pool_gradients_of_channels_last_inputs(op, pools, how):
    """The gradient an op's backward gives its (channels_last) input, and the leaf's accumulated gradient values
    (tidal does not yet re-lay a leaf's gradient out as its leaf, as torch's AccumulateGrad does)."""
    shape = {"channels_last": (2, 3, 6, 7), "channels_last_3d": (2, 3, 4, 6, 5), "permuted": (2, 3, 5)}[how]
    a = RNG.standard_normal(shape).astype("float32")
    results = []
    for L in (tc, torch):
        leaf = L.tensor(a, requires_grad=True)
        x = leaf.transpose(1, 2).contiguous().transpose(1, 2) if how == "permuted" else \
            leaf.contiguous(memory_format=getattr(L, how))
        y = _each(pools[op](L.nn.functional, x))[0]
        g = L.tensor(np.random.default_rng(5).standard_normal(tuple(y.shape)).astype("float32"))
        (gx,) = L.autograd.grad(y, x, g, retain_graph=True)
        y.backward(g)
        results.append((type(y.grad_fn).__name__, gx, leaf.grad))
    (name, gx, grad), (tname, tgx, tgrad) = results
    assert name == tname
    _same(gx, tgx)
    np.testing.assert_allclose(grad.numpy(), tgrad.numpy(), rtol=1e-5, atol=1e-6)


def test_second_derivatives_through_channels_last_pools():
    for op in ("max_pool2d_indices", "avg_pool2d_padded_ceil", "adaptive_avg_pool2d", "adaptive_max_pool2d"):
        x, t = _inputs((2, 3, 6, 7), "channels_last", grad=True)
        results = []
        for L, v in ((tc, x), (torch, t)):
            y = _each(POOLS_2D[op](L.nn.functional, v))[0]
            (g,) = L.autograd.grad((y * y).sum(), v, create_graph=True)
            (gg,) = L.autograd.grad((g * g.detach()).sum(), v)
            results.append((y, g, gg))
        for ours, ref in zip(*results):
            np.testing.assert_allclose(ours.detach().numpy(), ref.detach().numpy(), rtol=1e-4, atol=1e-5)
        assert results[0][0].stride() == results[1][0].stride()

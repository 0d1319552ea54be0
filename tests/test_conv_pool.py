"""Convolution, pooling, unfold and fold against torch: values, gradients (float64 tight, float32), errors."""
import re

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import tidal

TIGHT = dict(rtol=1e-10, atol=1e-10)   # float64
LOOSE = dict(rtol=1e-4, atol=1e-4)     # float32


def _pair(arr, requires_grad):
    if arr is None:
        return None, None
    grad = requires_grad and arr.dtype.kind == "f"
    return tidal.tensor(arr, requires_grad=grad), torch.tensor(arr, requires_grad=grad)


def compare(rng, name, arrays, kwargs=None, *, grad=True, tol=TIGHT):
    """Call `name` in tidal and torch.nn.functional on the same inputs; compare results (indices
    exactly), then backward the same upstream gradient and compare every input's gradient."""
    kwargs = kwargs or {}
    ours, theirs = zip(*(_pair(a, grad) for a in arrays))
    out, ref = getattr(tidal, name)(*ours, **kwargs), getattr(F, name)(*theirs, **kwargs)
    if isinstance(ref, tuple):
        assert isinstance(out, tuple) and out[1].dtype == tidal.int64
        np.testing.assert_array_equal(out[1].numpy(), ref[1].numpy())
        out, ref = out[0], ref[0]
    assert tuple(out.shape) == tuple(ref.shape)
    assert out.dtype.name == str(ref.dtype).replace("torch.", "")
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), **tol)
    if grad:
        g = rng.standard_normal(tuple(ref.shape)).astype(arrays[0].dtype)
        out.backward(tidal.tensor(g))
        ref.backward(torch.tensor(g))
        for o, t in zip(ours, theirs):
            if t is not None and t.requires_grad:
                assert tuple(o.grad.shape) == tuple(t.grad.shape)
                np.testing.assert_allclose(o.grad.numpy(), t.grad.numpy(), **tol)
    return out


def randn(rng, shape, dtype=np.float64):
    return rng.standard_normal(shape).astype(dtype)


# -- convolution -------------------------------------------------------------------------------------
CONV2D = [  # input, weight, bias, kwargs
    ((2, 3, 8, 7), (4, 3, 3, 3), True, {}),
    ((2, 3, 8, 7), (4, 3, 3, 3), True, dict(stride=2, padding=1)),
    ((2, 3, 8, 7), (4, 3, 3, 2), False, dict(stride=(2, 3), padding=(2, 0), dilation=(1, 2))),
    ((2, 4, 9, 9), (6, 2, 3, 3), True, dict(groups=2, padding="same")),
    ((2, 4, 9, 9), (4, 1, 3, 3), True, dict(groups=4, padding=1)),              # depthwise
    ((2, 4, 9, 9), (8, 1, 5, 5), False, dict(groups=4, padding=2, stride=2)),   # depthwise, multiplier 2
    ((2, 3, 8, 8), (4, 3, 4, 4), True, dict(padding="same")),                   # even kernel: asymmetric pads
    ((2, 3, 8, 8), (4, 3, 2, 3), True, dict(padding="same", dilation=(3, 2))),
    ((2, 3, 8, 8), (4, 3, 3, 3), True, dict(padding="valid", dilation=2)),
    ((1, 3, 5, 5), (2, 3, 5, 5), True, {}),                                     # batch 1, kernel = image
    ((3, 6, 7), (2, 3, 3, 3), True, dict(stride=(1, 2))),                       # unbatched
    ((6, 6, 7), (6, 2, 1, 1), True, dict(groups=3, stride=3)),                  # unbatched, 1x1, groups
    ((2, 3, 4, 4), (4, 3, 3, 3), True, dict(padding=(1,), stride=[2])),         # length-1 lists repeat
]


@pytest.mark.parametrize("x_shape,w_shape,bias,kwargs", CONV2D)
def test_conv2d_float64(rng, x_shape, w_shape, bias, kwargs):
    out = compare(rng, "conv2d", [randn(rng, x_shape), randn(rng, w_shape), randn(rng, w_shape[0]) if bias else None],
                  kwargs)
    assert type(out.grad_fn).__name__ == "ConvolutionBackward0"


@pytest.mark.parametrize("x_shape,w_shape,bias,kwargs", CONV2D[::3])
def test_conv2d_float32(rng, x_shape, w_shape, bias, kwargs):
    arrays = [randn(rng, x_shape, np.float32), randn(rng, w_shape, np.float32),
              randn(rng, w_shape[0], np.float32) if bias else None]
    compare(rng, "conv2d", arrays, kwargs, tol=LOOSE)


CONV1D = [
    ((2, 3, 11), (4, 3, 3), True, {}),
    ((2, 4, 11), (6, 2, 4), True, dict(groups=2, padding="same", dilation=3)),
    ((2, 4, 12), (4, 1, 3), False, dict(groups=4, stride=3, padding=2)),
    ((3, 10), (5, 3, 2), True, dict(stride=2, dilation=2, padding="valid")),    # unbatched
]


@pytest.mark.parametrize("x_shape,w_shape,bias,kwargs", CONV1D)
def test_conv1d(rng, x_shape, w_shape, bias, kwargs):
    compare(rng, "conv1d", [randn(rng, x_shape), randn(rng, w_shape), randn(rng, w_shape[0]) if bias else None],
            kwargs)


CONV_TRANSPOSE2D = [  # input, weight (C_in, C_out/groups, kh, kw), kwargs; bias has C_out elements
    ((2, 4, 5, 6), (4, 3, 3, 3), {}),
    ((2, 4, 5, 6), (4, 3, 3, 2), dict(stride=2, padding=1, output_padding=1)),
    ((2, 4, 5, 6), (4, 2, 3, 2), dict(stride=(2, 3), dilation=(1, 2), output_padding=(1, 2), groups=2)),
    ((2, 4, 5, 5), (4, 2, 3, 3), dict(dilation=3, output_padding=2, padding=1)),  # output_padding < dilation
    ((4, 5, 5), (4, 1, 3, 3), dict(groups=4, stride=2)),                           # unbatched depthwise
]


@pytest.mark.parametrize("x_shape,w_shape,kwargs", CONV_TRANSPOSE2D)
def test_conv_transpose2d(rng, x_shape, w_shape, kwargs):
    bias = randn(rng, w_shape[1] * kwargs.get("groups", 1))
    compare(rng, "conv_transpose2d", [randn(rng, x_shape), randn(rng, w_shape), bias], kwargs)


def test_conv_transpose1d_and_float32(rng):
    compare(rng, "conv_transpose1d", [randn(rng, (2, 4, 7)), randn(rng, (4, 3, 3)), randn(rng, 6)],
            dict(stride=3, padding=1, output_padding=2, groups=2))
    compare(rng, "conv_transpose2d", [randn(rng, (2, 4, 5, 6), np.float32), randn(rng, (4, 3, 3, 3), np.float32),
                                      None], dict(stride=2), tol=LOOSE)


def test_conv_noncontiguous_inputs(rng):
    base, weight = randn(rng, (2, 3, 9, 8)), randn(rng, (3, 4, 3, 3))
    x = tidal.tensor(base).transpose(2, 3)[:, :, 1:]      # strided, offset
    w = tidal.tensor(weight).transpose(0, 1)              # (4, 3, 3, 3), not contiguous
    assert not x.is_contiguous() and not w.is_contiguous()
    x.requires_grad_()
    w.requires_grad_()
    tx = torch.tensor(base).transpose(2, 3)[:, :, 1:].requires_grad_()
    tw = torch.tensor(weight).transpose(0, 1).requires_grad_()
    out, ref = tidal.conv2d(x, w, padding=1, stride=2), F.conv2d(tx, tw, padding=1, stride=2)
    g = randn(rng, tuple(ref.shape))
    out.backward(tidal.tensor(g.transpose(0, 1, 3, 2)).transpose(2, 3))   # a strided upstream gradient too
    ref.backward(torch.tensor(g))
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), **TIGHT)
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), **TIGHT)
    np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy(), **TIGHT)


def test_conv_gradient_only_where_required(rng):
    x, w, b = randn(rng, (2, 3, 6, 6)), randn(rng, (4, 3, 3, 3)), randn(rng, 4)
    tx, tw, tb = tidal.tensor(x), tidal.tensor(w, requires_grad=True), tidal.tensor(b)
    tidal.conv2d(tx, tw, tb).backward(tidal.ones(2, 4, 4, 4, dtype=tidal.float64))
    rw = torch.tensor(w, requires_grad=True)
    F.conv2d(torch.tensor(x), rw, torch.tensor(b)).backward(torch.ones(2, 4, 4, 4, dtype=torch.float64))
    assert tx.grad is None and tb.grad is None
    np.testing.assert_allclose(tw.grad.numpy(), rw.grad.numpy(), **TIGHT)
    with tidal.no_grad():
        assert tidal.conv2d(tidal.tensor(x), tidal.tensor(w, requires_grad=True)).grad_fn is None


@pytest.mark.parametrize("dtype", [tidal.float16, tidal.bfloat16])
def test_conv_16bit(rng, dtype):
    x, w, b = (randn(rng, s, np.float32) for s in ((2, 3, 7, 7), (4, 3, 3, 3), (4,)))
    ours = [tidal.tensor(a, dtype=dtype) for a in (x, w, b)]
    rounded = [torch.tensor(t.float().numpy()) for t in ours]      # the same 16-bit values, in float32
    out = tidal.conv2d(*ours, padding=1)
    assert out.dtype == dtype
    np.testing.assert_allclose(out.float().numpy(), F.conv2d(*rounded, padding=1).numpy(), rtol=2e-2, atol=5e-2)
    out_t = tidal.conv_transpose2d(ours[0], ours[1].transpose(0, 1), stride=2)
    ref_t = F.conv_transpose2d(rounded[0], rounded[1].transpose(0, 1), stride=2)
    np.testing.assert_allclose(out_t.float().numpy(), ref_t.numpy(), rtol=2e-2, atol=5e-2)


def test_conv_integer_and_empty_batch(rng):
    x, w = rng.integers(-5, 5, (2, 3, 6, 6)), rng.integers(-3, 3, (4, 3, 3, 3))
    np.testing.assert_array_equal(tidal.conv2d(tidal.tensor(x), tidal.tensor(w), stride=2).numpy(),
                                  F.conv2d(torch.tensor(x), torch.tensor(w), stride=2).numpy())
    compare(rng, "conv2d", [randn(rng, (0, 3, 6, 6)), randn(rng, (4, 3, 3, 3)), randn(rng, 4)])


def test_conv_double_backward(rng):
    x, w, g, v1, v2 = (randn(rng, s) for s in ((2, 4, 7, 6), (6, 2, 3, 2), (2, 6, 4, 4), (2, 4, 7, 6), (6, 2, 3, 2)))
    results = []
    for lib, conv in ((tidal, tidal.conv2d), (torch, F.conv2d)):
        tx, tw = lib.tensor(x, requires_grad=True), lib.tensor(w, requires_grad=True)
        tg = lib.tensor(g, requires_grad=True)
        gx, gw = lib.autograd.grad(conv(tx, tw, groups=2, stride=2, padding=1), (tx, tw), tg, create_graph=True)
        results.append([t.detach().numpy() for t in lib.autograd.grad((gx, gw), (tx, tw, tg),
                                                                      (lib.tensor(v1), lib.tensor(v2)))])
    for ours, ref in zip(*results):
        np.testing.assert_allclose(ours, ref, **TIGHT)


def _numeric_grad(fn, arrays, k, g, eps=1e-6, samples=6, rng=None):
    """Central differences of sum(fn(*arrays) * g) in a few entries of arrays[k]."""
    flat = rng.choice(arrays[k].size, size=min(samples, arrays[k].size), replace=False)
    out = []
    for i in flat:
        vals = []
        for sign in (1, -1):
            moved = [a.copy() for a in arrays]
            moved[k].flat[i] += sign * eps
            vals.append((fn(*[tidal.tensor(a) for a in moved]).numpy() * g).sum())
        out.append((vals[0] - vals[1]) / (2 * eps))
    return flat, np.array(out)


@pytest.mark.parametrize("name,shapes,kwargs", [
    ("conv2d", [(2, 4, 6, 5), (6, 2, 3, 2), (6,)], dict(groups=2, stride=(2, 1), padding=1, dilation=2)),
    ("conv_transpose2d", [(2, 4, 4, 3), (4, 3, 2, 3), (3,)], dict(stride=2, output_padding=1)),
])
def test_conv_finite_differences(rng, name, shapes, kwargs):
    arrays = [randn(rng, s) for s in shapes]
    fn = lambda *ts: getattr(tidal, name)(*ts, **kwargs)  # noqa: E731
    leaves = [tidal.tensor(a, requires_grad=True) for a in arrays]
    out = fn(*leaves)
    g = randn(rng, tuple(out.shape))
    out.backward(tidal.tensor(g))
    for k, leaf in enumerate(leaves):
        where, numeric = _numeric_grad(fn, arrays, k, g, rng=rng)
        np.testing.assert_allclose(leaf.grad.numpy().ravel()[where], numeric, rtol=1e-6, atol=1e-7)


# -- pooling -------------------------------------------------------------------------------------------
MAX_POOL2D = [
    dict(kernel_size=3),
    dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, return_indices=True),
    dict(kernel_size=(3, 2), stride=(2, 1), padding=(1, 1), dilation=(2, 3), ceil_mode=True, return_indices=True),
    dict(kernel_size=2, stride=[], return_indices=True),
    dict(kernel_size=(2, 4), stride=(3, 2), padding=(1, 2), return_indices=True),
]


@pytest.mark.parametrize("kwargs", MAX_POOL2D)
@pytest.mark.parametrize("shape", [(2, 3, 9, 8), (3, 7, 10)])
def test_max_pool2d(rng, kwargs, shape):
    out = compare(rng, "max_pool2d", [randn(rng, shape)], kwargs)
    assert type(out.grad_fn).__name__ == "MaxPool2DWithIndicesBackward0"


@pytest.mark.parametrize("kwargs", [dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, return_indices=True),
                                    dict(kernel_size=2, dilation=3, return_indices=True), dict(kernel_size=4)])
@pytest.mark.parametrize("shape", [(2, 3, 13), (3, 10)])
def test_max_pool1d(rng, kwargs, shape):
    compare(rng, "max_pool1d", [randn(rng, shape)], kwargs)


def test_max_pool_ties_infinities_and_integers(rng):
    ties = rng.integers(0, 3, (2, 3, 8, 8)).astype(np.float64)   # many equal maxima: the first one wins
    compare(rng, "max_pool2d", [ties], dict(kernel_size=3, stride=2, padding=1, return_indices=True))
    compare(rng, "adaptive_max_pool2d", [ties], dict(output_size=(3, 5), return_indices=True))
    # a window holding only -inf reports the first position inside the image, as PyTorch does
    neg = np.full((1, 2, 5, 5), -np.inf)
    neg[0, 1, 2, 2] = 1.0
    compare(rng, "max_pool2d", [neg], dict(kernel_size=2, padding=1, dilation=2, return_indices=True), grad=False)
    nans = randn(rng, (2, 3, 8, 8))
    nans[rng.random(nans.shape) < 0.1] = np.nan          # NaN wins; the last one in a window is reported
    compare(rng, "max_pool2d", [nans], dict(kernel_size=3, stride=2, return_indices=True), grad=False,
            tol=dict(rtol=0, atol=0, equal_nan=True))
    compare(rng, "adaptive_max_pool2d", [nans], dict(output_size=(3, 5), return_indices=True), grad=False,
            tol=dict(rtol=0, atol=0, equal_nan=True))
    ints = rng.integers(-100, 100, (2, 3, 7, 7))
    compare(rng, "max_pool2d", [ints], dict(kernel_size=3, stride=2, ceil_mode=True, return_indices=True),
            grad=False)


AVG_POOL2D = [
    dict(kernel_size=3),
    dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
    dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
    dict(kernel_size=(3, 2), stride=(2, 3), padding=(1, 1), ceil_mode=True, divisor_override=5),
    dict(kernel_size=(4, 2), stride=(3, 1), padding=(2, 1), count_include_pad=False),
]


@pytest.mark.parametrize("kwargs", AVG_POOL2D)
@pytest.mark.parametrize("shape", [(2, 3, 9, 8), (3, 7, 10)])
def test_avg_pool2d(rng, kwargs, shape):
    compare(rng, "avg_pool2d", [randn(rng, shape)], kwargs)


@pytest.mark.parametrize("kwargs", [dict(kernel_size=4, stride=3, padding=2, ceil_mode=True, count_include_pad=False),
                                    dict(kernel_size=3, padding=1), dict(kernel_size=2, stride=1)])
def test_avg_pool1d(rng, kwargs):
    compare(rng, "avg_pool1d", [randn(rng, (2, 3, 11))], kwargs)
    compare(rng, "avg_pool1d", [randn(rng, (3, 11))], kwargs)


def test_pools_float32_and_integer_average(rng):
    x = randn(rng, (2, 3, 9, 8), np.float32)
    compare(rng, "max_pool2d", [x], dict(kernel_size=3, stride=2, return_indices=True), tol=LOOSE)
    compare(rng, "avg_pool2d", [x], dict(kernel_size=3, stride=2, padding=1), tol=LOOSE)
    compare(rng, "adaptive_avg_pool2d", [x], dict(output_size=(4, 3)), tol=LOOSE)
    compare(rng, "adaptive_max_pool2d", [x], dict(output_size=(4, 3), return_indices=True), tol=LOOSE)
    ints = rng.integers(-50, 50, (2, 3, 7, 7))       # int64 averages truncate toward zero
    compare(rng, "avg_pool2d", [ints], dict(kernel_size=3, stride=2, padding=1), grad=False)


@pytest.mark.parametrize("dtype", [tidal.float16, tidal.bfloat16])
def test_pools_16bit(rng, dtype):
    x = tidal.tensor(randn(rng, (2, 3, 8, 8), np.float32), dtype=dtype)
    ref = torch.tensor(x.float().numpy())
    for name, kwargs in (("max_pool2d", dict(kernel_size=3, stride=2)), ("avg_pool2d", dict(kernel_size=2)),
                         ("adaptive_avg_pool2d", dict(output_size=3)), ("adaptive_max_pool2d", dict(output_size=3))):
        out = getattr(tidal, name)(x, **kwargs)
        assert out.dtype == dtype
        np.testing.assert_allclose(out.float().numpy(), getattr(F, name)(ref, **kwargs).numpy(), rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("name,shape,size", [
    ("adaptive_avg_pool2d", (2, 3, 9, 7), (4, 5)), ("adaptive_avg_pool2d", (3, 7, 10), (None, 3)),
    ("adaptive_avg_pool2d", (2, 3, 5, 5), 7),
    ("adaptive_avg_pool1d", (2, 3, 11), 4), ("adaptive_avg_pool1d", (3, 11), (5,)),
    ("adaptive_max_pool2d", (2, 3, 9, 7), (4, 5)), ("adaptive_max_pool2d", (3, 7, 10), (None, 3)),
    ("adaptive_max_pool2d", (2, 3, 5, 5), 7), ("adaptive_max_pool1d", (2, 3, 11), 4),
])
def test_adaptive_pools(rng, name, shape, size):
    kwargs = dict(output_size=size, return_indices=True) if "max" in name else dict(output_size=size)
    compare(rng, name, [randn(rng, shape)], kwargs)


def test_empty_pools(rng):
    compare(rng, "adaptive_avg_pool2d", [randn(rng, (2, 3, 5, 5))], dict(output_size=0), grad=False)
    compare(rng, "adaptive_max_pool2d", [randn(rng, (2, 3, 5, 5))], dict(output_size=(0, 2)), grad=False)
    x = randn(rng, (0, 3, 6, 6))
    compare(rng, "max_pool2d", [x], dict(kernel_size=2, return_indices=True))
    compare(rng, "avg_pool2d", [x], dict(kernel_size=2))
    compare(rng, "adaptive_avg_pool2d", [x], dict(output_size=3))


@pytest.mark.parametrize("name,kwargs", [
    ("max_pool2d", dict(kernel_size=3, stride=2, padding=1)),
    ("avg_pool2d", dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False)),
    ("adaptive_avg_pool2d", dict(output_size=(4, 5))),
    ("adaptive_max_pool2d", dict(output_size=(4, 5))),
])
def test_pool_double_backward(rng, name, kwargs):
    x = randn(rng, (2, 3, 7, 6))
    results = []
    for lib, fn in ((tidal, getattr(tidal, name)), (torch, getattr(F, name))):
        local = np.random.default_rng(7)
        tx = lib.tensor(x, requires_grad=True)
        out = fn(tx, **kwargs)
        tg = lib.tensor(local.standard_normal(tuple(out.shape)), requires_grad=True)
        gx, = lib.autograd.grad(out, (tx,), tg, create_graph=True)
        gg, = lib.autograd.grad(gx, (tg,), lib.tensor(local.standard_normal(tuple(gx.shape))))
        results.append(gg.detach().numpy())
    np.testing.assert_allclose(results[0], results[1], **TIGHT)


# -- unfold / fold --------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape,kwargs", [
    ((2, 3, 7, 8), dict(kernel_size=3)),
    ((2, 3, 7, 8), dict(kernel_size=(2, 3), dilation=(2, 1), padding=(1, 2), stride=(2, 3))),
    ((3, 6, 6), dict(kernel_size=2, stride=2)),
])
def test_unfold_fold_against_torch(rng, shape, kwargs):
    cols = compare(rng, "unfold", [randn(rng, shape)], kwargs)
    assert type(cols.grad_fn).__name__ == "Im2ColBackward0"
    compare(rng, "fold", [randn(rng, tuple(cols.shape))], dict(output_size=shape[-2:], **kwargs))


def test_fold_unfold_round_trip(rng):
    x = tidal.tensor(randn(rng, (2, 3, 9, 8)))
    params = dict(kernel_size=(3, 2), dilation=(1, 2), padding=1, stride=(2, 1))
    cols = tidal.unfold(x, **params)
    overlaps = tidal.fold(tidal.unfold(tidal.ones_like(x), **params), (9, 8), **params)
    np.testing.assert_allclose(tidal.fold(cols, (9, 8), **params).numpy(), (x * overlaps).numpy(), **TIGHT)
    # non-overlapping blocks covering the image: fold undoes unfold exactly
    np.testing.assert_array_equal(tidal.fold(tidal.unfold(x[:, :, :8], 4, stride=4), (8, 8), 4, stride=4).numpy(),
                                  x[:, :, :8].numpy())


# -- errors -----------------------------------------------------------------------------------------------
class Z:
    """A zero tensor argument of `shape` and dtype, built in whichever library runs the case."""

    def __init__(self, *shape, dtype="float32"):
        self.shape, self.dtype = shape, dtype

    def __repr__(self):
        return f"Z{self.shape}"


def _arg(spec, lib):
    return lib.zeros(spec.shape, dtype=getattr(lib, spec.dtype)) if isinstance(spec, Z) else spec


ERRORS = [  # every one raised by torch with the same type and message
    ("conv2d", [Z(2, 4, 10, 10), Z(8, 3, 3, 3)], {}),
    ("conv2d", [Z(3, 10, 10), Z(8, 3, 3, 3)], dict(groups=2)),
    ("conv2d", [Z(2, 3, 2, 2), Z(8, 3, 3, 3)], {}),
    ("conv2d", [Z(2, 3, 4, 4), Z(8, 3, 3, 3)], dict(dilation=2, padding=(1, 0))),
    ("conv1d", [Z(2, 3, 2), Z(8, 3, 3)], {}),
    ("conv2d", [Z(3, 10), Z(8, 3, 3, 3)], {}),
    ("conv1d", [Z(10), Z(8, 3, 3)], {}),
    ("conv1d", [Z(2, 3, 10), Z(8, 3, 3, 3)], {}),
    ("conv2d", [Z(2, 3, 10, 10), Z(8, 3, 3, 3), Z(7)], {}),
    ("conv2d", [Z(2, 3, 10, 10), Z(8, 3, 3, 3), Z(8, 1)], {}),
    ("conv2d", [Z(2, 3, 10, 10), Z(8, 3, 3, 3)], dict(stride=0)),
    ("conv2d", [Z(2, 3, 10, 10), Z(8, 3, 3, 3)], dict(padding=-1)),
    ("conv2d", [Z(2, 3, 10, 10), Z(8, 3, 3, 3)], dict(dilation=0)),
    ("conv2d", [Z(2, 3, 10, 10), Z(8, 3, 3, 3)], dict(groups=0)),
    ("conv2d", [Z(2, 3, 10, 10), Z(8, 3, 3, 3)], dict(padding="same", stride=2)),
    ("conv2d", [Z(2, 3, 10, 10), Z(8, 3, 3, 3)], dict(padding="foo")),
    ("conv2d", [Z(2, 3, 10, 10), Z(8, 3, 3, 3)], dict(stride=(1, 2, 3))),
    ("conv2d", [Z(2, 6, 10, 10), Z(8, 3, 3, 3)], dict(groups=3)),
    ("conv2d", [Z(2, 3, 10, 10), Z(0, 3, 3, 3)], {}),
    ("conv2d", [Z(2, 3, 0, 10), Z(8, 3, 3, 3)], dict(padding=2)),
    ("conv2d", [Z(2, 3, 10, 10), Z(8, 3, 3, 3, dtype="float64")], {}),
    ("conv2d", [Z(2, 3, 10, 10, dtype="float64"), Z(8, 3, 3, 3, dtype="float64"), Z(8)], {}),
    ("conv2d", [Z(1, 1, 3, 3, dtype="bool"), Z(1, 1, 3, 3, dtype="bool")], {}),
    ("conv_transpose2d", [Z(2, 4, 5, 5), Z(3, 2, 3, 3)], {}),
    ("conv_transpose2d", [Z(2, 4, 5, 5), Z(4, 2, 3, 3)], dict(output_padding=2, stride=2)),
    ("conv_transpose1d", [Z(2, 4, 5), Z(4, 2, 3)], dict(output_padding=2, stride=2)),
    ("conv_transpose2d", [Z(2, 4, 5, 5), Z(4, 2, 3, 3)], dict(groups=3)),
    ("conv_transpose2d", [Z(2, 4, 5, 5), Z(4, 2, 3, 3), Z(4)], {}),
    ("conv_transpose2d", [Z(2, 4, 5, 5), Z(4, 2, 3, 3)], dict(padding="same")),
    ("conv_transpose2d", [Z(2, 4, 5, 5), Z(4, 2, 3, 3)], dict(output_padding=-1)),
    ("conv_transpose2d", [Z(2, 4, 5, 5), Z(4, 2, 3, 3)], dict(output_padding=(1, 2, 3))),
    ("max_pool2d", [Z(2, 3, 7, 7), 3], dict(padding=2)),
    ("max_pool2d", [Z(2, 3, 7, 7), 3], dict(stride=0)),
    ("max_pool2d", [Z(2, 3, 7, 7), 0], {}),
    ("max_pool2d", [Z(2, 3, 7, 7), 3], dict(stride=-1)),
    ("max_pool2d", [Z(2, 3, 7, 7), 3], dict(dilation=0)),
    ("max_pool2d", [Z(2, 3, 7, 7), 3], dict(padding=-1)),
    ("max_pool2d", [Z(2, 3, 7, 7), 9], {}),
    ("max_pool2d", [Z(7, 7), 3], {}),
    ("max_pool2d", [Z(2, 0, 7, 7), 3], {}),
    ("max_pool2d", [Z(2, 3, 7, 7), (3, 3, 3)], {}),
    ("max_pool2d", [Z(2, 3, 7, 7), 3], dict(stride=(1, 2, 3))),
    ("max_pool2d", [Z(1, 1, 3, 3, dtype="bool"), 2], {}),
    ("max_pool1d", [Z(7), 3], {}),
    ("max_pool1d", [Z(2, 0, 7), 3], {}),
    ("max_pool1d", [Z(2, 3, 7), 3], dict(padding=2)),
    ("max_pool1d", [Z(2, 3, 7), 9], {}),
    ("max_pool1d", [Z(2, 3, 7), 0], {}),
    ("max_pool1d", [Z(2, 3, 7), 3], dict(stride=0)),
    ("max_pool1d", [Z(2, 3, 7), 3], dict(dilation=0)),
    ("max_pool1d", [Z(2, 3, 7), 3], dict(padding=-1)),
    ("max_pool1d", [Z(2, 3, 7), (3, 3)], {}),
    ("avg_pool2d", [Z(2, 3, 7, 7), 3], dict(padding=2)),
    ("avg_pool2d", [Z(2, 3, 7, 7), 9], {}),
    ("avg_pool2d", [Z(2, 3, 7, 7), 3], dict(divisor_override=0)),
    ("avg_pool2d", [Z(2, 3, 7, 7, dtype="int32"), 3], {}),
    ("avg_pool2d", [Z(2, 0, 7, 7), 3], {}),
    ("avg_pool1d", [Z(2, 3, 7), 3], dict(padding=2)),
    ("avg_pool1d", [Z(2, 3, 7), 9], {}),
    ("avg_pool1d", [Z(7), 3], {}),
    ("avg_pool1d", [Z(2, 0, 7), 3], {}),
    ("avg_pool1d", [Z(2, 3, 7), (3, 3)], {}),
    ("adaptive_avg_pool2d", [Z(2, 3, 7, 7), (3, 3, 3)], {}),
    ("adaptive_avg_pool2d", [Z(2, 3, 7, 7), -1], {}),
    ("adaptive_avg_pool2d", [Z(7, 7), 3], {}),
    ("adaptive_avg_pool2d", [Z(2, 3, 0, 7), 3], {}),
    ("adaptive_avg_pool2d", [Z(2, 3, 7, 7, dtype="int64"), 3], {}),
    ("adaptive_avg_pool1d", [Z(7), 3], {}),
    ("adaptive_avg_pool1d", [Z(2, 3, 7), (3, 4)], {}),
    ("adaptive_max_pool2d", [Z(7, 7), 3], {}),
    ("adaptive_max_pool2d", [Z(2, 3, 7, 7, dtype="int64"), 3], {}),
    ("adaptive_max_pool2d", [Z(2, 3, 7, 7), (3, 3, 3)], {}),
    ("adaptive_max_pool2d", [Z(2, 3, 0, 7), 3], {}),
    ("adaptive_max_pool1d", [Z(7), 3], {}),
    ("adaptive_max_pool1d", [Z(2, 7), (3, 3)], {}),
    ("unfold", [Z(2, 3, 7, 7), 9], {}),
    ("unfold", [Z(2, 3, 7, 7), 0], {}),
    ("unfold", [Z(2, 3, 7, 7), 3], dict(stride=0)),
    ("unfold", [Z(2, 3, 7, 7), 3], dict(padding=-1)),
    ("unfold", [Z(2, 3, 7, 7), 3], dict(dilation=0)),
    ("unfold", [Z(2, 3, 7, 7), (3, 3, 3)], {}),
    ("unfold", [Z(2, 3, 7, 7, dtype="int64"), 3], {}),
    ("unfold", [Z(2, 0, 7, 7), 3], {}),
    ("fold", [Z(2, 27, 25), (8, 8), 3], {}),
    ("fold", [Z(2, 27, 25), (7, 7), 2], {}),
    ("fold", [Z(25), (7, 7), 3], {}),
    ("fold", [Z(2, 27, 25), (7, 7), 0], {}),
    ("fold", [Z(2, 27, 25, dtype="int64"), (7, 7), 3], {}),
    ("fold", [Z(2, 27, 25), (1, 1), 3], {}),
    ("fold", [Z(2, 27, 25), (7, 7, 7), 3], {}),
]


@pytest.mark.parametrize("name,args,kwargs", ERRORS)
def test_errors_match_torch(name, args, kwargs):
    with pytest.raises(Exception) as expected:
        getattr(F, name)(*[_arg(a, torch) for a in args], **kwargs)
    with pytest.raises(expected.type, match="^" + re.escape(str(expected.value)) + "$"):
        getattr(tidal, name)(*[_arg(a, tidal) for a in args], **kwargs)


def test_argument_type_errors():
    x, w = tidal.zeros(1, 3, 5, 5), tidal.zeros(2, 3, 3, 3)
    with pytest.raises(TypeError, match="argument 'stride' must be tuple of ints, not float"):
        tidal.conv2d(x, w, stride=1.5)
    with pytest.raises(TypeError, match="argument 'weight' .* must be Tensor, not int"):
        tidal.conv2d(x, 3)
    with pytest.raises(TypeError, match="argument 'groups' must be int, not float"):
        tidal.conv2d(x, w, groups=1.5)
    with pytest.raises(TypeError, match="argument 'kernel_size' must be tuple of ints, not float"):
        tidal.max_pool2d(x, 2.5)
    with pytest.raises(RuntimeError, match="Output size is too small"):
        tidal.conv_transpose2d(tidal.zeros(1, 2, 1, 1), tidal.zeros(2, 2, 3, 3), padding=3)

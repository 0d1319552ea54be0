"""Unit-stride convolutions against torch (their input gradient through ops/windowed/conv_rows.py: columns as
contiguous runs of the padded image, with slack columns): values and gradients of input, weight and
bias, over ranks, dilations, groups, asymmetric padding and dtypes; non-finite values that only the
slack reads stay out of the result."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import tidal
import tidal.compat
from tidal.ops.windowed import conv_rows
from tidal.ops.windowed.conv import _geometry

TOL = {np.float64: dict(rtol=1e-9, atol=1e-9), np.float32: dict(rtol=2e-4, atol=2e-4)}


def _run(name, arrays, kwargs):
    ours = [tidal.tensor(a, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    out, ref = getattr(tidal, name)(*ours, **kwargs), getattr(F, name)(*theirs, **kwargs)
    g = np.random.default_rng(1).standard_normal(tuple(ref.shape)).astype(arrays[0].dtype)
    out.backward(tidal.tensor(g))
    ref.backward(torch.tensor(g))
    return out, ref, ours, theirs


def _check(name, arrays, kwargs, tol):
    out, ref, ours, theirs = _run(name, arrays, kwargs)
    assert tuple(out.shape) == tuple(ref.shape)
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), **tol)
    for o, t in zip(ours, theirs):
        np.testing.assert_allclose(o.grad.numpy(), t.grad.numpy(), **tol)


CASES = [  # name, input, weight, kwargs
    ("conv2d", (3, 4, 9, 11), (6, 4, 3, 3), dict(padding=1)),
    ("conv2d", (16, 4, 14, 14), (6, 4, 3, 3), dict(padding=1)),  # rows of 16 * 14 * 16 floats: 14 KiB, laid wider
    ("conv2d", (2, 4, 9, 11), (6, 2, 3, 2), dict(padding=(2, 0), dilation=(1, 2), groups=2)),
    ("conv2d", (2, 3, 8, 8), (5, 3, 2, 4), dict(padding="same")),        # asymmetric padding
    ("conv2d", (1, 2, 5, 6), (3, 2, 3, 3), dict()),                      # no padding
    ("conv1d", (2, 5, 40), (7, 5, 5), dict(padding=2, dilation=2)),
    ("conv3d", (2, 3, 5, 6, 7), (4, 3, 3, 3, 3), dict(padding=1)),
    ("conv_transpose2d", (2, 4, 7, 6), (4, 3, 3, 3), dict(padding=1)),  # its forward is conv's input gradient
]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name,x_shape,w_shape,kwargs", CASES)
def test_unit_stride_conv_matches_torch(name, x_shape, w_shape, kwargs, dtype):
    rng = np.random.default_rng(0)
    out_channels = w_shape[1] * kwargs.get("groups", 1) if name.startswith("conv_transpose") else w_shape[0]
    arrays = [rng.standard_normal(s).astype(dtype) for s in (x_shape, w_shape, (out_channels,))]
    _check(name, arrays, kwargs, TOL[dtype])


def test_the_rows_path_serves_these_cases_and_not_strided_or_slack_heavy_ones():
    w = tidal.zeros(6, 4, 3, 3)
    def geo(image, stride, pads, result):
        return _geometry(w, 2, stride, [1, 1], pads, 1, image, result)
    assert conv_rows.takes(geo((3, 4, 9, 11), [1, 1], [1, 1, 1, 1], (3, 6, 9, 11)))
    assert not conv_rows.takes(geo((3, 4, 9, 11), [2, 1], [1, 1, 1, 1], (3, 6, 5, 11)))
    # a 3x3 kernel over a 3-wide image without padding: rows 3 wide for 1 output column
    assert not conv_rows.takes(geo((3, 4, 9, 3), [1, 1], [0, 0, 0, 0], (3, 6, 7, 1)))


def test_a_non_finite_pixel_that_only_slack_reads_stays_out_of_the_weight_gradient():
    # pixel (0, W-1) is read by tap j=0 only at output column W, past the real ones: a slack column
    rng = np.random.default_rng(2)
    x = rng.standard_normal((1, 1, 4, 5))
    x[0, 0, 0, 4] = np.inf
    w = rng.standard_normal((1, 1, 3, 3))
    ours = [tidal.tensor(x), tidal.tensor(w, requires_grad=True)]
    theirs = [torch.tensor(x), torch.tensor(w, requires_grad=True)]
    tidal.nn.functional.conv2d(*ours).sum().backward()
    F.conv2d(*theirs).sum().backward()
    np.testing.assert_array_equal(np.isfinite(ours[1].grad.numpy()), np.isfinite(theirs[1].grad.numpy()))
    finite = np.isfinite(theirs[1].grad.numpy())
    assert finite.any() and not finite.all()
    np.testing.assert_allclose(ours[1].grad.numpy()[finite], theirs[1].grad.numpy()[finite], rtol=1e-12)


def test_a_non_finite_weight_reaches_the_input_gradient_as_in_torch():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 2, 5, 6))
    w = rng.standard_normal((3, 2, 3, 3))
    w[1, 0, 0, 0] = np.nan
    ours = [tidal.tensor(x, requires_grad=True), tidal.tensor(w)]
    theirs = [torch.tensor(x, requires_grad=True), torch.tensor(w)]
    tidal.nn.functional.conv2d(*ours, padding=1).sum().backward()
    F.conv2d(*theirs, padding=1).sum().backward()
    np.testing.assert_allclose(ours[0].grad.numpy(), theirs[0].grad.numpy(), rtol=1e-12, equal_nan=True)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_precision_unit_stride_conv(dtype):
    rng = np.random.default_rng(4)
    x, w = rng.standard_normal((2, 3, 6, 7)), rng.standard_normal((4, 3, 3, 3))
    ours = tidal.nn.functional.conv2d(tidal.tensor(x, dtype=getattr(tidal, dtype)),
                                      tidal.tensor(w, dtype=getattr(tidal, dtype)), padding=1)
    ref = F.conv2d(torch.tensor(x, dtype=getattr(torch, dtype)), torch.tensor(w, dtype=getattr(torch, dtype)), padding=1)
    assert ours.dtype == getattr(tidal, dtype)
    np.testing.assert_allclose(ours.float().numpy(), ref.float().numpy(), rtol=2e-2, atol=5e-2)


def test_channels_last_unit_stride_conv():
    rng = np.random.default_rng(5)
    x, w = rng.standard_normal((2, 3, 6, 7)), rng.standard_normal((4, 3, 3, 3))
    ours = tidal.nn.functional.conv2d(tidal.tensor(x).to(memory_format=tidal.compat.channels_last), tidal.tensor(w), padding=1)
    ref = F.conv2d(torch.tensor(x).to(memory_format=torch.channels_last), torch.tensor(w), padding=1)
    assert ours.stride() == ref.stride()
    np.testing.assert_allclose(ours.numpy(), ref.detach().numpy(), rtol=1e-12)


def test_blas_rows_keep_row_bytes_away_from_multiples_of_2_kib():
    from tidal.ops.linalg.product_kernels import blas_rows
    for n, dtype in [(3584, np.float32), (4096, np.float32), (1024, np.float64), (100, np.float32), (512, np.float16)]:
        rows = blas_rows((3,), n, dtype)
        assert rows.shape == (3, n) and rows.strides[1] == rows.itemsize
        assert 64 <= rows.strides[0] % 2048 <= 2048 - 64
        assert rows.strides[0] - n * rows.itemsize < 2048  # (a little wider, not much)
    assert not blas_rows((2,), 10, np.float64, zeros=True).any()

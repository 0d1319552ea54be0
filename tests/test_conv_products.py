"""Convolutions whose products are large enough for threaded BLAS, through the compiled col2im, against
torch: values and gradients of input, weight and bias."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import tidal

TOL = {np.float64: dict(rtol=1e-9, atol=1e-9), np.float32: dict(rtol=2e-4, atol=2e-4)}


def _check(rng, name, x_shape, w_shape, bias_size, kwargs, dtype):
    arrays = [rng.standard_normal(s).astype(dtype) for s in (x_shape, w_shape, (bias_size,))]
    ours = [tidal.tensor(a, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    out, ref = getattr(tidal, name)(*ours, **kwargs), getattr(F, name)(*theirs, **kwargs)
    assert tuple(out.shape) == tuple(ref.shape)
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), **TOL[dtype])
    g = rng.standard_normal(tuple(ref.shape)).astype(dtype)
    out.backward(tidal.tensor(g))
    ref.backward(torch.tensor(g))
    for o, t in zip(ours, theirs):
        np.testing.assert_allclose(o.grad.numpy(), t.grad.numpy(), **TOL[dtype])


CONV2D = [  # input, weight, kwargs: 32 x 144 weights over >= 1200 columns
    ((3, 16, 20, 20), (32, 16, 3, 3), dict(padding=1)),
    ((2, 16, 23, 21), (32, 8, 3, 3), dict(groups=2, stride=2, padding=(2, 1))),
    ((2, 16, 24, 24), (24, 16, 3, 2), dict(dilation=(2, 3), padding="same")),
    ((4, 1, 28, 28), (16, 1, 3, 3), dict(padding=1)),                  # the CNN benchmark's first layer
    ((64, 3, 16, 16), (8, 3, 3, 3), dict(stride=2, padding=1)),         # 64 * 8 * 8 columns: rows laid wider
    ((2, 32, 17, 17), (32, 1, 3, 3), dict(groups=32, stride=3, padding=1)),  # depthwise
]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("x_shape,w_shape,kwargs", CONV2D)
def test_conv2d_large(rng, x_shape, w_shape, kwargs, dtype):
    _check(rng, "conv2d", x_shape, w_shape, w_shape[0], kwargs, dtype)


def test_conv_transpose2d_and_conv1d_large(rng):
    _check(rng, "conv_transpose2d", (2, 32, 12, 11), (32, 16, 3, 3), 16,
           dict(stride=2, padding=1, output_padding=1), np.float64)
    _check(rng, "conv1d", (3, 24, 300), (40, 24, 5), 40, dict(padding=2, stride=2), np.float64)


def test_conv3d_large(rng):
    _check(rng, "conv3d", (2, 8, 9, 10, 11), (16, 8, 3, 3, 3), 16, dict(padding=1, stride=(1, 2, 1)), np.float64)

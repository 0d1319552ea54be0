"""The branch-free 2x2 / stride 2 max pool (ops/pool_kernels.max_pool_2x2) against torch: values
and indices with ties, signed zeros, infinities, NaNs, integers, odd sizes, 16-bit floats, and
gradients."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import tidal


def _both(x: np.ndarray, grad: bool = False, **kwargs):
    ours = tidal.tensor(x, requires_grad=grad)
    theirs = torch.tensor(x, requires_grad=grad)
    out = tidal.nn.functional.max_pool2d(ours, 2, return_indices=True, **kwargs)
    ref = F.max_pool2d(theirs, 2, return_indices=True, **kwargs)
    np.testing.assert_array_equal(out[1].numpy(), ref[1].numpy())
    assert out[0].dtype.name == str(ref[0].dtype).replace("torch.", "")
    np.testing.assert_array_equal(out[0].detach().numpy(), ref[0].detach().numpy())
    return ours, theirs, out[0], ref[0]


@pytest.mark.parametrize("shape", [(3, 4, 28, 28), (2, 3, 7, 9), (5, 6, 2), (1, 1, 3, 2)])
def test_values_indices_and_gradient(rng, shape):
    x = rng.standard_normal(shape).astype(np.float32)
    ours, theirs, out, ref = _both(x, grad=True)
    g = rng.standard_normal(tuple(ref.shape)).astype(np.float32)
    out.backward(tidal.tensor(g))
    ref.backward(torch.tensor(g))
    np.testing.assert_array_equal(ours.grad.numpy(), theirs.grad.numpy())


def test_ties_signed_zeros_and_infinities(rng):
    ties = rng.integers(0, 2, (2, 3, 10, 10)).astype(np.float64)     # the first maximum wins
    _both(ties)
    zeros = rng.choice(np.array([0.0, -0.0, -1.0]), (2, 3, 8, 8)).astype(np.float32)
    _both(zeros)
    np.testing.assert_array_equal(np.signbit(tidal.nn.functional.max_pool2d(tidal.tensor(zeros), 2).numpy()),
                                  np.signbit(F.max_pool2d(torch.tensor(zeros), 2).numpy()))
    inf = rng.choice(np.array([-np.inf, np.inf, 0.5]), (2, 3, 8, 8), p=[0.6, 0.1, 0.3])
    _both(inf)


def test_nans(rng):
    x = rng.standard_normal((2, 3, 12, 10))
    x[rng.random(x.shape) < 0.15] = np.nan                           # NaN wins; the last one is reported
    x[0, 0, :2, :2] = np.nan
    ours = tidal.nn.functional.max_pool2d(tidal.tensor(x), 2, return_indices=True)
    ref = F.max_pool2d(torch.tensor(x), 2, return_indices=True)
    np.testing.assert_array_equal(ours[0].numpy(), ref[0].numpy())   # NaNs compare equal here
    np.testing.assert_array_equal(ours[1].numpy(), ref[1].numpy())


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.uint8])
def test_integers(rng, dtype):
    _both(rng.integers(0, 4, (2, 3, 9, 8)).astype(dtype))


def test_16bit_and_noncontiguous(rng):
    base = rng.standard_normal((2, 8, 8, 3)).astype(np.float32)
    ours = tidal.tensor(base).permute(0, 3, 1, 2)
    assert not ours.is_contiguous()
    out = tidal.nn.functional.max_pool2d(ours, 2, return_indices=True)
    ref = F.max_pool2d(torch.tensor(base).permute(0, 3, 1, 2), 2, return_indices=True)
    np.testing.assert_array_equal(out[0].numpy(), ref[0].numpy())
    np.testing.assert_array_equal(out[1].numpy(), ref[1].numpy())
    for ours_dtype, torch_dtype in ((tidal.float16, torch.float16), (tidal.bfloat16, torch.bfloat16)):
        out = tidal.nn.functional.max_pool2d(tidal.tensor(base).to(ours_dtype), 2, return_indices=True)
        ref = F.max_pool2d(torch.tensor(base).to(torch_dtype), 2, return_indices=True)
        np.testing.assert_array_equal(out[0].float().numpy(), ref[0].float().numpy())
        np.testing.assert_array_equal(out[1].numpy(), ref[1].numpy())

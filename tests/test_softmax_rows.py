"""softmax and log_softmax along the last dim through one kernel each way (ops/rowwise/softmax_rows.py) against torch:
values and gradients, rows of -inf, NaN and inf, other dims and dtypes through the composite, double backward,
both the compiled and the NumPy loops."""
import numba  # noqa: F401  (loaded, so the compiled loops run; the `loops` fixture also takes the other path)
import numpy as np
import pytest
import torch

import tidal
from tidal.ops.rowwise import softmax_rows

from kernel_loops import compile_here, loops_of  # noqa: F401  (fixtures)

pytestmark = pytest.mark.usefixtures("compile_here")
loops = loops_of(softmax_rows)


def _grads(lib, fn, x, g, dim, dtype=None):
    xt = lib.tensor(x, requires_grad=True)
    y = getattr(lib.nn.functional, fn)(xt, dim, dtype=dtype)
    (y * lib.tensor(g).to(y.dtype)).nansum().backward()
    return y.detach().numpy(), xt.grad.numpy()


@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape,dim", [((32, 4, 32, 32), -1), ((1024, 65), 1), ((5, 3), 0), ((7,), 0), ((2, 9, 4), 1)])
def test_matches_torch(loops, fn, dtype, shape, dim):
    rng = np.random.default_rng(len(shape) + shape[-1])
    x = (rng.standard_normal(shape) * 4).astype(dtype)
    g = rng.standard_normal(shape).astype(dtype)
    tol = 2e-6 if dtype == np.float32 else 1e-13
    for got, want in zip(_grads(tidal, fn, x, g, dim), _grads(torch, fn, x, g, dim)):
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
def test_non_finite_rows(loops, fn):
    x = np.random.default_rng(4).standard_normal((6, 40)).astype(np.float32)
    x[0, :] = -np.inf       # every element -inf: NaN throughout, as torch
    x[1, 3] = np.nan
    x[2, 5] = np.inf
    x[3, :20] = -np.inf     # masked half (attention)
    g = np.ones_like(x)
    for got, want in zip(_grads(tidal, fn, x, g, -1), _grads(torch, fn, x, g, -1)):
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        np.testing.assert_allclose(got, want, rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
def test_double_backward_and_dtype_argument(loops, fn):
    rng = np.random.default_rng(8)
    x = rng.standard_normal((3, 5))
    results = []
    for lib in (tidal, torch):
        xt = lib.tensor(x, requires_grad=True)
        y = getattr(lib.nn.functional, fn)(xt, -1)
        (gx,) = lib.autograd.grad((y * lib.arange(5.0, dtype=lib.float64)).sum(), xt, create_graph=True)
        (gx ** 2).sum().backward()
        half = getattr(lib.nn.functional, fn)(lib.tensor(x, dtype=lib.float16), -1, dtype=lib.float32)
        results.append((y.detach().numpy(), gx.detach().numpy(), xt.grad.numpy(), half.numpy()))
    for got, want in zip(*results):
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_cross_entropy_and_attention_through_the_kernels():
    rng = np.random.default_rng(9)
    logits, target = rng.standard_normal((256, 65)).astype(np.float32), rng.integers(0, 65, 256)
    q = rng.standard_normal((2, 4, 16, 8)).astype(np.float32)
    results = []
    for lib in (tidal, torch):
        x = lib.tensor(logits, requires_grad=True)
        loss = lib.nn.functional.cross_entropy(x, lib.tensor(target))
        loss.backward()
        qt = lib.tensor(q, requires_grad=True)
        att = lib.nn.functional.scaled_dot_product_attention(qt, qt, qt, is_causal=True)
        att.sum().backward()
        results.append((loss.detach().numpy(), x.grad.numpy(), att.detach().numpy(), qt.grad.numpy()))
    for got, want in zip(*results):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_fully_masked_attention_rows_give_zeros_as_torch(loops):
    rng = np.random.default_rng(12)
    q = rng.standard_normal((2, 2, 5, 4)).astype(np.float32)
    mask = np.ones((5, 5), bool)
    mask[1] = False  # query 1 sees nothing: torch's _safe_softmax gives its row zeros
    mask[3, 3:] = False
    results = []
    for lib in (tidal, torch):
        qt = lib.tensor(q, requires_grad=True)
        out = lib.nn.functional.scaled_dot_product_attention(qt, qt, qt, attn_mask=lib.tensor(mask))
        (out * lib.arange(4.0)).sum().backward()
        results.append((out.detach().numpy(), qt.grad.numpy()))
    for got, want in zip(*results):
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)

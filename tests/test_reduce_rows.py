"""sum/mean/amax/amin over trailing dims through the compiled row loops (ops/reductions/reduce_kernels.py) against
torch: values, NaN and infinity rows, keepdim, and the arrays the loops leave to NumPy."""
import numba  # noqa: F401  (the row loops run once numba is loaded)
import numpy as np
import pytest
import torch

import tidal

from kernel_loops import compile_here  # noqa: F401  (fixtures)

pytestmark = pytest.mark.usefixtures("compile_here")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape,dim", [((4096, 32), -1), ((1024, 65), 1), ((8, 16, 64), (1, 2)), ((2, 3, 700), -1),
                                       ((64, 4096), -1), ((3000,), None), ((64, 40), 0)])
@pytest.mark.parametrize("op", ["sum", "mean", "amax", "amin"])
def test_row_reductions_match_torch(dtype, shape, dim, op):
    rng = np.random.default_rng(sum(shape))
    x = (rng.standard_normal(shape) * 10).astype(dtype)
    for keepdim in (False, True):
        kwargs = {} if dim is None else dict(dim=dim, keepdim=keepdim)
        got = getattr(tidal.tensor(x), op)(**kwargs)
        want = getattr(torch.tensor(x), op)(**kwargs)
        assert tuple(got.shape) == tuple(want.shape) and str(got.dtype)[6:] == str(want.dtype)[6:]
        if op in ("amax", "amin"):
            np.testing.assert_array_equal(got.numpy(), want.numpy())
        else:
            tol = 2e-6 if dtype == np.float32 else 1e-13
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=tol, atol=tol * np.abs(x).max())


@pytest.mark.parametrize("op", ["amax", "amin", "sum", "mean"])
def test_non_finite_rows(op):
    x = np.random.default_rng(0).standard_normal((512, 32)).astype(np.float32)
    x[3, 7] = np.nan
    x[5, :] = -np.inf
    x[9, 0] = np.inf
    x[11, 31] = np.nan
    x[11, 0] = np.inf
    got = getattr(tidal.tensor(x), op)(-1).numpy()
    want = getattr(torch.tensor(x), op)(-1).numpy()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-5)
    from tidal.ops.reductions import reduce as reduce_module
    assert reduce_module._row_kernels is not None  # the compiled loops ran


def test_fused_group_feeding_a_row_reduction_and_its_gradient():
    rng = np.random.default_rng(2)
    a, m = rng.standard_normal((32, 4, 32, 32)).astype(np.float32), np.triu(np.full((32, 32), -np.inf, np.float32), 1)
    results = []
    for lib in (tidal, torch):
        x = lib.tensor(a, requires_grad=True)
        top = (x + lib.tensor(m)).amax(-1, keepdim=True)
        s = (x * 0.5).sum(-1)
        (top.sum() + s.sum()).backward()
        results.append((top.detach().numpy(), s.detach().numpy(), x.grad.numpy()))
    for got, want in zip(*results):
        np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-5)

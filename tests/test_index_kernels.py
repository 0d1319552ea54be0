"""index_add's compiled kernel (ops/indexing/index_kernels.py) against torch: slices added in index order, so repeated
indices sum to torch's bits, along every dim, for the dtypes it takes; other layouts keep the NumPy path."""
import numba  # noqa: F401  (loaded, so the compiled loop runs)
import numpy as np
import pytest
import torch

import tidal

from kernel_loops import compile_here  # noqa: F401  (fixtures)

pytestmark = pytest.mark.usefixtures("compile_here")


CASES = [(0, (65, 64), 1024), (1, (3, 5, 4), 7), (2, (2, 3, 6), 9), (0, (5,), 8), (0, (4, 3), 0)]


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int32", "complex64"])
@pytest.mark.parametrize("dim,shape,k", CASES)
def test_index_add_matches_torch_bitwise(dtype, dim, shape, k):
    rng = np.random.default_rng(k)
    idx = rng.integers(0, shape[dim], k)
    src_shape = list(shape)
    src_shape[dim] = k
    base, src = rng.standard_normal(shape) * 3, rng.standard_normal(src_shape) * 3
    for alpha in (1, 3):
        want = torch.tensor(base).to(getattr(torch, dtype)).index_add(
            dim, torch.tensor(idx), torch.tensor(src).to(getattr(torch, dtype)), alpha=alpha)
        got = tidal.tensor(base).to(getattr(tidal, dtype)).index_add(
            dim, tidal.tensor(idx), tidal.tensor(src).to(getattr(tidal, dtype)), alpha=alpha)
        assert got.dtype == getattr(tidal, dtype)
        if alpha != 1 and dtype in ("float64", "complex64"):  # torch's fused multiply-add has no NumPy twin
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, atol=1e-6)
        else:
            np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_embedding_gradient_sums_repeated_rows_as_torch():
    rng = np.random.default_rng(0)
    weight = rng.standard_normal((65, 64)).astype(np.float32)
    idx = rng.integers(0, 65, (32, 32))
    grads = []
    for lib in (tidal, torch):
        emb = lib.nn.Embedding(65, 64)
        with lib.no_grad():
            emb.weight.copy_(lib.tensor(weight))
        out = emb(lib.tensor(idx))
        (out * lib.tensor(np.linspace(-1, 1, 64, dtype=np.float32))).sum().backward()
        grads.append(emb.weight.grad.numpy())
    np.testing.assert_array_equal(grads[0], grads[1])


def test_index_add_into_a_transposed_view_and_from_an_expanded_source():
    idx = np.random.default_rng(1).integers(0, 65, 300)
    results = []
    for lib in (tidal, torch):
        target = lib.zeros(64, 65).t()  # not C-contiguous: the NumPy path
        target.index_add_(0, lib.tensor(idx), lib.ones(1, 64).expand(300, 64), alpha=2)
        fresh = lib.zeros(65, 64).index_add(0, lib.tensor(idx), lib.arange(64.0).expand(300, 64))
        results.append((target.numpy(), fresh.numpy()))
    for got, want in zip(*results):
        np.testing.assert_array_equal(got, want)


def test_index_add_bad_index_is_reported_and_runtime_stays_usable():
    x = tidal.zeros(4, 3)
    with pytest.raises(RuntimeError, match="index 7 is out of bounds for dimension 0 with size 4"):
        x.index_add_(0, tidal.tensor([1, 7]), tidal.ones(2, 3))
        tidal.sync()
    y = tidal.zeros(4, 3).index_add(0, tidal.tensor([1, 1]), tidal.ones(2, 3))
    np.testing.assert_array_equal(y.numpy(), torch.zeros(4, 3).index_add(0, torch.tensor([1, 1]),
                                                                         torch.ones(2, 3)).numpy())

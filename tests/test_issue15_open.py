"""Issue 15's open items against torch 2.13 CPU: which index ties give (sort, topk, kthvalue, unique,
median, mode, max), det's gradient at singular matrices, sparse embedding gradients, bfloat16 numpy()."""
from __future__ import annotations

import math

import numpy as np
import pytest

import tidal
from pairs import as_numpy, pair

torch = pytest.importorskip("torch")
ml_dtypes = pytest.importorskip("ml_dtypes")

PATCH_TIES = "needs s10_open_median_mode_ties.patch"
TIE_DTYPES = ("float32", "float64", "float16", "bfloat16", "int64", "int32", "int8", "uint8", "bool")
# lengths around torch's switches: insertion sort up to 16, introsort past it, topk's 64k <= n
LENGTHS = (5, 16, 17, 33, 64, 65, 130)


def _ties(rng, shape, dtype: str, nan: bool = True) -> np.ndarray:
    """Values drawn from few levels (many ties); floats also get NaN and -0.0 beside 0.0."""
    if dtype == "bool":
        return rng.random(shape) > 0.5
    arr = rng.integers(0, 4, shape).astype(np.float64)
    if dtype in ("float32", "float64", "float16", "bfloat16"):
        arr[rng.random(shape) < 0.15] = -0.0
        if nan:
            arr[rng.random(shape) < 0.1] = math.nan
    return arr.astype(ml_dtypes.bfloat16 if dtype == "bfloat16" else dtype)


def _same(got, want) -> None:
    """Same values exactly, NaN where torch has NaN, and the same sign of zero."""
    g, w = as_numpy(got), as_numpy(want)
    assert g.shape == w.shape
    np.testing.assert_array_equal(g, w)
    if g.dtype.kind == "f":  # (a NaN's sign bit is not compared)
        np.testing.assert_array_equal(np.signbit(g) & ~np.isnan(g), np.signbit(w) & ~np.isnan(w))


def _cases(rng, dtype: str):
    """1-D inputs of each length, and 2-D ones along each dim."""
    for n in LENGTHS:
        yield _ties(rng, (n,), dtype), 0
        arr = _ties(rng, (3, n), dtype)
        yield arr, 1
        yield np.ascontiguousarray(arr.T), 0


# -- sort, argsort, msort ------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", TIE_DTYPES)
def test_sort_ties_pick_torchs_indices(dtype):
    rng = np.random.default_rng(1)
    for arr, dim in _cases(rng, dtype):
        ours, ref = pair(arr)
        for descending in (False, True):
            got, want = ours.sort(dim, descending), ref.sort(dim, descending)
            _same(got.values, want.values)
            _same(got.indices, want.indices)
            _same(tidal.argsort(ours, dim, descending), torch.argsort(ref, dim, descending))
        if dim == 0:
            _same(tidal.msort(ours), torch.msort(ref))


def test_sort_stable_keeps_input_order():
    arr = _ties(np.random.default_rng(2), (3, 70), "float32")
    ours, ref = pair(arr)
    for descending in (False, True):
        got = ours.sort(dim=-1, descending=descending, stable=True)
        want = ref.sort(dim=-1, descending=descending, stable=True)
        _same(got.indices, want.indices)
        assert not np.array_equal(as_numpy(got.indices), as_numpy(ours.sort(-1, descending).indices))


def test_sort_expanded_dim_and_radix_path():
    # torch skips sorting a dim of stride 0 (indices in input order)
    _same(tidal.tensor([[1.0], [2.0]]).expand(2, 30).sort().indices,
          torch.tensor([[1.0], [2.0]]).expand(2, 30).sort().indices)
    # 1-D integers of 32768+ elements sorted ascending go through torch's (stable) radix sort
    arr = np.random.default_rng(3).integers(0, 3, 40000)
    ours, ref = pair(arr)
    for descending in (False, True):
        _same(ours.sort(descending=descending).indices, ref.sort(descending=descending).indices)


# -- topk, kthvalue --------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ("float32", "float64", "bfloat16", "int64", "uint8"))
def test_topk_ties_pick_torchs_indices(dtype):
    rng = np.random.default_rng(4)
    for arr, dim in _cases(rng, dtype):
        ours, ref = pair(arr)
        n = arr.shape[dim]
        for k in sorted({1, 2 if n > 1 else 1, max(1, n // 64), n // 3 or 1, n}):
            for largest in (True, False):
                for is_sorted in (True, False):
                    got = ours.topk(k, dim, largest, is_sorted)
                    want = ref.topk(k, dim, largest, is_sorted)
                    _same(got.values, want.values)
                    _same(got.indices, want.indices)


@pytest.mark.parametrize("dtype", ("float32", "float16", "int64", "int8"))
def test_kthvalue_ties_pick_torchs_index(dtype):
    rng = np.random.default_rng(5)
    for arr, dim in _cases(rng, dtype):
        ours, ref = pair(arr)
        n = arr.shape[dim]
        for k in sorted({1, (n + 1) // 2, n}):
            got, want = ours.kthvalue(k, dim), ref.kthvalue(k, dim)
            _same(got.values, want.values)
            _same(got.indices, want.indices)


# -- unique ----------------------------------------------------------------------------------------
def test_unique_ties_as_torch():
    rng = np.random.default_rng(6)
    for n in (2, 20, 45, 100):
        arr = _ties(rng, (n,), "float32")
        ours, ref = pair(arr)
        for got, want in zip(tidal.unique(ours, return_inverse=True, return_counts=True),
                             torch.unique(ref, return_inverse=True, return_counts=True)):
            _same(got, want)  # which NaN is which, and whether 0.0 or -0.0 stands for zero
    rows = np.repeat(_ties(rng, (6, 3), "float64"), 4, axis=0)
    rows[rng.permutation(24)[:3], 1] = math.nan
    ours, ref = pair(rows)
    for dim in (0, 1):
        for got, want in zip(tidal.unique(ours, dim=dim, return_inverse=True, return_counts=True),
                             torch.unique(ref, dim=dim, return_inverse=True, return_counts=True)):
            _same(got, want)


# -- median, nanmedian, mode, max/min(dim) -----------------------------------------------------------
@pytest.mark.xfail(strict=True, reason=PATCH_TIES)
@pytest.mark.parametrize("dtype", ("float32", "float64", "int64", "uint8", "bool"))
def test_median_mode_ties_pick_torchs_index(dtype):
    rng = np.random.default_rng(7)
    for arr, dim in _cases(rng, dtype):
        ours, ref = pair(arr)
        ops = ("mode",) if dtype == "bool" else ("median", "nanmedian", "mode")
        for op in ops:
            got, want = getattr(ours, op)(dim), getattr(ref, op)(dim)
            _same(got.values, want.values)
            _same(got.indices, want.indices)


def test_max_min_dim_ties_first_index():
    rng = np.random.default_rng(8)
    for arr, dim in _cases(rng, "float32"):
        ours, ref = pair(arr)
        for op in ("max", "min"):
            _same(getattr(ours, op)(dim).indices, getattr(ref, op)(dim).indices)
        _same(ours.argmax(dim), ref.argmax(dim))
        _same(ours.argmin(dim), ref.argmin(dim))


# -- det / slogdet / logdet gradients at singular matrices -----------------------------------------
def _singular_batch(dtype) -> np.ndarray:
    """An invertible matrix beside singular ones of rank 2, 1 and 0 (exactly singular in any LU)."""
    rng = np.random.default_rng(9)
    full = rng.standard_normal((3, 3)) + 3 * np.eye(3)
    rank2 = np.array([[1.0, 2, 3], [4, 5, 6], [5, 7, 9]])
    rank1 = np.outer([1.0, -2, 0.5], [2.0, 1, -1])
    diag = np.diag([1.0, 0.0, 2.0])
    arr = np.stack([full, rank2, rank1, diag, np.zeros((3, 3))])
    if dtype == "complex128":
        arr = arr * (1 + 0.5j)
    return arr.astype(dtype)


def _grads(lib, arr, fn, create_graph: bool, second: bool):
    """d fn(A).sum() / dA, and with `second` the gradient of that gradient's weighted sum."""
    A = lib.tensor(arr, requires_grad=True)
    (g,) = lib.autograd.grad(fn(lib, A).sum(), A, create_graph=create_graph)
    if not second:
        return g.detach()
    weights = lib.tensor(np.linspace(-1, 1, arr.size).reshape(arr.shape).astype(arr.dtype))
    (h,) = lib.autograd.grad((g * weights).sum().real if arr.dtype.kind == "c" else (g * weights).sum(), A)
    return h


def _close(got, want, tol: float) -> None:
    np.testing.assert_allclose(as_numpy(got), as_numpy(want), rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", ("float64", "float32", "complex128"))
@pytest.mark.parametrize("create_graph", (False, True), ids=("plain", "create_graph"))
def test_det_grad_at_singular_matrices(dtype, create_graph):
    arr = _singular_batch(dtype)
    tol = 1e-4 if dtype == "float32" else 1e-9
    det = lambda lib, A: lib.linalg.det(A).real if A.dtype.is_complex else lib.linalg.det(A)  # noqa: E731
    _close(_grads(tidal, arr, det, create_graph, False), _grads(torch, arr, det, create_graph, False), tol)
    for one in arr[:4]:  # unbatched: one path or the other
        _close(_grads(tidal, one, det, create_graph, False), _grads(torch, one, det, create_graph, False), tol)
    if create_graph and dtype != "float32":
        # second derivatives through torch's SVD route, where the singular values are distinct (rank >= n-1);
        # at rank <= n-2 torch's svd_backward divides 0 by 0 (MKL's exact zero singular values): nan at rank 0
        # (skipped: rank 1, where NumPy's LAPACK leaves distinct round-off singular values and a finite result)
        some = arr[[0, 1, 3]]
        _close(_grads(tidal, some, det, True, True), _grads(torch, some, det, True, True), 1e-7)
        want, got = _grads(torch, arr[4:], det, True, True), _grads(tidal, arr[4:], det, True, True)
        assert np.isnan(as_numpy(want)).all() and np.isnan(as_numpy(got)).all()


def test_torch_det_alias_grad_at_singular():
    arr = _singular_batch("float64")[1]
    for create_graph in (False, True):
        _close(_grads(tidal, arr, lambda lib, A: lib.det(A), create_graph, False),
               _grads(torch, arr, lambda lib, A: lib.det(A), create_graph, False), 1e-9)


@pytest.mark.parametrize("op", ("slogdet", "logdet"))
def test_slogdet_logdet_grad_at_singular(op):
    fn = (lambda lib, A: lib.linalg.slogdet(A)[1]) if op == "slogdet" else (lambda lib, A: lib.logdet(A))
    for arr in (np.array([[1.0, 2], [2, 4]]), np.array([[1.0, 2, 3], [4, 5, 6], [7, 8, 9]]), np.zeros((2, 2)),
                np.array([[0.0, 1], [0, 0]])):
        # plain backward: torch substitutes through the zero pivot (inf and nan where it divides by it)
        _same(_grads(tidal, arr, fn, False, False), _grads(torch, arr, fn, False, False))
    batch = np.stack([np.eye(2) * 2, np.zeros((2, 2))])
    for lib in (torch, tidal):  # create_graph: torch's linalg.solve refuses the singular matrix
        A = lib.tensor(batch, requires_grad=True)
        with pytest.raises(RuntimeError, match=r"^torch.linalg.solve: \(Batch element 1\): The solver failed "
                                               r"because the input matrix is singular.$"):
            lib.autograd.grad(fn(lib, A).sum(), A, create_graph=True)
    arr = np.random.default_rng(10).standard_normal((2, 3, 3)) + 3 * np.eye(3)
    for create_graph in (False, True):
        _close(_grads(tidal, arr, fn, create_graph, False), _grads(torch, arr, fn, create_graph, False), 1e-9)
    _close(_grads(tidal, arr, fn, True, True), _grads(torch, arr, fn, True, True), 1e-8)

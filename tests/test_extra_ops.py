"""Long-tail ops (whole-tensor comparisons, grids, diagonals, distances, counting: once extra.py) and the
tidal.linalg namespace (ops/linalg/namespace.py), against torch."""
import importlib
import math

import numpy as np
import pytest
import torch

import tidal
from tidal.ops.factories import grids
from tidal.ops.linalg import torch_names, vector_ops
from tidal.ops.movement import diagonals
from tidal.ops.reductions import comparisons, statistics

L = importlib.import_module("tidal.ops.linalg.namespace")
rng = np.random.default_rng(0)


def tt(a):
    return torch.from_numpy(np.ascontiguousarray(a))


def same(x, y, rtol=1e-7, atol=0):
    assert tuple(x.shape) == tuple(y.shape)
    assert str(x.dtype).split(".")[-1].replace("bool_", "bool") == str(y.dtype).split(".")[-1]
    np.testing.assert_allclose(x.numpy(), y.detach().numpy(), rtol=rtol, atol=atol)


def spd(*batch, n=3):
    a = rng.standard_normal((*batch, n, n))
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


# -- comparisons ---------------------------------------------------------------------------------
def test_isclose_allclose_equal():
    a = np.array([1.0, np.nan, np.inf, -np.inf, 1.0, 0.0])
    b = np.array([1.0 + 1e-6, np.nan, np.inf, np.inf, 1.1, 1e-9])
    for d in ("float32", "float64"):
        x, y = tidal.tensor(a.astype(d)), tidal.tensor(b.astype(d))
        for kw in ({}, {"equal_nan": True}, {"rtol": 0.2, "atol": 0.0}):
            same(comparisons.isclose(x, y, **kw), torch.isclose(tt(a.astype(d)), tt(b.astype(d)), **kw))
            assert comparisons.allclose(x, y, **kw) == torch.allclose(tt(a.astype(d)), tt(b.astype(d)), **kw)
    ints = tidal.tensor([1, 2, 3])
    same(comparisons.METHODS["isclose"](ints, tidal.tensor([1, 2, 4])),
         torch.tensor([1, 2, 3]).isclose(torch.tensor([1, 2, 4])))
    assert comparisons.METHODS["allclose"](tidal.tensor([1.0]), tidal.tensor([1.0 + 1e-7]))
    assert comparisons.equal(ints, tidal.tensor([1, 2, 3])) and not comparisons.equal(ints, tidal.tensor([1, 2]))
    assert not comparisons.METHODS["equal"](tidal.tensor([math.nan]), tidal.tensor([math.nan]))
    t = tidal.tensor(rng.standard_normal((3, 4)))
    assert comparisons.equal(t.t(), t.t().contiguous())


def test_isclose_errors():
    with pytest.raises(RuntimeError, match="Float did not match Double"):
        comparisons.isclose(tidal.ones(2), tidal.ones(2, dtype=tidal.float64))
    with pytest.raises(RuntimeError, match="rtol must be greater than or equal to zero"):
        comparisons.isclose(tidal.ones(2), tidal.ones(2), rtol=-1)
    with pytest.raises(RuntimeError, match="atol must be greater than or equal to zero"):
        comparisons.isclose(tidal.ones(2), tidal.ones(2), atol=-1)
    with pytest.raises(TypeError, match="equal"):
        comparisons.equal(tidal.ones(2), [1, 1])


# -- grids and index builders --------------------------------------------------------------------
@pytest.mark.parametrize("indexing", ["ij", "xy"])
def test_meshgrid(indexing):
    arrays = [rng.standard_normal(3), rng.standard_normal(2), np.array(5.0)]
    ours = grids.meshgrid(*[tidal.tensor(a) for a in arrays], indexing=indexing)
    theirs = torch.meshgrid(*[tt(a) for a in arrays], indexing=indexing)
    for o, t in zip(ours, theirs):
        same(o, t)
    assert len(grids.meshgrid([tidal.tensor(arrays[0])], indexing=indexing)) == 1
    with pytest.warns(UserWarning, match="indexing"):
        grids.meshgrid(tidal.ones(2))


def test_meshgrid_errors():
    with pytest.raises(RuntimeError, match='indexing must be one of "xy" or "ij"'):
        grids.meshgrid(tidal.ones(2), indexing="foo")
    with pytest.raises(RuntimeError, match="Expected 0D or 1D tensor"):
        grids.meshgrid(tidal.ones(2, 2), indexing="ij")
    with pytest.raises(RuntimeError, match="same dtype"):
        grids.meshgrid(tidal.ones(2), tidal.ones(2, dtype=tidal.float64), indexing="ij")


def test_cartesian_prod():
    a, b, c = np.array([1, 2, 3]), np.array([4, 5]), np.array([7])
    same(grids.cartesian_prod(tidal.tensor(a), tidal.tensor(b), tidal.tensor(c)),
         torch.cartesian_prod(tt(a), tt(b), tt(c)))
    same(grids.cartesian_prod(tidal.tensor(a)), torch.cartesian_prod(tt(a)))
    with pytest.raises(RuntimeError, match=r"Expect a 1D vector, but got shape \[2, 2\]"):
        grids.cartesian_prod(tidal.ones(2, 2))


@pytest.mark.parametrize("args", [(3, 3), (3, 4, 1), (4, 3, -1), (0, 3), (5, 2, 7), (2, 5, -9)])
def test_tri_indices(args):
    same(grids.triu_indices(*args), torch.triu_indices(*args))
    same(grids.tril_indices(*args), torch.tril_indices(*args))
    same(grids.tril_indices(*args, dtype=tidal.int32), torch.tril_indices(*args, dtype=torch.int32))


# -- diagonals -----------------------------------------------------------------------------------
@pytest.mark.parametrize("offset", [-2, 0, 1, 5])
def test_diag_family(offset):
    v = rng.standard_normal(4).astype(np.float32)
    m = rng.standard_normal((3, 5))
    same(diagonals.diag(tidal.tensor(v), offset), torch.diag(tt(v), offset))
    same(diagonals.METHODS["diag"](tidal.tensor(m), offset), torch.diag(tt(m), offset))
    same(diagonals.diag(tidal.tensor(m).t(), offset), torch.diag(tt(m).t(), offset))
    b = rng.standard_normal((2, 3))
    for d1, d2 in [(-2, -1), (0, 2), (2, 0), (1, 0)]:
        same(diagonals.diag_embed(tidal.tensor(b), offset, d1, d2), torch.diag_embed(tt(b), offset, d1, d2))
    same(diagonals.diagflat(tidal.tensor(b), offset), torch.diagflat(tt(b), offset))
    same(diagonals.diag(tidal.tensor([1, 2, 3]), offset), torch.diag(torch.tensor([1, 2, 3]), offset))
    same(diagonals.diag(tidal.tensor([True, False]), offset), torch.diag(torch.tensor([True, False]), offset))


def test_diag_errors():
    with pytest.raises(RuntimeError, match=r"diag\(\): Supports 1D or 2D tensors. Got 3D"):
        diagonals.diag(tidal.ones(2, 2, 2))
    with pytest.raises(RuntimeError, match="diagonal dimensions cannot be identical 0, 0"):
        diagonals.diag_embed(tidal.ones(2), dim1=0, dim2=0)
    with pytest.raises(IndexError, match="Dimension out of range"):
        diagonals.diag_embed(tidal.ones(2), dim1=3)


def test_diag_grads():
    b = rng.standard_normal((2, 3))
    g = rng.standard_normal((2, 5, 5))
    x, xt = tidal.tensor(b, requires_grad=True), tt(b).requires_grad_()
    (diagonals.diag_embed(x, -2) * tidal.tensor(g)).sum().backward()
    (torch.diag_embed(xt, -2) * tt(g)).sum().backward()
    same(x.grad, xt.grad)


@pytest.mark.parametrize("shape,wrap", [((3, 3), False), ((7, 3), True), ((7, 3), False), ((3, 7), True),
                                        ((4, 4, 4), False), ((0, 0), False)])
def test_fill_diagonal_(shape, wrap):
    z, zt = tidal.zeros(*shape), torch.zeros(*shape)
    assert diagonals.METHODS["fill_diagonal_"](z, 2.5, wrap=wrap) is z
    same(z, zt.fill_diagonal_(2.5, wrap=wrap))
    big, bigt = tidal.zeros(6, 8), torch.zeros(6, 8)
    diagonals.fill_diagonal_(big[1:, ::2], 1)  # a non-contiguous view writes through to its base
    bigt[1:, ::2].fill_diagonal_(1)
    same(big, bigt)


def test_fill_diagonal_errors():
    with pytest.raises(RuntimeError, match="dimensions must larger than 1"):
        diagonals.fill_diagonal_(tidal.ones(3), 1)
    with pytest.raises(RuntimeError, match="all dimensions of input must be of equal length"):
        diagonals.fill_diagonal_(tidal.ones(2, 3, 4), 1)


# -- distances, counts, differences --------------------------------------------------------------
@pytest.mark.parametrize("p", [2.0, 1.0, 0.0, 3.0, math.inf])
def test_cdist(p):
    a, b = rng.standard_normal((2, 4, 3)), rng.standard_normal((1, 5, 3))
    same(vector_ops.cdist(tidal.tensor(a), tidal.tensor(b), p), torch.cdist(tt(a), tt(b), p), rtol=1e-10)
    a32, b32 = a[0].astype(np.float32), b[0].astype(np.float32)
    same(vector_ops.cdist(tidal.tensor(a32), tidal.tensor(b32), p), torch.cdist(tt(a32), tt(b32), p),
         rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("p", [2.0, 1.0])
def test_cdist_grad(p):
    a, b = rng.standard_normal((2, 4, 3)), rng.standard_normal((2, 5, 3))
    a[0, 0] = b[0, 0]  # a zero distance: the gradient there is 0, as torch's
    x, y = tidal.tensor(a, requires_grad=True), tidal.tensor(b, requires_grad=True)
    xt, yt = tt(a).requires_grad_(), tt(b).requires_grad_()
    g = rng.standard_normal((2, 4, 5))
    (vector_ops.cdist(x, y, p) * tidal.tensor(g)).sum().backward()
    (torch.cdist(xt, yt, p) * tt(g)).sum().backward()
    same(x.grad, xt.grad, rtol=1e-9, atol=1e-12)
    same(y.grad, yt.grad, rtol=1e-9, atol=1e-12)


def test_cdist_errors():
    with pytest.raises(RuntimeError, match="cdist only supports at least 2D tensors, X1 got: 1D"):
        vector_ops.cdist(tidal.ones(3), tidal.ones(3, 3))
    with pytest.raises(RuntimeError, match="X1 and X2 must have the same number of columns. X1: 3 X2: 4"):
        vector_ops.cdist(tidal.ones(2, 3), tidal.ones(3, 4))
    with pytest.raises(RuntimeError, match="non-negative p values"):
        vector_ops.cdist(tidal.ones(2, 3), tidal.ones(3, 3), p=-1)
    with pytest.raises(RuntimeError, match="cdist only supports floating-point dtypes, X1 got: Long"):
        vector_ops.cdist(tidal.ones(2, 3, dtype=tidal.int64), tidal.ones(3, 3, dtype=tidal.int64))


def test_bincount():
    x = rng.integers(0, 6, 20)
    same(statistics.bincount(tidal.tensor(x)), torch.bincount(tt(x)))
    same(statistics.METHODS["bincount"](tidal.tensor(x), minlength=10), torch.bincount(tt(x), minlength=10))
    same(statistics.bincount(tidal.tensor(x[:0])), torch.bincount(tt(x[:0])))
    for wd in (np.float32, np.float64, np.int64):
        w = rng.standard_normal(20).astype(wd)
        same(statistics.bincount(tidal.tensor(x), tidal.tensor(w)), torch.bincount(tt(x), tt(w)), rtol=1e-6)
    with pytest.raises(RuntimeError, match="1-d non-negative integral"):
        statistics.bincount(tidal.tensor([1, -2]))
    with pytest.raises(RuntimeError, match="1-d non-negative integral"):
        statistics.bincount(tidal.tensor([[1, 2]]))
    with pytest.raises(NotImplementedError, match="\"bincount_cpu\" not implemented for 'Float'"):
        statistics.bincount(tidal.tensor([1.0]))
    with pytest.raises(RuntimeError, match="minlength should be >= 0"):
        statistics.bincount(tidal.tensor([1]), minlength=-1)
    with pytest.raises(RuntimeError, match="weights should be 1-d"):
        statistics.bincount(tidal.tensor([1, 2]), tidal.ones(3))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_histc(dtype):
    x = rng.standard_normal((10, 10)).astype(dtype)
    for args in [(), (10,), (7, -1, 1), (5, 0.5, 0.5), (4, 0, 3)]:
        same(statistics.histc(tidal.tensor(x), *args), torch.histc(tt(x), *args))
    same(statistics.METHODS["histc"](tidal.tensor(x).t(), 6), torch.histc(tt(x).t(), 6))
    same(statistics.histc(tidal.tensor(np.full(3, 2.0, dtype)), 4), torch.histc(tt(np.full(3, 2.0, dtype)), 4))
    same(statistics.histc(tidal.tensor(x[:0]), 3), torch.histc(tt(x[:0]), 3))
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        statistics.histc(tidal.arange(3))
    with pytest.raises(RuntimeError, match="bins must be > 0"):
        statistics.histc(tidal.ones(3), bins=0)
    with pytest.raises(RuntimeError, match="max must be larger than min"):
        statistics.histc(tidal.ones(3), min=2, max=1)


@pytest.mark.parametrize("n,dim", [(1, -1), (2, 0), (0, 1), (5, 1)])
def test_diff(n, dim):
    x = rng.integers(-5, 5, (3, 4))
    pre, app = rng.integers(-5, 5, (3, 4)), rng.integers(-5, 5, (3, 4))
    pre, app = (pre[:1], app[:2]) if dim == 0 else (pre[:, :1], app[:, :2])
    same(statistics.diff(tidal.tensor(x), n, dim), torch.diff(tt(x), n, dim))
    same(statistics.METHODS["diff"](tidal.tensor(x), n, dim, tidal.tensor(pre), tidal.tensor(app)),
         torch.diff(tt(x), n, dim, tt(pre), tt(app)))
    f = rng.standard_normal((4, 3))
    same(statistics.diff(tidal.tensor(f).t(), n, dim), torch.diff(tt(f).t(), n, dim))
    b = rng.random((3, 4)) > 0.5
    same(statistics.diff(tidal.tensor(b), n, dim), torch.diff(tt(b), n, dim))


def test_diff_grad_and_errors():
    a = rng.standard_normal((3, 5))
    x, xt = tidal.tensor(a, requires_grad=True), tt(a).requires_grad_()
    g = rng.standard_normal((3, 3))
    (statistics.diff(x, 2) * tidal.tensor(g)).sum().backward()
    (torch.diff(xt, 2) * tt(g)).sum().backward()
    same(x.grad, xt.grad)
    with pytest.raises(RuntimeError, match="at least one-dimensional"):
        statistics.diff(tidal.tensor(1.0))
    with pytest.raises(RuntimeError, match="order must be non-negative but got -1"):
        statistics.diff(tidal.ones(3), n=-1)
    with pytest.raises(RuntimeError, match="same dimension as input"):
        statistics.diff(tidal.ones(3, 2), prepend=tidal.ones(3))


def test_block_diag():
    parts = [np.array(2.0), np.array([1, 2]), rng.standard_normal((2, 3)).astype(np.float32), np.zeros((0, 2))]
    same(diagonals.block_diag(*[tidal.tensor(p) for p in parts]), torch.block_diag(*[tt(p) for p in parts]))
    same(diagonals.block_diag(tidal.tensor([1, 2])), torch.block_diag(torch.tensor([1, 2])))
    same(diagonals.block_diag(), torch.block_diag())
    with pytest.raises(RuntimeError, match="Input 0 has 3 dimensions"):
        diagonals.block_diag(tidal.ones(2, 2, 2))
    a = rng.standard_normal((2, 2))
    x, xt = tidal.tensor(a, requires_grad=True), tt(a).requires_grad_()
    g = rng.standard_normal((3, 4))
    (diagonals.block_diag(x, tidal.ones(1, 2, dtype=tidal.float64)) * tidal.tensor(g)).sum().backward()
    (torch.block_diag(xt, torch.ones(1, 2, dtype=torch.float64)) * tt(g)).sum().backward()
    same(x.grad, xt.grad)


# -- linalg --------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype,tol", [(np.float32, 1e-4), (np.float64, 1e-10)])
def test_linalg_values(dtype, tol):
    a = rng.standard_normal((2, 3, 3)).astype(dtype)
    s = spd(2).astype(dtype)
    w = rng.standard_normal((2, 4, 3)).astype(dtype)
    same(L.inv(tidal.tensor(a)), torch.linalg.inv(tt(a)), rtol=tol, atol=tol)
    same(torch_names.inverse(tidal.tensor(a).transpose(-1, -2)), torch.inverse(tt(a).transpose(-1, -2)),
         rtol=tol, atol=tol)
    same(torch_names.METHODS["det"](tidal.tensor(a)), torch.det(tt(a)), rtol=tol)
    same(L.cholesky(tidal.tensor(s)), torch.linalg.cholesky(tt(s)), rtol=tol, atol=tol)
    same(L.cholesky(tidal.tensor(s), upper=True), torch.linalg.cholesky(tt(s), upper=True), rtol=tol, atol=tol)
    same(L.pinv(tidal.tensor(w)), torch.linalg.pinv(tt(w)), rtol=tol * 10, atol=tol)
    same(L.svdvals(tidal.tensor(w)), torch.linalg.svdvals(tt(w)), rtol=tol)
    same(L.eigvalsh(tidal.tensor(s)), torch.linalg.eigvalsh(tt(s)), rtol=tol)
    b, v = rng.standard_normal((2, 3, 2)).astype(dtype), rng.standard_normal(3).astype(dtype)
    same(L.solve(tidal.tensor(a), tidal.tensor(b)), torch.linalg.solve(tt(a), tt(b)), rtol=tol * 100, atol=tol)
    same(L.solve(tidal.tensor(a), tidal.tensor(v)), torch.linalg.solve(tt(a), tt(v)), rtol=tol * 100, atol=tol)
    same(L.solve(tidal.tensor(a[0]), tidal.tensor(b)), torch.linalg.solve(tt(a[0]), tt(b)), rtol=tol * 100, atol=tol)
    bl = rng.standard_normal((2, 3)).astype(dtype)
    same(L.solve(tidal.tensor(a), tidal.tensor(bl[:, None]), left=False).squeeze(1), torch.linalg.solve(tt(a), tt(bl[:, None]), left=False)
         .squeeze(1), rtol=tol * 100, atol=tol)


@pytest.mark.parametrize("shape", [(4, 3), (3, 4), (2, 3, 3)])
def test_decompositions(shape):
    a = rng.standard_normal(shape)
    A = tidal.tensor(a)
    for mode in ("reduced", "complete"):
        Q, R = L.qr(A, mode)
        Qt, Rt = torch.linalg.qr(tt(a), mode)
        assert Q.shape == Qt.shape and R.shape == Rt.shape
        np.testing.assert_allclose(Q.numpy() @ R.numpy(), a, atol=1e-10)
        np.testing.assert_allclose(np.abs(R.numpy()), np.abs(Rt.numpy()), atol=1e-10)
    r_only = L.qr(A, "r").R.numpy()
    np.testing.assert_allclose(np.abs(r_only), torch.linalg.qr(tt(a), "r").R.abs().numpy(), atol=1e-10)
    for full in (True, False):
        U, S, Vh = L.svd(A, full_matrices=full)
        Ut, St, Vht = torch.linalg.svd(tt(a), full_matrices=full)
        assert U.shape == Ut.shape and Vh.shape == Vht.shape
        same(S, St, rtol=1e-10)
        k = S.shape[-1]
        np.testing.assert_allclose((U.numpy()[..., :k] * S.numpy()[..., None, :]) @ Vh.numpy()[..., :k, :], a, atol=1e-10)
    s = spd(n=4)
    w, V = L.eigh(tidal.tensor(s))
    same(w, torch.linalg.eigh(tt(s)).eigenvalues, rtol=1e-10)
    np.testing.assert_allclose(V.numpy() @ np.diag(w.numpy()) @ V.numpy().T, s, atol=1e-10)


def test_linalg_errors():
    with pytest.raises(RuntimeError, match="linalg.inv: Expected a floating point or complex tensor as input. Got Long"):
        L.inv(tidal.ones(2, 2, dtype=tidal.int64))
    with pytest.raises(RuntimeError, match="linalg.inv: A must be batches of square matrices, but they are 2 by 3"):
        L.inv(tidal.ones(2, 3))
    with pytest.raises(RuntimeError, match="linalg.det: The input tensor A must have at least 2 dimensions."):
        L.det(tidal.ones(3))
    with pytest.raises(RuntimeError, match="Low precision dtypes not supported. Got Half"):
        L.inv(tidal.ones(2, 2, dtype=tidal.float16))
    with pytest.raises(RuntimeError, match=r"Incompatible shapes of A and B for the equation AX = B \(2x2 and 3x1\)"):
        L.solve(tidal.ones(2, 2), tidal.ones(3))
    with pytest.raises(RuntimeError, match="Expected A and B to have the same dtype"):
        L.solve(tidal.ones(2, 2), tidal.ones(2, dtype=tidal.float64))
    with pytest.raises(RuntimeError, match="unrecognized mode 'foo'"):
        L.qr(tidal.ones(2, 3), mode="foo")
    with pytest.raises(RuntimeError, match="linalg.inv"):  # singular: found by the kernel, raised at sync
        L.inv(tidal.zeros(2, 2)).numpy()
    with pytest.raises(RuntimeError, match="linalg.cholesky"):
        L.cholesky(-tidal.eye(2)).numpy()
    assert L.inv(tidal.eye(2)).numpy()[0, 0] == 1  # the VM keeps working


def _grad_pair(fn_ours, fn_torch, arrays, g):
    ours = [tidal.tensor(a, requires_grad=True) for a in arrays]
    theirs = [tt(a).requires_grad_() for a in arrays]
    (fn_ours(*ours) * tidal.tensor(g)).sum().backward()
    (fn_torch(*theirs) * tt(g)).sum().backward()
    for o, t in zip(ours, theirs):
        same(o.grad, t.grad, rtol=1e-8, atol=1e-10)


def test_linalg_grads():
    a = rng.standard_normal((2, 3, 3)) + 3 * np.eye(3)
    _grad_pair(L.inv, torch.linalg.inv, [a], rng.standard_normal((2, 3, 3)))
    _grad_pair(L.det, torch.linalg.det, [a], rng.standard_normal(2))
    b = rng.standard_normal((2, 3, 2))
    _grad_pair(L.solve, torch.linalg.solve, [a, b], rng.standard_normal((2, 3, 2)))
    _grad_pair(L.solve, torch.linalg.solve, [a, b[0, :, 0]], rng.standard_normal((2, 3)))
    _grad_pair(lambda x: L.matrix_norm(x, 1), lambda x: torch.linalg.matrix_norm(x, 1), [a], rng.standard_normal(2))
    _grad_pair(lambda x: L.norm(x, dim=(1, 2)), lambda x: torch.linalg.norm(x, dim=(1, 2)), [a], rng.standard_normal(2))
    # double backward of inv, and a finite-difference check of det
    x = tidal.tensor(a[0], requires_grad=True)
    (gx,) = tidal.autograd.grad(L.inv(x).sum(), x, create_graph=True)
    xt = tt(a[0]).requires_grad_()
    (gt,) = torch.autograd.grad(torch.linalg.inv(xt).sum(), xt, create_graph=True)
    np.testing.assert_allclose(tidal.autograd.grad(gx.pow(2).sum(), x)[0].numpy(),
                               torch.autograd.grad(gt.pow(2).sum(), xt)[0].numpy(), rtol=1e-8)
    eps, base = 1e-6, a[1]
    x = tidal.tensor(base, requires_grad=True)
    L.det(x).backward()
    numeric = np.zeros_like(base)
    for i in range(3):
        for j in range(3):
            up, down = base.copy(), base.copy()
            up[i, j] += eps
            down[i, j] -= eps
            numeric[i, j] = (np.linalg.det(up) - np.linalg.det(down)) / (2 * eps)
    np.testing.assert_allclose(x.grad.numpy(), numeric, rtol=1e-5)
    # the decompositions have torch's gradients too (tests/test_linalg_grad.py covers them)
    _grad_pair(L.svdvals, torch.linalg.svdvals, [a], rng.standard_normal((2, 3)))


@pytest.mark.parametrize("ord", ["fro", "nuc", 2, -2, 1, -1, math.inf, -math.inf])
def test_matrix_norm(ord):
    a = rng.standard_normal((2, 3, 4))
    same(L.matrix_norm(tidal.tensor(a), ord), torch.linalg.matrix_norm(tt(a), ord), rtol=1e-10)
    same(L.matrix_norm(tidal.tensor(a), ord, (0, 2), keepdim=True),
         torch.linalg.matrix_norm(tt(a), ord, (0, 2), keepdim=True), rtol=1e-10)
    same(L.norm(tidal.tensor(a[0]), ord), torch.linalg.norm(tt(a[0]), ord), rtol=1e-10)


def test_vector_norm_and_norm():
    a = rng.standard_normal((2, 3, 4)).astype(np.float32)
    for ord in (2, 1, 0, math.inf, -math.inf, 3.5):
        same(L.vector_norm(tidal.tensor(a), ord), torch.linalg.vector_norm(tt(a), ord), rtol=1e-5)
        same(L.vector_norm(tidal.tensor(a), ord, dim=(0, 2), keepdim=True),
             torch.linalg.vector_norm(tt(a), ord, dim=(0, 2), keepdim=True), rtol=1e-5)
        same(L.norm(tidal.tensor(a), ord, dim=1), torch.linalg.norm(tt(a), ord, dim=1), rtol=1e-5)
    same(L.norm(tidal.tensor(a)), torch.linalg.norm(tt(a)), rtol=1e-5)
    same(L.norm(tidal.tensor(a[0, 0]), 1), torch.linalg.norm(tt(a[0, 0]), 1), rtol=1e-5)
    with pytest.raises(RuntimeError, match="If dim is not specified but ord is, the input must be 1D or 2D. Got 3D."):
        L.norm(tidal.tensor(a), 2)
    with pytest.raises(TypeError, match="argument 'ord' must be Number, not str"):
        L.vector_norm(tidal.tensor(a), "fro")
    with pytest.raises(RuntimeError, match="linalg.matrix_norm: Order 3 not supported."):
        L.matrix_norm(tidal.tensor(a), 3)
    with pytest.raises(RuntimeError, match="linalg.matrix_norm: The input tensor A must have at least 2 dimensions."):
        L.matrix_norm(tidal.ones(3))


def test_cross_and_matmul_reexported():
    a, b = rng.standard_normal((2, 3)), rng.standard_normal((2, 3))
    same(L.cross(tidal.tensor(a), tidal.tensor(b)), torch.linalg.cross(tt(a), tt(b)))
    same(L.matmul(tidal.tensor(a), tidal.tensor(b).t()), torch.linalg.matmul(tt(a), tt(b).t()))

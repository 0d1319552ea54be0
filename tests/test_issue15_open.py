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


# -- sparse embedding gradients and the optimizers that take them ------------------------------------
IDX = np.array([[1, 2, 1], [4, 1, 0]])


def _embeddings(**kwargs):
    """A torch and a tidal nn.Embedding(6, 3, sparse=True) with the same weights."""
    weight = np.random.default_rng(11).standard_normal((6, 3)).astype(np.float32)
    ref = torch.nn.Embedding(6, 3, sparse=True, **kwargs)
    ours = tidal.nn.Embedding(6, 3, sparse=True, **kwargs)
    with torch.no_grad():
        ref.weight.copy_(torch.from_numpy(weight))
    with tidal.no_grad():
        ours.weight.copy_(tidal.tensor(weight))
    return ours, ref


def _same_sparse(got, want) -> None:
    assert got.is_sparse and want.is_sparse and str(got.layout) == str(want.layout) == "torch.sparse_coo"
    assert got.is_coalesced() == want.is_coalesced() and got._nnz() == want._nnz()
    _same(got._indices(), want._indices())
    _same(got._values(), want._values())
    _same(got.to_dense(), want.to_dense())
    coalesced, expected = got.coalesce(), want.coalesce()
    _same(coalesced.indices(), expected.indices())
    _same(coalesced.values(), expected.values())


@pytest.mark.parametrize("padding_idx", (None, 1))
@pytest.mark.parametrize("square", (True, False), ids=("contiguous", "expanded"))
def test_embedding_sparse_grad_is_sparse_coo(padding_idx, square):
    ours, ref = _embeddings(padding_idx=padding_idx)
    for _ in range(2):
        # a second backward joins its entries to the first's as torch's sparse add: merged where both
        # gradients' values are contiguous, concatenated where one is an expanded view (sum's gradient)
        (ours(tidal.tensor(IDX)) ** (2 if square else 1)).sum().backward()
        (ref(torch.tensor(IDX)) ** (2 if square else 1)).sum().backward()
        _same_sparse(ours.weight.grad, ref.weight.grad)
    assert repr(ours.weight.grad) == repr(ref.weight.grad).replace("torch", "tidal").replace("tidal.sparse_coo",
                                                                                             "torch.sparse_coo")
    w, v = tidal.randn(5, 2, requires_grad=True), torch.randn(5, 2, requires_grad=True)
    (g,) = tidal.autograd.grad(tidal.nn.functional.embedding(tidal.tensor([[1, 3]], dtype=tidal.int32), w,
                                                             sparse=True).sum(), w)
    (h,) = torch.autograd.grad(torch.nn.functional.embedding(torch.tensor([[1, 3]], dtype=torch.int32), v,
                                                             sparse=True).sum(), v)
    _same_sparse(g, h)
    for lib, t in ((tidal, w), (torch, v)):  # every row at padding_idx: an empty gradient
        (e,) = lib.autograd.grad(lib.nn.functional.embedding(lib.tensor([1, 1]), t, padding_idx=1,
                                                             sparse=True).sum(), t)
        assert e.is_sparse and e._nnz() == 0 and tuple(e._indices().shape) == (1, 0)
        with pytest.raises(RuntimeError, match="^embedding_backward: scale_grad_by_freq not supported with "
                                               "sparse gradients$"):
            lib.nn.functional.embedding(lib.tensor([1, 1]), t, scale_grad_by_freq=True, sparse=True).sum().backward()


OPTIMIZERS = {
    "SGD": dict(lr=0.1), "SGD-momentum": dict(lr=0.1, momentum=0.9), "SGD-nesterov": dict(lr=0.1, momentum=0.9,
    nesterov=True), "SGD-maximize": dict(lr=0.1, maximize=True), "SparseAdam": dict(lr=0.1),
    "SparseAdam-maximize": dict(lr=0.1, maximize=True), "Adagrad": dict(lr=0.1),
    "Adagrad-decay": dict(lr=0.1, lr_decay=0.01, initial_accumulator_value=0.1), "Adagrad-eps0": dict(lr=0.1, eps=0),
    "Adagrad-maximize": dict(lr=0.1, maximize=True),
}


@pytest.mark.parametrize("name", OPTIMIZERS)
def test_optimizers_take_sparse_grads_as_torch(name):
    ours, ref = _embeddings()
    kind = name.split("-")[0]
    opt = getattr(tidal.optim, kind)(ours.parameters(), **OPTIMIZERS[name])
    opt_ref = getattr(torch.optim, kind)(ref.parameters(), **OPTIMIZERS[name])
    for step in range(3):
        idx = IDX if step != 1 else IDX[:, :2]  # rows 2 and 4 left out of one step
        for o, module, lib in ((opt, ours, tidal), (opt_ref, ref, torch)):
            o.zero_grad()
            (module(lib.tensor(idx)) ** 2).sum().backward()
            o.step()
        np.testing.assert_allclose(as_numpy(ours.weight.detach()), as_numpy(ref.weight.detach()), rtol=1e-6,
                                   atol=1e-7)
    assert not np.isnan(as_numpy(ours.weight.detach())).any()


@pytest.mark.parametrize("name, kwargs, message", [
    ("Adam", {}, "Adam does not support sparse gradients, please consider SparseAdam instead"),
    ("AdamW", {}, "Adam does not support sparse gradients, please consider SparseAdam instead"),
    ("RMSprop", {}, "RMSprop does not support sparse gradients"),
    ("Adadelta", {}, "Adadelta does not support sparse gradients"),
    ("Adamax", {}, "Adamax does not support sparse gradients"),
    ("NAdam", {}, "NAdam does not support sparse gradients"),
    ("RAdam", {}, "RAdam does not support sparse gradients"),
    ("ASGD", {}, "ASGD does not support sparse gradients"),
    ("Rprop", {}, "Rprop does not support sparse gradients"),
    ("Adafactor", {}, "Adafactor does not support sparse gradients"),
    ("Muon", {}, "Muon does not support sparse gradients"),
    ("SGD", {"weight_decay": 0.1}, "add(sparse, dense) is not supported. Use add(dense, sparse) instead."),
    ("Adagrad", {"weight_decay": 0.1}, "weight_decay option is not compatible with sparse gradients"),
])
def test_optimizers_refuse_sparse_grads_as_torch(name, kwargs, message):
    for lib in (torch, tidal):
        module = lib.nn.Embedding(6, 3, sparse=True)
        opt = getattr(lib.optim, name)(module.parameters(), lr=0.1, **kwargs)
        module(lib.tensor(IDX)).sum().backward()
        with pytest.raises(RuntimeError) as info:
            opt.step()
        assert str(info.value) == message


def test_sparse_adam_refuses_dense_grads():
    for lib in (torch, tidal):
        module = lib.nn.Embedding(6, 3)
        opt = lib.optim.SparseAdam(module.parameters())
        module(lib.tensor(IDX)).sum().backward()
        with pytest.raises(RuntimeError, match="^SparseAdam does not support dense gradients, please consider Adam "
                                               "instead$"):
            opt.step()


def test_dense_then_sparse_grads_accumulate_dense():
    for lib in (tidal, torch):
        w = lib.ones(5, 2, requires_grad=True)
        (w * 2).sum().backward()
        lib.nn.functional.embedding(lib.tensor([1]), w, sparse=True).sum().backward()
        assert not w.grad.is_sparse
        np.testing.assert_array_equal(as_numpy(w.grad), np.array([[2.0, 2], [3, 3], [2, 2], [2, 2], [2, 2]]))


@pytest.mark.parametrize("create_graph", (False, True))
def test_sparse_then_dense_grads_accumulate_dense(create_graph):
    for lib in (tidal, torch):
        w = lib.ones(5, 2, requires_grad=True)
        lib.nn.functional.embedding(lib.tensor([1]), w, sparse=True).sum().backward(create_graph=create_graph)
        (w * 2).sum().backward(create_graph=create_graph)
        assert not w.grad.is_sparse
        np.testing.assert_array_equal(as_numpy(w.grad.detach()), np.array([[2.0, 2], [3, 3], [2, 2], [2, 2],
                                                                          [2, 2]]))


@pytest.mark.parametrize("kwargs", [dict(mode="sum"), dict(mode="mean"), dict(mode="mean", padding_idx=1),
                                    dict(mode="sum", per_sample_weights=(0.5, 2.0, 1.0, 3.0, 1.5))])
def test_embedding_bag_sparse_grad(kwargs):
    weight = np.random.default_rng(12).standard_normal((6, 3)).astype(np.float32)
    grads = []
    for lib in (tidal, torch):
        w, extra = lib.tensor(weight, requires_grad=True), dict(kwargs)
        if "per_sample_weights" in extra:
            extra["per_sample_weights"] = lib.tensor(extra["per_sample_weights"])
        lib.nn.functional.embedding_bag(lib.tensor([1, 2, 4, 1, 5]), w, lib.tensor([0, 2]), sparse=True,
                                        **extra).sum().backward()
        grads.append(w.grad)
    assert grads[0]._nnz() == grads[1]._nnz()
    _same(grads[0]._indices(), grads[1]._indices())
    np.testing.assert_allclose(as_numpy(grads[0]._values()), as_numpy(grads[1]._values()), rtol=1e-6)
    np.testing.assert_allclose(as_numpy(grads[0].to_dense()), as_numpy(grads[1].to_dense()), rtol=1e-6)


# -- bfloat16 has no NumPy dtype in torch ------------------------------------------------------------
def test_bfloat16_numpy_refused_as_torch():
    for lib in (torch, tidal):
        x = lib.ones(2, dtype=lib.bfloat16)
        for call in (lambda: x.numpy(), lambda: x.numpy(force=True), lambda: np.asarray(x)):
            with pytest.raises(TypeError, match="^Got unsupported ScalarType BFloat16$"):
                call()
        assert x.tolist() == [1.0, 1.0] and x.float().numpy().tolist() == [1.0, 1.0]

"""sort, argsort, msort, topk, kthvalue, unique, unique_consecutive, searchsorted, bucketize vs PyTorch."""
from __future__ import annotations

import math

import numpy as np
import pytest

import tidal
from pairs import as_numpy as _np, pair as _pair

torch = pytest.importorskip("torch")
ml_dtypes = pytest.importorskip("ml_dtypes")

DTYPES = ("float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8", "bool")
SHAPES = [(), (0,), (9,), (3, 5), (2, 3, 4), (4, 0, 3)]
DISTINCT_LIMIT = {"int8": 250, "uint8": 250, "bfloat16": 256}  # integers each dtype holds exactly


def _array(rng, shape, dtype: str, layout: str = "contiguous", ties: bool = True) -> np.ndarray:
    """Random values with many ties (or none); floats include nan, inf and -0.0 when ties are allowed."""
    full = tuple(reversed(shape)) if layout == "transposed" else \
        tuple(2 * s for s in shape) if layout == "sliced" else tuple(shape)
    n = int(np.prod(full))
    if dtype == "bool":
        arr = rng.random(full) > 0.5
    elif not ties:  # distinct integers, centred on 0 where the dtype is signed
        assert n <= DISTINCT_LIMIT.get(dtype, 1 << 20), "too many values to be distinct in this dtype"
        arr = (rng.permutation(n).reshape(full) - (0 if dtype == "uint8" else n // 2))
        arr = arr.astype(dtype if dtype != "bfloat16" else np.float32)
    else:
        pool = np.array([0, 1, 2, 3, -1] if dtype not in ("uint8",) else [0, 1, 2, 3, 200])
        if dtype in ("float32", "float64", "float16", "bfloat16"):
            pool = np.array([0.0, -0.0, 1.5, -2.0, math.nan, math.inf, -math.inf, 3.25])
        arr = rng.choice(pool, size=full).astype(dtype if dtype != "bfloat16" else np.float32)
    arr = np.asarray(arr)
    if dtype == "bfloat16":
        arr = arr.astype(ml_dtypes.bfloat16)
    if layout == "transposed":
        return arr.transpose()
    if layout == "sliced":
        return arr[tuple(slice(None, None, 2) for _ in shape)]
    return arr


def _equal(got, want) -> None:
    """Same dtype, shape and values exactly (nan where torch has nan)."""
    assert got.dtype.name == str(want.dtype).split(".")[-1]
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_array_equal(_np(got), _np(want))


@pytest.fixture
def rng():
    return np.random.default_rng(7)


def _dims(shape) -> list:
    return list(range(-max(len(shape), 1), max(len(shape), 1)))


# -- sort, argsort, msort -------------------------------------------------------------------------
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("descending", [False, True])
def test_sort_stable_matches_torch_exactly(rng, shape, dtype, descending):
    ours, theirs = _pair(_array(rng, shape, dtype))
    for dim in _dims(shape):
        got = tidal.sort(ours, dim=dim, descending=descending, stable=True)
        want = torch.sort(theirs, dim=dim, descending=descending, stable=True)
        _equal(got.values, want.values)
        _equal(got.indices, want.indices)
        _equal(tidal.argsort(ours, dim=dim, descending=descending, stable=True),
               torch.argsort(theirs, dim=dim, descending=descending, stable=True))


@pytest.mark.parametrize("layout", ["transposed", "sliced"])
@pytest.mark.parametrize("dtype", ["float32", "int64", "bfloat16"])
def test_sort_non_contiguous(rng, layout, dtype):
    ours, theirs = _pair(_array(rng, (6, 5), dtype, layout))
    for dim in (0, 1):
        got, want = ours.sort(dim=dim, descending=True, stable=True), theirs.sort(dim=dim, descending=True, stable=True)
        _equal(got.values, want.values)
        _equal(got.indices, want.indices)


def test_sort_default_is_stable_and_nan_is_largest():
    values = [3.0, math.nan, 1.0, math.nan, 3.0, -math.inf, 0.0, -0.0]
    for descending in (False, True):
        got = tidal.sort(tidal.tensor(values), descending=descending)
        want = torch.sort(torch.tensor(values), descending=descending, stable=True)
        _equal(got.values, want.values)
        _equal(got.indices, want.indices)


def test_sort_returns_named_tuple():
    result = tidal.tensor([2, 1]).sort()
    values, indices = result
    assert result.values is values and result.indices is indices
    assert type(result).__name__ == "sort"
    assert repr(result).startswith("tidal.return_types.sort(\nvalues=tensor([1, 2]),\nindices=tensor([1, 0]))")


@pytest.mark.parametrize("shape", [(), (5,), (4, 3), (0, 2)], ids=str)
def test_msort(rng, shape):
    ours, theirs = _pair(_array(rng, shape, "float32"))
    _equal(tidal.msort(ours), torch.msort(theirs))
    _equal(ours.msort(), theirs.msort())


def test_sort_errors():
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of \[-2, 1\], but got 2\)"):
        tidal.sort(tidal.ones(3, 4), dim=2)
    with pytest.raises(IndexError, match=r"range of \[-1, 0\], but got 1"):
        tidal.sort(tidal.tensor(1.0), dim=1)
    with pytest.raises(TypeError, match=r"sort\(\): argument 'input' \(position 1\) must be Tensor, not list"):
        tidal.sort([1, 2])
    with pytest.raises(IndexError, match="Dimension out of range"):
        tidal.argsort(tidal.ones(3), dim=-2)


# -- topk, kthvalue -------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(9,), (3, 5), (2, 3, 4), (200,), (3, 150)], ids=str)
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "int64", "int8", "uint8"])
@pytest.mark.parametrize("largest", [True, False])
def test_topk_distinct_values(rng, shape, dtype, largest):
    if np.prod(shape) > DISTINCT_LIMIT.get(dtype, 1 << 20):
        pytest.skip("more values than the dtype holds distinct")
    ours, theirs = _pair(_array(rng, shape, dtype, ties=False))
    for dim in _dims(shape):
        n = shape[dim]
        for k in sorted({0, 1, 2, n // 2, n - 1, n} & set(range(n + 1))):
            got, want = tidal.topk(ours, k, dim, largest), torch.topk(theirs, k, dim, largest)
            _equal(got.values, want.values)
            _equal(got.indices, want.indices)


@pytest.mark.parametrize("shape", [(9,), (3, 40), (300,)], ids=str)
@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "int32"])
@pytest.mark.parametrize("largest", [True, False])
def test_topk_ties_and_nan_values(rng, shape, dtype, largest):
    ours, theirs = _pair(_array(rng, shape, dtype, "transposed" if len(shape) == 2 else "contiguous"))
    for k in (1, 3, shape[0] if len(shape) == 1 else 2):
        got, want = ours.topk(k, 0, largest), theirs.topk(k, 0, largest)
        _equal(got.values, want.values)
        # the indices point at the values they report
        np.testing.assert_array_equal(np.take_along_axis(_np(ours), got.indices.numpy(), 0), _np(got.values))


def test_topk_zero_dim_and_empty():
    for k in (0, 1):
        got, want = tidal.topk(tidal.tensor(2.5), k), torch.topk(torch.tensor(2.5), k)
        _equal(got.values, want.values)
        _equal(got.indices, want.indices)
    got, want = tidal.topk(tidal.ones(0), 0), torch.topk(torch.ones(0), 0)
    _equal(got.values, want.values)
    got, want = tidal.topk(tidal.ones(3, 0), 2, dim=0), torch.topk(torch.ones(3, 0), 2, dim=0)
    _equal(got.indices, want.indices)


def test_topk_errors():
    for k in (6, -1):
        with pytest.raises(RuntimeError, match="selected index k out of range"):
            tidal.topk(tidal.ones(5), k)
    with pytest.raises(RuntimeError, match="selected index k out of range"):
        tidal.topk(tidal.tensor(1.0), 2)
    with pytest.raises(RuntimeError, match="topk does not support bool dtypes on CPU"):
        tidal.topk(tidal.ones(5, dtype=tidal.bool), 2)
    with pytest.raises(TypeError, match=r"topk\(\): argument 'k' \(position 2\) must be int, not float"):
        tidal.topk(tidal.ones(5), 2.0)
    with pytest.raises(TypeError, match="must be int, not bool"):
        tidal.topk(tidal.ones(5), True)
    with pytest.raises(IndexError, match="Dimension out of range"):
        tidal.topk(tidal.ones(3), 2, dim=1)


@pytest.mark.parametrize("shape", [(), (9,), (3, 5), (2, 3, 4)], ids=str)
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "int64", "int16", "uint8"])
@pytest.mark.parametrize("keepdim", [False, True])
def test_kthvalue_distinct_values(rng, shape, dtype, keepdim):
    ours, theirs = _pair(_array(rng, shape, dtype, "transposed", ties=False))
    for dim in _dims(shape):
        n = shape[dim] if shape else 1
        for k in {1, (n + 1) // 2, n}:
            got, want = tidal.kthvalue(ours, k, dim, keepdim), torch.kthvalue(theirs, k, dim, keepdim)
            _equal(got.values, want.values)
            _equal(got.indices, want.indices)
            _equal(ours.kthvalue(k, dim, keepdim).values, want.values)


def test_kthvalue_nan_and_ties(rng):
    ours, theirs = _pair(_array(rng, (4, 30), "float32"))
    for k in (1, 10, 30):
        got, want = tidal.kthvalue(ours, k), torch.kthvalue(theirs, k)
        _equal(got.values, want.values)
        np.testing.assert_array_equal(np.take_along_axis(_np(ours), got.indices.numpy()[:, None], 1)[:, 0],
                                      _np(got.values))


def test_kthvalue_errors_and_empty():
    with pytest.raises(RuntimeError, match=r"kthvalue\(\): selected number k out of range for dimension 0"):
        tidal.kthvalue(tidal.ones(5), 6)
    with pytest.raises(RuntimeError, match="selected number k out of range for dimension 1"):
        tidal.kthvalue(tidal.ones(2, 5), 0)
    with pytest.raises(IndexError, match=r"kthvalue\(\): Expected reduction dim 0 to have non-zero size."):
        tidal.kthvalue(tidal.ones(0), 1)
    with pytest.raises(NotImplementedError, match="\"kthvalue_cpu\" not implemented for 'Bool'"):
        tidal.kthvalue(tidal.ones(3, dtype=tidal.bool), 1)
    got, want = tidal.kthvalue(tidal.ones(3, 0), 2, dim=0), torch.kthvalue(torch.ones(3, 0), 2, dim=0)
    _equal(got.values, want.values)


# -- unique, unique_consecutive --------------------------------------------------------------------
def _same_tuple(got, want) -> None:
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            _equal(g, w)
    else:
        _equal(got, want)


FLAGS = [(False, False), (True, False), (False, True), (True, True)]


@pytest.mark.parametrize("shape", [(), (0,), (12,), (3, 4), (2, 0), (2, 3, 4)], ids=str)
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "int64", "uint8", "bool"])
@pytest.mark.parametrize("flags", FLAGS, ids=str)
def test_unique_flat(rng, shape, dtype, flags):
    ours, theirs = _pair(_array(rng, shape, dtype, "transposed"))
    inverse, counts = flags
    _same_tuple(tidal.unique(ours, return_inverse=inverse, return_counts=counts),
                torch.unique(theirs, return_inverse=inverse, return_counts=counts))
    _same_tuple(ours.unique(sorted=False, return_inverse=inverse, return_counts=counts),
                theirs.unique(sorted=False, return_inverse=inverse, return_counts=counts))
    _same_tuple(tidal.unique_consecutive(ours, return_inverse=inverse, return_counts=counts),
                torch.unique_consecutive(theirs, return_inverse=inverse, return_counts=counts))


@pytest.mark.parametrize("shape", [(6, 2), (3, 4, 2), (5, 0), (0, 3)], ids=str)
@pytest.mark.parametrize("dtype", ["int64", "float32", "bool"])
@pytest.mark.parametrize("flags", FLAGS, ids=str)
def test_unique_along_dim(rng, shape, dtype, flags):
    base = rng.integers(0, 2, size=shape)  # few distinct slices, so some repeat
    arr = base.astype(dtype)
    ours, theirs = _pair(arr)
    inverse, counts = flags
    for dim in range(-len(shape), len(shape)):
        if arr.size == 0 and shape[dim] != 0:
            for fn in ("unique", "unique_consecutive"):
                with pytest.raises(RuntimeError, match="There are 0 sized dimensions, and they aren't selected"):
                    getattr(tidal, fn)(ours, dim=dim)
            continue
        _same_tuple(tidal.unique(ours, dim=dim, return_inverse=inverse, return_counts=counts),
                    torch.unique(theirs, dim=dim, return_inverse=inverse, return_counts=counts))
        _same_tuple(tidal.unique_consecutive(ours, dim=dim, return_inverse=inverse, return_counts=counts),
                    torch.unique_consecutive(theirs, dim=dim, return_inverse=inverse, return_counts=counts))


def test_unique_nan_and_signed_zero():
    values = [math.nan, 1.0, math.nan, 1.0, -0.0, 0.0]
    _same_tuple(tidal.unique(tidal.tensor(values), return_inverse=True, return_counts=True),
                torch.unique(torch.tensor(values), return_inverse=True, return_counts=True))
    _same_tuple(tidal.unique_consecutive(tidal.tensor(values), return_counts=True),
                torch.unique_consecutive(torch.tensor(values), return_counts=True))


def test_unique_errors():
    with pytest.raises(IndexError, match="Dimension specified as 0 but tensor has no dimensions"):
        tidal.unique(tidal.tensor(1.0), dim=0)
    with pytest.raises(IndexError, match="Dimension specified as 0 but tensor has no dimensions"):
        tidal.unique_consecutive(tidal.tensor(1.0), dim=0)
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of \[-2, 1\], but got 2\)"):
        tidal.unique(tidal.ones(2, 3), dim=2)


# -- searchsorted, bucketize -----------------------------------------------------------------------
def _sorted(rng, shape, dtype: str) -> np.ndarray:
    return np.sort(rng.integers(-4, 5, size=shape), axis=-1).astype(dtype)


@pytest.mark.parametrize("bounds_shape,values_shape", [((5,), (7,)), ((5,), ()), ((5,), (2, 3)), ((0,), (3,)),
                                                       ((5,), (0,)), ((2, 5), (2, 3)), ((2, 3, 6), (2, 3, 4)),
                                                       ((2, 0), (2, 3)), ((3, 4), (3, 0))], ids=str)
@pytest.mark.parametrize("dtypes", [("float32", "float32"), ("int64", "int64"), ("int64", "float32"),
                                    ("float64", "int32"), ("float16", "float16"), ("bfloat16", "bfloat16"),
                                    ("uint8", "uint8")], ids=str)
@pytest.mark.parametrize("right", [False, True])
def test_searchsorted(rng, bounds_shape, values_shape, dtypes, right):
    bounds = _sorted(rng, bounds_shape, "float32").astype(dtypes[0] if dtypes[0] != "bfloat16" else
                                                         ml_dtypes.bfloat16)
    if dtypes[0] == "uint8":
        bounds = np.sort(rng.integers(0, 9, size=bounds_shape), axis=-1).astype(np.uint8)
    values = (rng.integers(-5, 10, size=values_shape) / 2).astype(np.float32)
    values = np.asarray(values).astype(dtypes[1] if dtypes[1] != "bfloat16" else ml_dtypes.bfloat16)
    (ob, tb), (ov, tv) = _pair(bounds), _pair(values)
    for kwargs in ({"right": right}, {"side": "right" if right else "left"}, {"right": right, "out_int32": True}):
        _equal(tidal.searchsorted(ob, ov, **kwargs), torch.searchsorted(tb, tv, **kwargs))
    if len(bounds_shape) == 1:
        _equal(tidal.bucketize(ov, ob, right=right), torch.bucketize(tv, tb, right=right))
        _equal(tidal.bucketize(ov, ob, right=right, out_int32=True),
               torch.bucketize(tv, tb, right=right, out_int32=True))


def test_searchsorted_nan_and_inf():
    for bounds in ([1.0, 2.0, 2.0, 3.0, math.nan], [-math.inf, 0.0, math.inf], [1.0, 2.0, 3.0],
                   [math.nan, math.nan]):
        for values in ([[0.0, 2.0], [math.nan, 5.0]], [[math.inf, -math.inf]]):
            for right in (False, True):
                _equal(tidal.searchsorted(tidal.tensor(bounds), tidal.tensor(values), right=right),
                       torch.searchsorted(torch.tensor(bounds), torch.tensor(values), right=right))
        nd_bounds = [bounds, sorted(bounds)]
        _equal(tidal.searchsorted(tidal.tensor(nd_bounds), tidal.tensor([[2.0, math.nan]] * 2)),
               torch.searchsorted(torch.tensor(nd_bounds), torch.tensor([[2.0, math.nan]] * 2)))


@pytest.mark.parametrize("value", [2, 2.5, -7, 1e9, True])
def test_searchsorted_scalar_value(value):
    for bounds in ([1.0, 2.0, 3.0], [1, 2, 3]):
        for right in (False, True):
            _equal(tidal.searchsorted(tidal.tensor(bounds), value, right=right),
                   torch.searchsorted(torch.tensor(bounds), value, right=right))
    _equal(tidal.bucketize(value, tidal.tensor([1.0, 2.0, 3.0])), torch.bucketize(value, torch.tensor([1.0, 2.0, 3.0])))


def test_searchsorted_sorter(rng):
    for shape in ((6,), (2, 6)):
        bounds = rng.integers(-4, 5, size=shape).astype(np.float32)
        order = np.argsort(bounds, axis=-1, kind="stable")
        values = (rng.integers(-5, 10, size=shape[:-1] + (4,)) / 2).astype(np.float32)
        for right in (False, True):
            _equal(tidal.searchsorted(tidal.tensor(bounds), tidal.tensor(values), right=right,
                                      sorter=tidal.tensor(order)),
                   torch.searchsorted(torch.tensor(bounds), torch.tensor(values), right=right,
                                      sorter=torch.tensor(order)))


def test_searchsorted_non_contiguous(rng):
    bounds = np.sort(rng.standard_normal((5, 4)).astype(np.float32), axis=0).T  # rows sorted, transposed
    values = rng.standard_normal((6, 4)).astype(np.float32).T[:, ::2]
    (ob, tb), (ov, tv) = _pair(bounds), _pair(values)
    _equal(tidal.searchsorted(ob, ov), torch.searchsorted(tb, tv))


SEARCH_ERRORS = [
    (lambda m: m.searchsorted(m.ones(2, 3, 4), m.ones(2, 4, 5)), RuntimeError),
    (lambda m: m.searchsorted(m.ones(2, 3, 4), m.ones(3, 5)), RuntimeError),
    (lambda m: m.searchsorted(m.ones(2, 3), m.ones(2)), RuntimeError),
    (lambda m: m.searchsorted(m.ones(2, 3, 4), 2.0), RuntimeError),
    (lambda m: m.searchsorted(m.ones(3, 4), m.tensor(1.0)), RuntimeError),
    (lambda m: m.searchsorted(m.tensor(1.0), m.ones(3)), RuntimeError),
    (lambda m: m.searchsorted(m.ones(4), m.ones(3), side="middle"), RuntimeError),
    (lambda m: m.searchsorted(m.ones(4), m.ones(3), side="left", right=True), RuntimeError),
    (lambda m: m.searchsorted(m.ones(3), m.ones(1), sorter=m.tensor([1, 2])), RuntimeError),
    (lambda m: m.searchsorted(m.ones(3), m.ones(1), sorter=m.tensor([1.0, 2.0, 0.0])), RuntimeError),
    (lambda m: m.searchsorted(m.ones(2, dtype=m.bool), m.ones(1, dtype=m.bool)), NotImplementedError),
    (lambda m: m.bucketize(m.ones(2, 3), m.ones(2, 2)), RuntimeError),
    (lambda m: m.bucketize(m.ones(2, 3), m.tensor(1.0)), RuntimeError),
]


@pytest.mark.parametrize("call,exc", SEARCH_ERRORS)
def test_search_errors_match_torch(call, exc):
    with pytest.raises(exc) as expected:
        call(torch)
    with pytest.raises(exc) as got:
        call(tidal)
    assert str(got.value) == str(expected.value)


def test_searchsorted_sorter_out_of_range_is_raised_by_the_kernel():
    with pytest.raises(RuntimeError, match="sorter index out of range"):  # at the call in sync mode, else at sync
        tidal.searchsorted(tidal.tensor([3.0, 1.0, 2.0]), tidal.tensor([2.5]), sorter=tidal.tensor([1, 2, 5])).numpy()
    assert tidal.sort(tidal.tensor([2, 1])).values.tolist() == [1, 2]  # the VM keeps working

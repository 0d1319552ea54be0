"""Indexing, gather/scatter and masks compared with PyTorch: values, views, errors, kernel failures."""
from __future__ import annotations

import sys
import warnings

import numpy as np
import pytest

import tidal

torch = pytest.importorskip("torch")

DTYPES = ["float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8", "bool"]


class Ix:
    """An index tensor in a test case, built for each library from a NumPy array."""

    def __init__(self, data, dtype=None):
        self.data = np.asarray(data, dtype=dtype)

    def __repr__(self) -> str:  # test ids: the same in every process (pytest-xdist's workers compare them)
        return f"Ix({self.data.tolist()}, {self.data.dtype})"


def build(spec, lib):
    """Turn a test index spec into one for `lib` (tidal or torch): Ix become tensors."""
    if isinstance(spec, Ix):
        return lib.from_numpy(spec.data.copy())
    if isinstance(spec, tuple):
        return tuple(build(s, lib) for s in spec)
    return spec


def data(shape, dtype: str, seed: int = 0) -> np.ndarray:
    """Random values of `dtype` (NumPy; bfloat16 is returned as float32 values it can hold exactly)."""
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.random(shape) > 0.5
    if dtype in ("float32", "float64", "float16", "bfloat16"):
        vals = rng.integers(-20, 20, shape) / 4  # exact in every float dtype
        return vals.astype(np.float32 if dtype == "bfloat16" else dtype)
    low = 0 if dtype == "uint8" else -20
    return rng.integers(low, 20, shape).astype(dtype)


def pair(shape, dtype: str = "float32", seed: int = 0):
    """The same random tensor in tidal and torch."""
    arr = data(shape, dtype, seed)
    return tidal.tensor(arr, dtype=getattr(tidal, dtype)), torch.tensor(arr, dtype=getattr(torch, dtype))


def to_numpy(t) -> np.ndarray:
    """Values of a tidal or torch tensor as NumPy (16-bit floats as float32)."""
    if isinstance(t, torch.Tensor):
        return (t.float() if t.dtype in (torch.bfloat16, torch.float16) else t).numpy()
    arr = (t.float() if t.dtype is tidal.bfloat16 else t).numpy()
    return arr.astype(np.float32) if t.dtype is tidal.float16 else arr


def same(ours, theirs) -> None:
    """Shapes, dtypes and values equal."""
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert ours.dtype.name == str(theirs.dtype).replace("torch.", "")
    np.testing.assert_array_equal(to_numpy(ours), to_numpy(theirs))


def close(ours, theirs, rtol=1e-6) -> None:
    """Shapes and dtypes equal, values within `rtol` (loose for 16-bit floats)."""
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert ours.dtype.name == str(theirs.dtype).replace("torch.", "")
    loose = ours.dtype in (tidal.float16, tidal.bfloat16)
    np.testing.assert_allclose(to_numpy(ours), to_numpy(theirs), rtol=2e-2 if loose else rtol,
                               atol=1e-2 if loose else 1e-6)


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        yield


# -- getitem -----------------------------------------------------------------------------------
BASIC = [0, -1, 3, (1, 2), (1, -2, 5), slice(1, 3), slice(None, None, 2), (slice(1, None, 3), 2), (Ellipsis, 1),
         (None, 0), (1, None, slice(None), None), (), Ellipsis, (Ellipsis, None), slice(-10, 10), slice(3, 1),
         slice(10, 20), (slice(None), slice(None), slice(1, 6, 4)), (0, Ellipsis, 0, Ellipsis), (Ellipsis, 0, None),
         Ix(2), (Ix(1), slice(None, None, 2)), (slice(1, 3), Ix(-1, np.int32))]
ADVANCED = [[0, 2], Ix([0, -1]), Ix([[0, 1], [2, 3]]), (Ix([0, 1]), Ix([1, 2])),
            (Ix([0, 1]), slice(None), Ix([1, 2])), (slice(None), Ix([0, 1]), Ix([1, 2])),
            (0, slice(None), Ix([1, 2])), (Ix([[0], [1]]), Ix([1, 2, 3])), Ix([True, False, True, True]),
            Ix(data((4, 5), "bool", 1)), (slice(None), Ix([True, False, True, False, True])),
            Ix(data((4, 5, 6), "bool", 2)), True, False, (True, Ix([0, 1])), (None, Ix([1]), Ellipsis),
            np.array([0, 2]), [True, False, False, True], Ix([3, 0], np.int32), [], Ix(np.zeros(0, np.int64)),
            (Ix(data((4, 5), "bool", 3)), 0), Ix(np.bool_(True)), Ix(np.bool_(False)),
            (Ix([1, 0, 1, 1], np.uint8),), (slice(1, 3), Ix([4, 0]), slice(None, None, 2)),
            (Ellipsis, Ix([5, -6])), Ix(np.zeros((4, 5), bool)), (1, [0, 1], [2, 3]), ([[0, 1]], 2, [[1], [2]])]


@pytest.mark.parametrize("spec", BASIC, ids=repr)
def test_basic_indexing_is_a_view(spec):
    x, tx = pair((4, 5, 6))
    ours, theirs = x[build(spec, tidal)], tx[build(spec, torch)]
    same(ours, theirs)
    assert ours.stride() == theirs.stride()
    assert ours.storage_offset() == theirs.storage_offset()
    assert ours.untyped_storage_id() == x.untyped_storage_id()


@pytest.mark.parametrize("spec", ADVANCED, ids=repr)
def test_advanced_indexing_is_a_copy(spec):
    x, tx = pair((4, 5, 6))
    ours, theirs = x[build(spec, tidal)], tx[build(spec, torch)]
    same(ours, theirs)
    assert ours.untyped_storage_id() != x.untyped_storage_id()


@pytest.mark.parametrize("dtype", DTYPES)
def test_indexing_dtypes(dtype):
    x, tx = pair((3, 4), dtype, seed=4)
    mask = data((3, 4), "bool", 5)
    for spec in (1, (slice(1, None), Ix([0, 2])), Ix(mask), (Ix([2, 0]), Ix([-1, 1]))):
        same(x[build(spec, tidal)], tx[build(spec, torch)])


def test_non_contiguous_sources():
    base = data((5, 6, 7), "float32", 6)
    for arr in (base.transpose(2, 0, 1), base[::2, 1:, ::3]):
        x, tx = tidal.from_numpy(arr), torch.from_numpy(arr.copy())
        assert not x.is_contiguous()
        for spec in (1, (slice(None), 2), (Ix([0, 2]), slice(None, None, 2)), Ix(arr[..., 0] > 0),
                     (Ellipsis, Ix([[1], [0]]))):
            same(x[build(spec, tidal)], tx[build(spec, torch)])


def test_zero_dim_and_empty():
    s, ts = pair((), "int64")
    for spec in ((), Ellipsis, None, True, Ix(np.bool_(False)), (None, None)):
        same(s[build(spec, tidal)], ts[build(spec, torch)])
    e, te = pair((0, 3))
    for spec in (slice(None), (Ellipsis, 1), Ix(np.zeros(0, np.int64)), (slice(None), Ix([2, 0]))):
        same(e[build(spec, tidal)], te[build(spec, torch)])


def test_iteration_uses_views():
    x, tx = pair((3, 2))
    rows = list(x)
    assert len(rows) == 3 and all(r.untyped_storage_id() == x.untyped_storage_id() for r in rows)
    same(rows[2], tx[2])


def test_views_write_through():
    x, tx = pair((4, 5))
    v = x[1:3, ::2]
    tv = tx[1:3, ::2]
    v[0] = 100.0
    tv[0] = 100.0
    v.add_(1)
    tv.add_(1)
    same(x, tx)
    x[2, 0] = -7.0
    tx[2, 0] = -7.0
    same(v, tv)
    w = v[1]  # a view of a view keeps the root as its base
    w.fill_(3.0)
    tx[1:3, ::2][1].fill_(3.0)
    same(x, tx)
    assert w._base is x


def _random_index(rng, ndim):
    """A random index mixing ints, slices, None, Ellipsis, index tensors and masks for an `ndim`-d tensor."""
    items, dims = [], 0
    while dims < ndim and rng.random() < 0.8:
        kind = rng.integers(0, 8)
        if kind == 6:
            items.append(bool(rng.random() < 0.5))
            continue
        if kind == 7:
            items.append(rng.integers(-3, 3, int(rng.integers(0, 3))).tolist())
        elif kind == 0:
            items.append(int(rng.integers(-3, 3)))
        elif kind == 1:
            a, b = sorted(rng.integers(-4, 6, 2).tolist())
            items.append(slice(a if rng.random() < 0.7 else None, b, int(rng.integers(1, 3))))
        elif kind == 2:
            items.append(None)
            continue
        elif kind == 3 and Ellipsis not in items:
            items.append(Ellipsis)
            continue
        elif kind == 4:
            items.append(Ix(rng.integers(-3, 3, tuple(rng.integers(1, 3, rng.integers(0, 3))))))
        else:
            items.append(Ix(rng.random(3) > 0.4))
        dims += 1
    return tuple(items)


@pytest.mark.parametrize("seed", range(6))
def test_random_indices_match_torch(seed):
    rng = np.random.default_rng(seed)
    for _ in range(40):
        x, tx = pair((3,) * int(rng.integers(1, 4)), seed=seed)
        spec = _random_index(rng, x.ndim)
        try:
            theirs = tx[build(spec, torch)]
        except (IndexError, RuntimeError) as exc:
            with pytest.raises(type(exc)):
                x[build(spec, tidal)]
            continue
        same(x[build(spec, tidal)], theirs)
        value = float(rng.integers(-9, 9))
        x[build(spec, tidal)] = value
        tx[build(spec, torch)] = value
        same(x, tx)


def test_sequence_items_and_small_int_tensors():
    x, tx = pair((3, 4))
    for spec in (((0, 2),), ((0, 2), 1), (Ix(np.int16(1)),), (Ix(np.uint8(1)),), (slice(None), [[0], [3]])):
        same(x[build(spec, tidal)], tx[build(spec, torch)])


def test_empty_selections():
    x, tx = pair((3, 4))
    same(x[x > 100], tx[tx > 100])
    same(x[:, []], tx[:, []])
    x[x > 100] = 1.0
    tx[tx > 100] = 1.0
    x[tidal.tensor([], dtype=tidal.int64)] = tidal.ones(4)
    tx[torch.tensor([], dtype=torch.int64)] = torch.ones(4)
    same(x, tx)
    empty = np.zeros((0, 4), np.int64)
    same(x.gather(0, tidal.from_numpy(empty)), tx.gather(0, torch.from_numpy(empty)))
    same(x.scatter(0, tidal.from_numpy(empty), 1.0), tx.scatter(0, torch.from_numpy(empty), 1.0))
    same(x.index_add(0, tidal.tensor([], dtype=tidal.int64), tidal.ones(0, 4)),
         tx.index_add(0, torch.tensor([], dtype=torch.int64), torch.ones(0, 4)))
    same(x.masked_select(x > 100), tx.masked_select(tx > 100))
    same(tidal.nonzero(x > 100), torch.nonzero(tx > 100))


# -- setitem -----------------------------------------------------------------------------------
SET_CASES = [
    (0, 5.0), ((slice(None), 1), -1), ((Ellipsis, slice(None, None, 2)), Ix(np.arange(3, dtype=np.float32))),
    (slice(1, 3), Ix(np.ones((1, 1, 5, 6), np.float32))), ((None, 2), Ix(np.arange(6, dtype=np.float64))),
    (1, Ix(np.arange(6, dtype=np.int64))), (slice(0, 0), 3.0), ((), 1.5), (Ellipsis, Ix(np.float32(2.5))),
    (Ix([0, 2]), 9.0), ((Ix([0, 2]), slice(None), Ix([1, 5])), Ix(np.arange(10, dtype=np.float32).reshape(2, 5))),
    (Ix([[0], [3]]), Ix(np.float32(4))), (Ix(data((4, 5, 6), "bool", 8)), -2.0),
    (Ix(data((4, 5), "bool", 9)), Ix(np.float32(8))), ((slice(None), Ix([True, False, True, False, True])), 7),
    ((1, Ix(data((5, 6), "bool", 10))), 3.5), (Ix(data((4,), "bool", 11)), Ix(np.arange(6, dtype=np.float32))),
    (Ix([1, 1, 2]), Ix(np.ones((1, 3, 5, 6), np.float32))), (True, 6.0), ((0, [0, 4], [1, 2]), 11),
    ([0, 3], True), (Ix(np.zeros(0, np.int64)), 1.0), ((Ellipsis, Ix([-1, 0])), Ix(np.array([1.0, 2.0], np.float32))),
    (Ix(data((4, 5, 6), "bool", 12)), Ix(np.float32(1.25))), ((slice(None), Ix(data((5, 6), "bool", 13))), 0),
]


@pytest.mark.parametrize("spec, value", SET_CASES, ids=repr)
def test_setitem(spec, value):
    x, tx = pair((4, 5, 6))
    x[build(spec, tidal)] = build(value, tidal)
    tx[build(spec, torch)] = build(value, torch)
    same(x, tx)


@pytest.mark.parametrize("dtype", DTYPES)
def test_setitem_dtypes(dtype):
    x, tx = pair((3, 4), dtype, seed=14)
    for spec, value in ((0, 1), ((slice(None), 1), True), (Ix([2, 0]), 0), (Ix(data((3, 4), "bool", 15)), 1)):
        x[build(spec, tidal)] = value
        tx[build(spec, torch)] = value
    vals = data((2, 4), dtype, 16)
    x[[1, 2]] = tidal.tensor(vals, dtype=x.dtype)
    tx[[1, 2]] = torch.tensor(vals, dtype=tx.dtype)
    x[0] = tidal.tensor(data((4,), "float64", 17))  # basic assignment converts the dtype
    tx[0] = torch.tensor(data((4,), "float64", 17))
    same(x, tx)


def test_setitem_float_into_int_truncates():
    x, tx = pair((5,), "int32")
    for spec, value in ((0, 2.7), (slice(1, 3), -1.9), (Ix([3]), 3.99)):
        x[build(spec, tidal)] = value
        tx[build(spec, torch)] = value
    same(x, tx)


def test_setitem_non_contiguous_destination():
    arr = data((6, 5), "float32", 18)
    x, tx = tidal.from_numpy(arr.T), torch.from_numpy(arr.copy()).T
    x[1:, [0, 2]] = -5.0
    tx[1:, [0, 2]] = -5.0
    x[x > 2] = 0.5
    tx[tx > 2] = 0.5
    x[:, 1] = tidal.tensor(np.arange(5.0, dtype=np.float32))
    tx[:, 1] = torch.arange(5.0)
    same(x, tx)
    np.testing.assert_array_equal(arr.T, tx.numpy())  # the NumPy memory was written through


# -- errors ------------------------------------------------------------------------------------
GET_ERRORS = [
    (5, IndexError, "index 5 is out of bounds for dimension 0 with size 3"),
    (-4, IndexError, "index -4 is out of bounds for dimension 0 with size 3"),
    ((0, 5), IndexError, "index 5 is out of bounds for dimension 1 with size 4"),
    ((None, 0, 7), IndexError, "index 7 is out of bounds for dimension 2 with size 4"),
    ((0, 0, 0), IndexError, "too many indices for tensor of dimension 2"),
    (1.0, IndexError, r"only integers, slices \(`:`\), ellipsis \(`...`\), None and long or byte Variables are "
                      r"valid indices \(got float\)"),
    (np.bool_(True), IndexError, r"valid indices \(got numpy.bool\)"),
    ("a", TypeError, "new\\(\\): invalid data type 'str'"),
    (slice(None, None, -1), ValueError, "step must be greater than zero"),
    (slice(None, None, 0), ValueError, "slice step cannot be zero"),
    (slice(1.0, 2), TypeError, "slice indices must be integers or None or have an __index__ method"),
    (Ix([1.0]), IndexError, "tensors used as indices must be long, int, byte or bool tensors"),
    (Ix([1], np.int16), IndexError, "tensors used as indices must be long, int, byte or bool tensors"),
    (Ix([True, False]), IndexError, r"The shape of the mask \[2\] at index 0 does not match the shape of the "
                                    r"indexed tensor \[3, 4\] at index 0"),
    ((Ix([0, 1]), Ix([0, 1, 2])), IndexError, r"shape mismatch: indexing tensors could not be broadcast together "
                                              r"with shapes \[2\], \[3\]"),
]


@pytest.mark.parametrize("spec, exc, match", GET_ERRORS, ids=repr)
def test_getitem_errors(spec, exc, match):
    x, tx = pair((3, 4))
    with pytest.raises(exc, match=match):
        tx[build(spec, torch)]
    with pytest.raises(exc, match=match):
        x[build(spec, tidal)]


def test_zero_dim_errors():
    s, ts = pair(())
    msg = "invalid index of a 0-dim tensor. Use `tensor.item\\(\\)` in Python"
    for lib_t in (ts, s):
        with pytest.raises(IndexError, match=msg):
            lib_t[0]
        with pytest.raises(IndexError, match="too many indices for tensor of dimension 0"):
            lib_t[[0]]


def test_setitem_errors():
    x, tx = pair((3, 4))
    cases = [
        (lambda t, lib: t.__setitem__(0, [1, 2, 3, 4]), TypeError, "can't assign a list to a torch.FloatTensor"),
        (lambda t, lib: t.__setitem__(0, np.ones(4)), TypeError, "can't assign a numpy.ndarray to a torch.FloatTensor"),
        (lambda t, lib: t.__setitem__(0, lib.ones(3)), RuntimeError,
         r"The expanded size of the tensor \(4\) must match the existing size \(3\) at non-singleton dimension 0.  "
         r"Target sizes: \[4\].  Tensor sizes: \[3\]"),
        (lambda t, lib: t.__setitem__(0, lib.ones(2, 4)), RuntimeError,
         r"the number of sizes provided \(1\) must be greater or equal to the number of dimensions in the tensor "
         r"\(2\)"),
        (lambda t, lib: t.__setitem__(lib.tensor([0, 1]), lib.ones(3, 4)), RuntimeError,
         r"shape mismatch: value tensor of shape \[3, 4\] cannot be broadcast to indexing result of shape \[2, 4\]"),
        (lambda t, lib: t.__setitem__(lib.tensor([1]), lib.ones(4, dtype=lib.float64)), RuntimeError,
         "Index put requires the source and destination dtypes match, got Float for the destination and Double "
         "for the source."),
        (lambda t, lib: t.__setitem__(lib.tensor([True, False, True]), lib.ones(1, 3)), RuntimeError,
         "shape mismatch"),
        (lambda t, lib: t.__setitem__(5, 1.0), IndexError, "index 5 is out of bounds for dimension 0 with size 3"),
    ]
    for fn, exc, match in cases:
        with pytest.raises(exc, match=match):
            fn(tx, torch)
        with pytest.raises(exc, match=match):
            fn(x, tidal)


# -- gather / scatter --------------------------------------------------------------------------
def _index(shape, high, seed, dtype=np.int64):
    return np.random.default_rng(seed).integers(0, high, shape).astype(dtype)


def _perm_index(shape, size, dim, seed):
    """Indices along `dim` without repeats within each line (so plain scatter is deterministic)."""
    rng = np.random.default_rng(seed)
    moved = list(shape)
    n = moved.pop(dim)
    lines = [rng.permutation(size)[:n] for _ in range(int(np.prod(moved)))]
    return np.moveaxis(np.array(lines, dtype=np.int64).reshape(moved + [n]), -1, dim)


@pytest.mark.parametrize("dtype", DTYPES)
def test_gather(dtype):
    x, tx = pair((4, 5, 3), dtype, 20)
    for dim, ishape in ((0, (6, 5, 3)), (1, (2, 3, 1)), (-1, (4, 5, 7)), (2, (0, 2, 2))):
        idx = _index(ishape, x.shape[dim], 21, np.int64 if dim else np.int32)
        same(x.gather(dim, tidal.from_numpy(idx)), tx.gather(dim, torch.from_numpy(idx)))
    s, ts = pair((), dtype)
    same(tidal.gather(s, 0, tidal.tensor(0)), torch.gather(ts, 0, torch.tensor(0)))


def test_gather_non_contiguous_and_out():
    arr = data((5, 6), "float32", 22).T
    idx = _index((3, 4), 6, 23)
    x, tx = tidal.from_numpy(arr), torch.from_numpy(arr.copy())
    out = tidal.empty(0)
    assert tidal.gather(x, 0, tidal.from_numpy(idx.T), out=out) is out  # a non-contiguous index too
    same(out, torch.gather(tx, 0, torch.from_numpy(idx.T.copy())))


@pytest.mark.parametrize("dtype", DTYPES)
def test_scatter(dtype):
    x, tx = pair((4, 5), dtype, 24)
    src, tsrc = pair((3, 6), dtype, 25)
    idx = _perm_index((3, 5), 4, 0, 26)
    i, ti = tidal.from_numpy(idx), torch.from_numpy(idx)
    same(x.scatter(0, i, src), tx.scatter(0, ti, tsrc))
    same(x.scatter(0, i, 1), tx.scatter(0, ti, 1))
    same(tidal.scatter(x, 0, i, value=0), torch.scatter(tx, 0, ti, value=0))
    if dtype != "bool":
        close(x.scatter(0, i, src, reduce="add"), tx.scatter(0, ti, tsrc, reduce="add"))
        close(x.scatter(1, i[:, :4].int(), 2, reduce="multiply"), tx.scatter(1, ti[:, :4].int(), 2, reduce="multiply"))
        y, ty = x.clone(), tx.clone()
        assert y.scatter_(0, i, src) is y
        ty.scatter_(0, ti, tsrc)
        same(y, ty)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "int64", "int32", "uint8"])
def test_scatter_add(dtype):
    x, tx = pair((3, 4, 2), dtype, 27)
    src, tsrc = pair((5, 4, 2), dtype, 28)
    idx = _index((5, 3, 2), 3, 29)  # repeated indices accumulate
    close(x.scatter_add(0, tidal.from_numpy(idx), src), tx.scatter_add(0, torch.from_numpy(idx), tsrc))
    y, ty = x.clone(), tx.clone()
    y.scatter_add_(0, tidal.from_numpy(idx), src)
    ty.scatter_add_(0, torch.from_numpy(idx), tsrc)
    close(y, ty)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int64", "int32"])
@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce(dtype, reduce, include_self):
    x, tx = pair((4, 3), dtype, 30)
    src, tsrc = pair((6, 3), dtype, 31)
    idx = _index((6, 3), 3, 32)  # row 3 never written: stays as it was
    ours = x.scatter_reduce(0, tidal.from_numpy(idx), src, reduce, include_self=include_self)
    close(ours, tx.scatter_reduce(0, torch.from_numpy(idx), tsrc, reduce, include_self=include_self), rtol=1e-5)


@pytest.mark.parametrize("dtype", DTYPES)
def test_index_select(dtype):
    x, tx = pair((4, 5, 2), dtype, 33)
    for dim, idx in ((0, np.array([3, 0, 3])), (1, np.array([4], np.int32)), (-1, np.zeros(0, np.int64)),
                     (2, np.array(1))):
        same(x.index_select(dim, tidal.from_numpy(idx)), tx.index_select(dim, torch.from_numpy(idx)))
    s, ts = pair((), dtype)
    same(s.index_select(0, tidal.tensor([0])), ts.index_select(0, torch.tensor([0])))


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "int64", "int16", "uint8"])
def test_index_add_copy_fill(dtype):
    x, tx = pair((5, 3), dtype, 34)
    src, tsrc = pair((5, 4), dtype, 35)
    idx = np.array([2, 0, 2, 1])
    i, ti = tidal.from_numpy(idx), torch.from_numpy(idx)
    alpha = 2 if dtype in ("int64", "int16", "uint8") else 1.5
    close(x.index_add(1, tidal.from_numpy(idx[:3]), src[:, :3]), tx.index_add(1, ti[:3], tsrc[:, :3]))
    close(x.index_add(0, i, src.T[:, :3], alpha=alpha), tx.index_add(0, ti, tsrc.T[:, :3], alpha=alpha))
    same(x.index_copy(0, tidal.tensor([4, 1]), src[:2, :3]), tx.index_copy(0, torch.tensor([4, 1]), tsrc[:2, :3]))
    same(x.index_fill(1, tidal.tensor([0, -1]), 1), tx.index_fill(1, torch.tensor([0, -1]), 1))
    same(x.index_fill(0, tidal.tensor(3), tidal.tensor(0)), tx.index_fill(0, torch.tensor(3), torch.tensor(0)))
    y, ty = x.clone(), tx.clone()
    y.index_add_(0, i, src.T[:, :3]).index_copy_(1, tidal.tensor([2]), src[:, :1]).index_fill_(0, i[:1], 0)
    ty.index_add_(0, ti, tsrc.T[:, :3]).index_copy_(1, torch.tensor([2]), tsrc[:, :1]).index_fill_(0, ti[:1], 0)
    close(y, ty)


def test_index_put():
    x, tx = pair((4, 5))
    vals, tvals = pair((3,), seed=36)
    idx = (np.array([0, 3, 0]), np.array([1, 4, 1]))
    i, ti = tuple(tidal.from_numpy(a) for a in idx), tuple(torch.from_numpy(a) for a in idx)
    close(tidal.index_put(x, i, vals, accumulate=True), torch.index_put(tx, ti, tvals, accumulate=True))
    same(x.index_put(i[:1], tidal.tensor(2.0)), tx.index_put(ti[:1], torch.tensor(2.0)))
    mask = data((4, 5), "bool", 37)
    same(x.index_put((tidal.from_numpy(mask),), tidal.tensor(-1.0)),
         tx.index_put((torch.from_numpy(mask),), torch.tensor(-1.0)))
    y, ty = x.clone(), tx.clone()
    assert y.index_put_([i[0]], tidal.ones(5), accumulate=True) is y
    ty.index_put_([ti[0]], torch.ones(5), accumulate=True)
    same(y, ty)
    with pytest.raises(IndexError, match=r"too many indices for tensor of dimension 2 \(got 3\)"):
        y.index_put_(i + i[:1], tidal.tensor(1.0))
    with pytest.raises(TypeError, match="expected Tensor as element 0 in argument 0, but got NoneType"):
        y.index_put_((None, i[0]), tidal.tensor(1.0))


# -- masks -------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
def test_masked_fill(dtype):
    x, tx = pair((3, 4), dtype, 38)
    m = data((3, 4), "bool", 39)
    row = data((4,), "bool", 40)
    same(x.masked_fill(tidal.from_numpy(m), 1), tx.masked_fill(torch.from_numpy(m), 1))
    same(x[0].masked_fill(tidal.from_numpy(m), 0), tx[0].masked_fill(torch.from_numpy(m), 0))  # broadcast
    same(tidal.masked_fill(x, tidal.from_numpy(row), tidal.tensor(2.5)),
         torch.masked_fill(tx, torch.from_numpy(row), torch.tensor(2.5)))
    y, ty = x.clone(), tx.clone()
    assert y.masked_fill_(tidal.from_numpy(row), True) is y
    ty.masked_fill_(torch.from_numpy(row), True)
    same(y, ty)


def test_masked_fill_fuses():
    x = tidal.tensor(np.arange(6.0, dtype=np.float32))
    m = x > 2
    prev = tidal.vm.get_fusion()["enabled"]
    tidal.vm.reset_stats()
    y = (x.masked_fill(m, 0.0) * 2).numpy()
    np.testing.assert_array_equal(y, [0, 2, 4, 0, 0, 0])
    if prev and tidal.vm.get_mode() == "async":
        assert tidal.vm.stats()["fused_away"] >= 1


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "int64", "bool"])
def test_masked_scatter_and_select(dtype):
    x, tx = pair((3, 4), dtype, 41)
    src, tsrc = pair((15,), dtype, 42)
    m, row = data((3, 4), "bool", 43), data((4,), "bool", 44)
    for mask in (m, row):
        same(x.masked_scatter(tidal.from_numpy(mask), src), tx.masked_scatter(torch.from_numpy(mask), tsrc))
        same(x.masked_select(tidal.from_numpy(mask)), tx.masked_select(torch.from_numpy(mask)))
    same(x[1].masked_scatter(tidal.from_numpy(m), src), tx[1].masked_scatter(torch.from_numpy(m), tsrc))
    same(tidal.masked_select(x[0], tidal.from_numpy(m)), torch.masked_select(tx[0], torch.from_numpy(m)))
    y, ty = x[:, ::2], tx[:, ::2]  # in place on a non-contiguous view
    y.masked_scatter_(tidal.from_numpy(m[:, :2]), src)
    ty.masked_scatter_(torch.from_numpy(m[:, :2]), tsrc)
    same(x, tx)


@pytest.mark.parametrize("dtype", DTYPES)
def test_nonzero_argwhere(dtype):
    for shape in ((3, 4), (5,), (), (0, 2), (2, 1, 3)):
        x, tx = pair(shape, dtype, 45)
        same(tidal.nonzero(x), torch.nonzero(tx))
        same(x.argwhere(), tx.argwhere())
        for ours, theirs in zip(x.nonzero(as_tuple=True), tx.nonzero(as_tuple=True), strict=True):
            same(ours, theirs)
    same(tidal.where(tidal.tensor([0, 3, 0, 1]))[0], torch.where(torch.tensor([0, 3, 0, 1]))[0])


# -- take / put --------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
def test_take_and_put(dtype):
    x, tx = pair((3, 4), dtype, 46)
    idx = np.array([[0, -1], [11, -12], [5, 5]])
    same(x.take(tidal.from_numpy(idx)), tx.take(torch.from_numpy(idx)))
    same(x[:, 1:].take(tidal.from_numpy(idx % 9)), tx[:, 1:].take(torch.from_numpy(idx % 9)))
    src, tsrc = pair((4,), dtype, 47)
    flat = np.array([1, -1, 6, 0])
    same(x.put(tidal.from_numpy(flat), src), tx.put(torch.from_numpy(flat), tsrc))
    if dtype != "bool":
        close(x.put(tidal.from_numpy(flat % 2), src, accumulate=True),
              tx.put(torch.from_numpy(flat % 2), tsrc, accumulate=True))
    y, ty = x[:, ::2], tx[:, ::2]  # a non-contiguous destination
    y.put_(tidal.from_numpy(flat - 1), src)
    ty.put_(torch.from_numpy(flat - 1), tsrc)
    same(x, tx)


def test_take_along_dim():
    x, tx = pair((3, 4, 5))
    cases = [(np.array([[[0, -1]]]), 2), (_index((3, 2, 1), 4, 49), 1), (_index((2, 4, 1), 3, 50), 0),
             (np.array([5, -1, 0]) % 60, None), (np.zeros((3, 0, 5), np.int64), 1)]
    for idx, dim in cases:
        same(x.take_along_dim(tidal.from_numpy(idx), dim), tx.take_along_dim(torch.from_numpy(idx), dim))
    same(tidal.take_along_dim(x, tidal.from_numpy(cases[0][0]), dim=-1),
         torch.take_along_dim(tx, torch.from_numpy(cases[0][0]), dim=-1))


def test_out_arguments_are_resized():
    x, tx = pair((3, 4))
    cases = [(lambda lib, t, o: lib.index_select(t, 1, lib.tensor([3, 0]), out=o), "float32"),
             (lambda lib, t, o: lib.take(t, lib.tensor([[1, -1]]), out=o), "float32"),
             (lambda lib, t, o: lib.masked_select(t, t > 0, out=o), "float32"),
             (lambda lib, t, o: lib.nonzero(t > 0, out=o), "int64"),
             (lambda lib, t, o: lib.take_along_dim(t, lib.tensor([[0], [2], [1]]), 1, out=o), "float32")]
    for fn, dtype in cases:
        out, tout = tidal.empty(0, dtype=getattr(tidal, dtype)), torch.empty(0, dtype=getattr(torch, dtype))
        assert fn(tidal, x, out) is out
        fn(torch, tx, tout)
        same(out, tout)


def test_zero_dim_inputs():
    s, ts = pair((), "float32", 51)
    same(s.take_along_dim(tidal.tensor(0)), ts.take_along_dim(torch.tensor(0)))
    same(s.scatter(0, tidal.tensor(0), 5.0), ts.scatter(0, torch.tensor(0), 5.0))
    same(s.index_fill(0, tidal.tensor(0), 2.0), ts.index_fill(0, torch.tensor(0), 2.0))
    same(s.index_add(0, tidal.tensor([0]), s), ts.index_add(0, torch.tensor([0]), ts))
    same(s.put(tidal.tensor([0]), tidal.tensor([7.0])), ts.put(torch.tensor([0]), torch.tensor([7.0])))
    same(s.masked_select(tidal.tensor(True)), ts.masked_select(torch.tensor(True)))
    with pytest.raises(IndexError, match="Dimension specified as 0 but tensor has no dimensions"):
        s.take_along_dim(tidal.tensor(0), 0)


OVERLAPS = {
    "scatter_": (lambda t, lib: t.scatter_(0, lib.tensor([[1, 0]]), t), True),
    "scatter_add_": (lambda t, lib: t.scatter_add_(0, lib.tensor([[1, 0]]), t), True),
    "scatter_reduce_": (lambda t, lib: t.scatter_reduce_(0, lib.tensor([[1, 0]]), t, "sum"), True),
    "index_add_": (lambda t, lib: t.index_add_(0, lib.tensor([1, 0]), t), True),
    "index_copy_": (lambda t, lib: t.index_copy_(0, lib.tensor([1, 0]), t), True),
    "put_": (lambda t, lib: t.put_(lib.tensor([1, 0]), t[0]), True),
    "index_put_": (lambda t, lib: t.index_put_((lib.tensor([1, 0]),), t), True),
    "gather out": (lambda t, lib: lib.gather(t, 0, lib.tensor([[1, 0]]), out=t[0:1]), True),
    "masked_scatter_": (lambda t, lib: t.masked_scatter_(t > 2, t), False),
    "index_fill_": (lambda t, lib: t.index_fill_(0, lib.tensor([1]), t[0, 1]), False),
    "masked_fill_": (lambda t, lib: t.masked_fill_(t > 1, t[0, 1]), False),
    "setitem": (lambda t, lib: t.__setitem__(lib.tensor([1, 0]), t), True),
    "setitem 0-d": (lambda t, lib: t.__setitem__([1], t[0, 0]), True),
    "setitem mask": (lambda t, lib: t.__setitem__(t > 0, t[0, 0]), False),
}


@pytest.mark.parametrize("name", OVERLAPS)
def test_in_place_overlap(name):
    fn, fails = OVERLAPS[name]
    x, tx = pair((2, 2), seed=52)
    if fails:
        for t, lib in ((tx, torch), (x, tidal)):
            with pytest.raises(RuntimeError, match="unsupported operation: some elements of the input tensor"):
                fn(t, lib)
    else:
        fn(x, tidal)
        fn(tx, torch)
        same(x, tx)


# -- argument errors ---------------------------------------------------------------------------
OP_ERRORS = [
    (lambda t, lib, x: x.gather(0, lib.tensor([[0]], dtype=lib.int16)), RuntimeError,
     r"gather\(\): Expected dtype int32/int64 for index"),
    (lambda t, lib, x: x.gather(0, lib.tensor([0])), RuntimeError,
     "Index tensor must have the same number of dimensions as input tensor"),
    (lambda t, lib, x: x.gather(0, lib.zeros(4, 5, dtype=lib.int64)), RuntimeError,
     r"Size does not match at dimension 1 expected index \[4, 5\] to be no larger than self \[3, 4\] apart from "
     r"dimension 0"),
    (lambda t, lib, x: x.gather(2, lib.zeros(1, 1, dtype=lib.int64)), IndexError,
     r"Dimension out of range \(expected to be in range of \[-2, 1\], but got 2\)"),
    (lambda t, lib, x: x.scatter(0, lib.tensor([[0]]), lib.ones(1, 1, dtype=lib.float64)), RuntimeError,
     r"scatter\(\): Expected self.dtype to be equal to src.dtype"),
    (lambda t, lib, x: x.scatter(0, lib.zeros(2, 2, dtype=lib.int64), lib.ones(1, 2)), RuntimeError,
     r"Expected index \[2, 2\] to be no larger than self \[3, 4\] apart from dimension 0 and to be no larger "
     r"size than src \[1, 2\]"),
    (lambda t, lib, x: x.scatter(0, lib.tensor([[0]]), 1.0, reduce="sum"), RuntimeError,
     "reduce argument must be either add or multiply."),
    (lambda t, lib, x: x.scatter(0, lib.tensor([0]), 1.0), RuntimeError,
     "Index tensor must have the same number of dimensions as self tensor"),
    (lambda t, lib, x: x.scatter_reduce(0, lib.tensor([[0]]), lib.ones(1, 1), "add"), RuntimeError,
     "reduce argument must be either sum, prod, mean, amax or amin, got add"),
    (lambda t, lib, x: x.index_select(0, lib.tensor([[0]])), IndexError,
     r"index_select\(\): Index is supposed to be a vector"),
    (lambda t, lib, x: x.index_select(0, lib.tensor([0.0])), RuntimeError,
     r"index_select\(\): Expected dtype int32 or int64 for index"),
    (lambda t, lib, x: x.index_add(0, lib.tensor([0, 1]), lib.ones(3, 4)), RuntimeError,
     r"index_add_\(\): Number of indices \(2\) should be equal to source.size\(dim\): \(3\), for dim: 0"),
    (lambda t, lib, x: x.index_add(0, lib.tensor([0, 1]), lib.ones(2, 5)), RuntimeError,
     r"source tensor shape must match self tensor shape, excluding the specified dimension. Got self.shape = "
     r"\[3, 4\] source.shape = \[2, 5\]"),
    (lambda t, lib, x: x.index_add(0, lib.tensor([0.0]), lib.ones(1, 4)), RuntimeError,
     r"index_add_\(\): Expected dtype int32/int64 for index but got: Float"),
    (lambda t, lib, x: x.index_add(0, lib.tensor([0]), lib.ones(1, 4, dtype=lib.float64)), RuntimeError,
     r"index_add_\(\): self \(Float\) and source \(Double\) must have the same scalar type"),
    (lambda t, lib, x: x.index_copy(0, lib.tensor([0, 1]), lib.ones(3, 4)), IndexError,
     r"index_copy_\(\): Number of indices \(2\) should be equal to source.size\(dim\) \(3\)"),
    (lambda t, lib, x: x.index_copy(1, lib.tensor([0, 1]), lib.ones(2, 2)), RuntimeError,
     r"index_copy_\(\): Source/destination tensor must have same slice shapes. Destination slice shape: 3 at "
     r"dimension 1 and source slice shape: 2 at dimension 0."),
    (lambda t, lib, x: x.index_copy(0, lib.tensor([0], dtype=lib.int32), lib.ones(1, 4)), RuntimeError,
     r"index_copy_\(\): Expected a long tensor for index, but got Int"),
    (lambda t, lib, x: x.index_fill(0, lib.tensor([0], dtype=lib.int32), 1), IndexError,
     r"index_fill_\(\): Expected dtype int64 for index."),
    (lambda t, lib, x: x.index_fill(0, lib.tensor([0]), lib.tensor([1.0])), RuntimeError,
     r"index_fill_ only supports a 0-dimensional value tensor, but got tensor with 1 dimension\(s\)."),
    (lambda t, lib, x: x.masked_fill(lib.ones(3, 4, dtype=lib.uint8), 1), RuntimeError,
     "masked_fill_ only supports boolean masks, but got mask with dtype unsigned char"),
    (lambda t, lib, x: x.masked_fill(lib.ones(3, 4, dtype=lib.bool), lib.tensor([1.0])), RuntimeError,
     r"masked_fill_ only supports a 0-dimensional value tensor, but got tensor with 1 dimension\(s\)."),
    (lambda t, lib, x: lib.zeros(4).masked_fill_(lib.ones(3, 4, dtype=lib.bool), 1.0), RuntimeError,
     r"output with shape \[4\] doesn't match the broadcast shape \[3, 4\]"),
    (lambda t, lib, x: x.masked_scatter(lib.ones(3, 4, dtype=lib.uint8), lib.ones(12)), RuntimeError,
     "masked_scatter_ only supports boolean masks, but got mask with dtype Byte"),
    (lambda t, lib, x: x.masked_scatter(lib.ones(3, 4, dtype=lib.bool), lib.ones(12, dtype=lib.float64)),
     RuntimeError, "masked_scatter: expected self and source to have same dtypes but gotFloat and Double"),
    (lambda t, lib, x: x.masked_select(lib.ones(3, 4, dtype=lib.uint8)), RuntimeError,
     "masked_select: expected BoolTensor for mask"),
    (lambda t, lib, x: x.masked_select(lib.ones(3, dtype=lib.bool)), RuntimeError,
     r"The size of tensor a \(3\) must match the size of tensor b \(4\) at non-singleton dimension 1"),
    (lambda t, lib, x: x.take(lib.tensor([0], dtype=lib.int32)), RuntimeError,
     r"take\(\): Expected a long tensor for index, but got Int"),
    (lambda t, lib, x: lib.ones(0).take(lib.tensor([0])), IndexError, r"take\(\): tried to take from an empty tensor"),
    (lambda t, lib, x: x.take_along_dim(lib.tensor([[0]], dtype=lib.int32), 0), RuntimeError,
     r"torch.take_along_dim\(\): dtype of indices should be Long but got Int"),
    (lambda t, lib, x: x.take_along_dim(lib.tensor([0]), 1), RuntimeError,
     r"torch.take_along_dim\(\): input and indices should have the same number of dimensions, but got 2 "
     r"dimensions for input, and 1 dimensions for indices"),
    (lambda t, lib, x: x.clone().put_(lib.tensor([0, 1]), lib.ones(3)), IndexError,
     r"put_\(\): Expected source and index to have the same number of elements, but got source.numel\(\) = 3, "
     r"index.numel\(\) = 2"),
    (lambda t, lib, x: x.clone().put_(lib.tensor([0]), lib.ones(1, dtype=lib.float64)), RuntimeError,
     r"put_\(\): self and source expected to have the same dtype, but got self.dtype = Float and "
     r"source.dtype = Double"),
    (lambda t, lib, x: lib.gather(x, 0, lib.tensor([[0]]), out=lib.empty(1, 1, dtype=lib.float64)), RuntimeError,
     "Expected out tensor to have dtype float, but got double instead"),
]


@pytest.mark.parametrize("case", range(len(OP_ERRORS)))
def test_op_argument_errors(case):
    fn, exc, match = OP_ERRORS[case]
    x, tx = pair((3, 4))
    with pytest.raises(exc, match=match):
        fn(None, torch, tx)
    with pytest.raises(exc, match=match):
        fn(None, tidal, x)


# -- errors found by kernels -------------------------------------------------------------------
KERNEL_ERRORS = [
    ("index_select", lambda x, lib: x.index_select(0, lib.tensor([1, 3])), IndexError, "index out of range in self"),
    ("getitem", lambda x, lib: x[lib.tensor([0, 5])], IndexError,
     "index 5 is out of bounds for dimension 0 with size 3"),
    ("getitem", lambda x, lib: x[:, lib.tensor([-5])], IndexError,  # numbered among the indexed dims
     "index -5 is out of bounds for dimension 0 with size 4"),
    ("gather", lambda x, lib: x.gather(1, lib.tensor([[4]])), RuntimeError,
     "index 4 is out of bounds for dimension 1 with size 4"),
    ("gather", lambda x, lib: x.gather(0, lib.tensor([[-1]])), RuntimeError,
     "index -1 is out of bounds for dimension 0 with size 3"),
    ("scatter", lambda x, lib: x.scatter(0, lib.tensor([[3]]), 1.0), RuntimeError,
     "index 3 is out of bounds for dimension 0 with size 3"),
    ("scatter_reduce", lambda x, lib: x.scatter_reduce(0, lib.tensor([[7]]), x, "sum"), RuntimeError,
     "index 7 is out of bounds for dimension 0 with size 3"),
    ("index_add", lambda x, lib: x.index_add(0, lib.tensor([0, 5]), lib.ones(2, 4)), RuntimeError,
     "index 5 is out of bounds for dimension 0 with size 3"),
    ("index_copy", lambda x, lib: x.index_copy(0, lib.tensor([-1]), lib.ones(1, 4)), IndexError,
     r"index_copy_\(\): index -1 is out of bounds for dimension 0 with size 3"),
    ("index_fill", lambda x, lib: x.index_fill(0, lib.tensor([5]), 1), IndexError,
     "index 5 is out of bounds for dimension 0 with size 3"),
    ("take", lambda x, lib: x.take(lib.tensor([12])), IndexError,
     "out of range: tried to access index 12 on a tensor of 12 elements."),
    ("put", lambda x, lib: x.put(lib.tensor([-13]), lib.ones(1)), IndexError,
     "out of range: tried to access index -13 on a tensor of 12 elements."),
    ("masked_scatter", lambda x, lib: x.masked_scatter(x > -100, lib.ones(11)), RuntimeError,
     "Number of elements of source < number of ones in mask"),
    ("index_put", lambda x, lib: x.index_put((lib.tensor([3]),), lib.tensor(1.0)), IndexError,
     "index 3 is out of bounds for dimension 0 with size 3"),
]


@pytest.fixture(params=["sync", "async"])
def vm_mode(request):
    before = tidal.vm.get_mode()
    tidal.vm.set_mode(request.param)
    yield request.param
    tidal.vm.set_mode(before)


@pytest.fixture
def pending_indices(monkeypatch):
    """Index values treated as not computed yet, so only the kernels check them (as for queued indices)."""
    monkeypatch.setattr(sys.modules["tidal.ops.indexing.scatter"], "computed_values", lambda index: None)


@pytest.mark.parametrize("case", range(len(KERNEL_ERRORS)))
def test_kernel_errors_raise_at_sync_and_vm_recovers(case, vm_mode, pending_indices):
    op, fn, exc, match = KERNEL_ERRORS[case]
    x, tx = pair((3, 4))
    with pytest.raises(exc, match=match):
        fn(tx, torch)
    before = (x * 2).numpy().copy()  # an earlier result, computed before the failure
    earlier = x + 1
    named = match if match.startswith(op) else f"{op}: {match}"  # the VM names the op unless the message does
    with pytest.raises(exc, match=f"^{named}"):
        fn(x, tidal)  # sync mode raises here; async mode at the next sync point
        tidal.sync()
    np.testing.assert_array_equal((x * 2).numpy(), before)  # the VM keeps working
    same(earlier, tx + 1)
    same(x[tidal.tensor([0, 2])], tx[torch.tensor([0, 2])])


def test_kernel_error_surfaces_at_the_next_sync(vm_mode, pending_indices):
    x, tx = pair((3, 4))
    good = x.index_select(0, tidal.tensor([2, 0]))
    message = "^index_select: index out of range in self"
    if vm_mode == "sync":
        with pytest.raises(IndexError, match=message):  # debugging mode: at the call
            x.index_select(0, tidal.tensor([9]))
    else:
        bad = x.index_select(0, tidal.tensor([9]))  # returns at once; the kernel fails later
        with pytest.raises(IndexError, match=message):
            tidal.sync()
        with pytest.raises(IndexError, match="index out of range in self"):
            bad.numpy()  # the failed result stays unreadable
    later = x.index_select(1, tidal.tensor([3]))
    same(good, tx.index_select(0, torch.tensor([2, 0])))
    same(later, tx.index_select(1, torch.tensor([3])))
    same(x, tx)

"""Which index wins among equal values: the orders of torch's CPU selection kernels, reproduced.

torch's CPU `sort(stable=False)`, `topk`, `mode` and `unique` run the C++ standard library's
unstable algorithms (libstdc++'s introsort `std::sort`, `std::nth_element`, `std::partial_sort`)
on (value, index) pairs compared by value only, and `kthvalue` runs its own median-of-three
quickselect. Among equal values the index each returns is whatever those algorithms leave there,
so matching torch means running the same algorithms step for step. They work here on a
permutation `perm` of row numbers into a key array `key` of shape (n, m): m = 1 for plain values,
m > 1 for unique(dim=)'s lexicographic row order.

Comparisons (`_less`), by `mode`:
  ASC   NaN last:   (!isnan(a) & isnan(b)) | a < b       sort ascending, topk smallest
  DESC  NaN first:  (isnan(a) & !isnan(b)) | a > b       sort descending, topk largest, kthvalue
  LEX   plain `<`, row by row (no NaN rule)              mode, unique(dim=)
Where libstdc++ relies on a sentinel (unguarded loops), the loops here also stop at the range's
ends; with a strict weak order that changes nothing, and it keeps NaN under LEX in bounds.
"""
from __future__ import annotations

import numpy as np

from ...vm.codegen import import_numba_user


def _k():
    """The compiled algorithms (ops/indexing/tie_order_kernels.py): numba is imported on first use, under its lock."""
    return import_numba_user(".tie_order_kernels", __package__)


# -- entry points: NumPy in, NumPy out -------------------------------------------------------------
def _keys(a: np.ndarray) -> np.ndarray:
    """A C-contiguous key array of one of few dtypes (fewer compilations): floats as float64, integers
    and bool as int64 (both exact; uint64 keeps its own type)."""
    if a.dtype.kind in "iub":
        return np.ascontiguousarray(a if a.dtype == np.uint64 else a.astype(np.int64))
    return np.ascontiguousarray(a.astype(np.float64))


def _rows(a: np.ndarray, axis: int, keys: bool = True) -> tuple:
    """(`a` as rows along `axis`, as keys unless not `keys`; the moved shape to undo it)."""
    moved = np.moveaxis(a, axis, -1)
    rows = moved.reshape(-1, moved.shape[-1]) if moved.size else moved.reshape(0, moved.shape[-1])
    return (_keys(rows) if keys else rows), moved.shape


def _unrows(flat: np.ndarray, shape: tuple, axis: int) -> np.ndarray:
    return np.moveaxis(flat.reshape(shape), -1, axis)


# -- without ties: every algorithm gives the same answer -------------------------------------------
# Reproducing std::sort costs numba's import (0.6 s at a fresh program's first sort) and is slower on short
# rows, so on rows of at most SHORT elements the entry points first try NumPy's sort and selection and keep
# their answer where no two values that decide it compare equal and none is NaN: then the order, the
# selection and the k-th index are unique. Longer rows go straight to the compiled algorithms (there
# float32 data often holds equal values: 1M normal samples do; and their topk is faster than NumPy's),
# except float64 rows for a sort, where equal values are rare: 1M of them sort in 90 ms, not 310.
SHORT = 1024


def _try_numpy_sort(rows: np.ndarray) -> bool:
    return rows.shape[1] <= SHORT or rows.dtype == np.float64


def _any_nan(rows: np.ndarray) -> bool:
    return rows.dtype.kind == "f" and bool(np.isnan(rows).any())


def _distinct_sort(rows: np.ndarray, descending: bool) -> np.ndarray | None:
    """Each row's sorting order, or None when a row holds equal values or NaN."""
    if _any_nan(rows):
        return None
    order = np.argsort(rows, axis=1)
    ranked = np.take_along_axis(rows, order, 1)
    if (ranked[:, 1:] == ranked[:, :-1]).any():
        return None
    return order[:, ::-1] if descending else order


def _distinct_topk(rows: np.ndarray, k: int, largest: bool) -> np.ndarray | None:
    """The k largest (smallest) of each row in sorted order, or None when equal values decide which or how
    they are ordered (or a row holds NaN)."""
    n = rows.shape[1]
    if _any_nan(rows) or k == 0:
        return None
    picked = np.argpartition(rows, n - k if largest else k - 1, axis=1)
    picked = picked[:, n - k:] if largest else picked[:, :k]
    values = np.take_along_axis(rows, picked, 1)
    order = np.argsort(values, axis=1)
    values = np.take_along_axis(values, order, 1)
    if (values[:, 1:] == values[:, :-1]).any():
        return None
    edge = values[:, :1] if largest else values[:, -1:]  # the last one taken: equal to none left out
    if ((rows == edge).sum(1) != 1).any():
        return None
    picked = np.take_along_axis(picked, order, 1)
    return picked[:, ::-1] if largest else picked


def sort_order(a: np.ndarray, axis: int, descending: bool) -> np.ndarray:
    """The indices torch's CPU `sort(stable=False)` gives along `axis` (std::sort's order of ties).

    A 1-D integer tensor of at least 32768 elements sorted ascending goes through torch's radix
    sort, which is stable.
    """
    if a.ndim == 1 and not descending and a.dtype.kind in "iu" and a.size >= 32768:
        return np.argsort(a, kind="stable")
    rows, shape = _rows(a, axis, keys=False)
    if rows.size == 0:
        return np.zeros(a.shape, np.int64)
    order = _distinct_sort(rows, descending) if _try_numpy_sort(rows) else None
    if order is None:
        order = _k().sort_rows(_keys(rows), _k().DESC if descending else _k().ASC)
    return _unrows(order, shape, axis)


def topk_order(a: np.ndarray, axis: int, k: int, largest: bool, sorted_: bool) -> np.ndarray:
    """The indices torch's CPU `topk` picks along `axis`, in its order."""
    rows, shape = _rows(a, axis, keys=False)
    # (unsorted: the order std::partial_sort leaves, whatever the values)
    order = _distinct_topk(rows, k, largest) if sorted_ and rows.shape[1] <= SHORT else None
    if order is None:
        kernels = _k()
        order = kernels.topk_rows(_keys(rows), k, kernels.DESC if largest else kernels.ASC, sorted_)
    return _unrows(order, shape[:-1] + (k,), axis)


def kthvalue_index(a: np.ndarray, axis: int, k: int) -> np.ndarray:
    """The index torch's CPU `kthvalue` reports for the k-th smallest (k from 1), keepdim-shaped."""
    rows, shape = _rows(a, axis, keys=False)
    at = None
    if rows.shape[1] <= SHORT and not _any_nan(rows):
        at = np.argpartition(rows, k - 1, axis=1)[:, k - 1:k]
        if ((rows == np.take_along_axis(rows, at, 1)).sum(1) != 1).any():
            at = None  # the k-th value more than once: which index wins is quickselect's
    if at is None:
        at = _k().quick_select_rows(_keys(rows), k - 1)
    return _unrows(at, shape[:-1] + (1,), axis)


def mode_rows(a: np.ndarray, axis: int) -> tuple:
    """torch's CPU mode along `axis`: std::sort by `<`, the first most frequent run, its last index.

    Returns (values, indices), keepdim-shaped.
    """
    rows, shape = _rows(a, axis)
    moved = np.moveaxis(a, axis, -1).reshape(rows.shape)
    perm = _k().sort_rows(rows, _k().LEX) if rows.size else np.zeros(rows.shape, np.int64)
    picked = np.take_along_axis(rows, perm, 1)
    # a run ends where the next element differs (!=, so each NaN is a run of its own)
    ends = np.ones(picked.shape, bool)
    ends[:, :-1] = picked[:, 1:] != picked[:, :-1]
    values = np.empty(rows.shape[0], a.dtype)
    indices = np.empty(rows.shape[0], np.int64)
    for r in range(rows.shape[0]):
        stops = np.flatnonzero(ends[r])
        lengths = np.diff(np.concatenate(([-1], stops)))
        at = stops[int(np.argmax(lengths))]  # argmax: the first longest run
        indices[r] = perm[r, at]
        values[r] = moved[r, indices[r]]
    return _unrows(values, shape[:-1] + (1,), axis), _unrows(indices, shape[:-1] + (1,), axis)


def lex_order(rows: np.ndarray) -> np.ndarray:
    """std::sort's order of the rows of 2-D `rows` compared lexicographically by `<` (unique(dim=))."""
    return _k().sort_lex(_keys(rows))

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

from ..vm.codegen import import_numba_user


def _k():
    """The compiled algorithms (ops/tie_order_kernels.py): numba is imported on first use, under its lock."""
    return import_numba_user(".tie_order_kernels", __package__)


# -- entry points: NumPy in, NumPy out -------------------------------------------------------------
def _keys(a: np.ndarray) -> np.ndarray:
    """A C-contiguous key array of one of few dtypes (fewer compilations): floats as float64, integers
    and bool as int64 (both exact; uint64 keeps its own type)."""
    if a.dtype.kind in "iub":
        return np.ascontiguousarray(a if a.dtype == np.uint64 else a.astype(np.int64))
    return np.ascontiguousarray(a.astype(np.float64))


def _rows(a: np.ndarray, axis: int) -> tuple:
    moved = np.moveaxis(a, axis, -1)
    return _keys(moved.reshape(-1, moved.shape[-1]) if moved.size else moved.reshape(0, moved.shape[-1])), moved.shape


def _unrows(flat: np.ndarray, shape: tuple, axis: int) -> np.ndarray:
    return np.moveaxis(flat.reshape(shape), -1, axis)


def sort_order(a: np.ndarray, axis: int, descending: bool) -> np.ndarray:
    """The indices torch's CPU `sort(stable=False)` gives along `axis` (std::sort's order of ties).

    A 1-D integer tensor of at least 32768 elements sorted ascending goes through torch's radix
    sort, which is stable.
    """
    if a.ndim == 1 and not descending and a.dtype.kind in "iu" and a.size >= 32768:
        return np.argsort(a, kind="stable")
    rows, shape = _rows(a, axis)
    if rows.size == 0:
        return np.zeros(a.shape, np.int64)
    return _unrows(_k().sort_rows(rows, _k().DESC if descending else _k().ASC), shape, axis)


def topk_order(a: np.ndarray, axis: int, k: int, largest: bool, sorted_: bool) -> np.ndarray:
    """The indices torch's CPU `topk` picks along `axis`, in its order."""
    rows, shape = _rows(a, axis)
    kernels = _k()
    order = kernels.topk_rows(rows, k, kernels.DESC if largest else kernels.ASC, sorted_)
    return _unrows(order, shape[:-1] + (k,), axis)


def kthvalue_index(a: np.ndarray, axis: int, k: int) -> np.ndarray:
    """The index torch's CPU `kthvalue` reports for the k-th smallest (k from 1), keepdim-shaped."""
    rows, shape = _rows(a, axis)
    return _unrows(_k().quick_select_rows(rows, k - 1), shape[:-1] + (1,), axis)


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

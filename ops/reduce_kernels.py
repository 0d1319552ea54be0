"""Compiled (numba) reductions along the rows of a C-contiguous array: sum, mean, max and min.

Imported lazily by ops/reduce.py once numba is loaded (see `row_reducer` there). NumPy reduces short
rows slowly (a max over rows of 32 costs ~1.6 ns an element, torch's ~0.15): these loops let LLVM
vectorize across each row. Sums accumulate in float64 in an order the vectorizer picks (fixed for a
build, so reruns give the same bits), like the fused reduction loops; max and min are computed as if
no NaN occurred, then a row holding a NaN gives NaN, as torch's.
"""
from __future__ import annotations

import numpy as np
from numba import njit

_REORDER = {"reassoc"}  # sums: any order of additions (the vectorizer's lanes)


@njit(cache=True, nogil=True, fastmath=_REORDER)
def row_sums(x, out, divisor):
    """out[i] = sum(x[i, :]) / divisor, accumulated in float64."""
    rows, n = x.shape
    for i in range(rows):
        acc = 0.0
        for j in range(n):
            acc += np.float64(x[i, j])
        out[i] = acc / divisor


@njit(cache=True, nogil=True, fastmath={"nnan"})
def _row_max_finite(x, out):
    rows, n = x.shape
    for i in range(rows):
        acc = x[i, 0]
        for j in range(1, n):
            acc = max(acc, x[i, j])
        out[i] = acc


@njit(cache=True, nogil=True, fastmath={"nnan"})
def _row_min_finite(x, out):
    rows, n = x.shape
    for i in range(rows):
        acc = x[i, 0]
        for j in range(1, n):
            acc = min(acc, x[i, j])
        out[i] = acc


@njit(cache=True, nogil=True)
def _nan_rows(x, out):
    # (no fast-math here: it would assume x == x)
    rows, n = x.shape
    for i in range(rows):
        seen = 0
        for j in range(n):
            seen |= np.int32(x[i, j] != x[i, j])
        if seen:
            out[i] = np.nan


@njit(cache=True, nogil=True)
def row_max(x, out):
    """out[i] = max(x[i, :]), NaN if the row holds one (rows of at least one element)."""
    _row_max_finite(x, out)
    _nan_rows(x, out)


@njit(cache=True, nogil=True)
def row_min(x, out):
    """out[i] = min(x[i, :]), NaN if the row holds one (rows of at least one element)."""
    _row_min_finite(x, out)
    _nan_rows(x, out)


def warm() -> None:
    """Compile (or load from numba's cache) each loop for the arrays ops/reduce.py passes: float32 and float64."""
    for dtype in (np.float32, np.float64):
        x, out = np.ones((2, 3), dtype), np.empty(2, dtype)
        row_sums(x, out, 1.0)
        row_max(x, out)
        row_min(x, out)

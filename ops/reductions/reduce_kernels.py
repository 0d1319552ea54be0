"""Compiled (numba) reductions along the rows of a C-contiguous array: sum, mean, max and min.

Loaded by ops/reductions/reduce.py (`_compiled_rows`) through vm.codegen.kernel_module. NumPy reduces short
rows slowly (a max over rows of 32 costs ~1.6 ns an element, torch's ~0.15): these loops let LLVM
vectorize across each row. Sums accumulate in float64 in an order the vectorizer picks (fixed for a
build, so reruns give the same bits), like the fused reduction loops; max and min are computed as if
no NaN occurred, then a row holding a NaN gives NaN, as torch's.
"""
from __future__ import annotations

import numpy as np
from numba import njit

_REORDER = {"reassoc"}  # sums: any order of additions (the vectorizer's lanes)


# -- one row (also the row loops of ops/rowwise/norm_kernels.py and ops/rowwise/softmax_kernels.py; numba's cache of a
# caller does not notice a change here, so a change here wants those caches cleared) -----------------------------------
@njit(cache=True, nogil=True, fastmath=_REORDER)
def row_total(x, i):
    """sum(x[i, :]) in float64."""
    acc = 0.0
    for j in range(x.shape[1]):
        acc += np.float64(x[i, j])
    return acc


@njit(cache=True, nogil=True, fastmath={"nnan"})
def row_top(x, i):
    """max(x[i, :]) as if the row held no NaN (see row_has_nan)."""
    acc = x[i, 0]
    for j in range(1, x.shape[1]):
        acc = max(acc, x[i, j])
    return acc


@njit(cache=True, nogil=True, fastmath={"nnan"})
def row_bottom(x, i):
    """min(x[i, :]) as if the row held no NaN (see row_has_nan)."""
    acc = x[i, 0]
    for j in range(1, x.shape[1]):
        acc = min(acc, x[i, j])
    return acc


@njit(cache=True, nogil=True)
def row_has_nan(x, i):
    """Whether x[i, :] holds a NaN (no fast-math here: it would assume x == x)."""
    seen = 0
    for j in range(x.shape[1]):
        seen |= np.int32(x[i, j] != x[i, j])
    return seen != 0


# -- every row ---------------------------------------------------------------------------------------------
@njit(cache=True, nogil=True)
def row_sums(x, out, divisor):
    """out[i] = sum(x[i, :]) / divisor, accumulated in float64."""
    for i in range(x.shape[0]):
        out[i] = row_total(x, i) / divisor


@njit(cache=True, nogil=True)
def row_max(x, out):
    """out[i] = max(x[i, :]), NaN if the row holds one (rows of at least one element)."""
    for i in range(x.shape[0]):
        out[i] = np.nan if row_has_nan(x, i) else row_top(x, i)


@njit(cache=True, nogil=True)
def row_min(x, out):
    """out[i] = min(x[i, :]), NaN if the row holds one (rows of at least one element)."""
    for i in range(x.shape[0]):
        out[i] = np.nan if row_has_nan(x, i) else row_bottom(x, i)


def warm() -> None:
    """Compile (or load from numba's cache) each loop for the arrays ops/reductions/reduce.py passes: float32 and
    float64."""
    for dtype in (np.float32, np.float64):
        x, out = np.ones((2, 3), dtype), np.empty(2, dtype)
        row_sums(x, out, 1.0)
        row_max(x, out)
        row_min(x, out)

"""Compiled (numba) index_add: slices of a source added into a destination at index positions.

Loaded by ops/indexing/index_ops.py through vm.codegen.kernel_module (`import tidal` never imports numba). NumPy's
`np.add.at` takes about 10 ns per element (an embedding's backward over 1024 rows of 64 cost 0.7 ms); this loop
adds each source slice in index order, as torch's CPU kernel does, so repeated indices sum in the same order to
the bit.
"""
from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def add_slices(dst, index, src, alpha, scaled):
    """dst[p, index[i], q] += src[p, i, q] (times alpha if `scaled`) for (outer, dim, inner) views."""
    outer, k, inner = src.shape
    for p in range(outer):
        for i in range(k):
            row = index[i]
            if scaled:
                for q in range(inner):
                    dst[p, row, q] += src[p, i, q] * alpha
            else:
                for q in range(inner):
                    dst[p, row, q] += src[p, i, q]


def warm() -> None:
    """Compile (or load from numba's cache) the loop for the common calls of ops/indexing/index_ops.py: float32 and
    float64
    slices (alpha in float64 for float32 targets of 2 or more dims, in the target's dtype otherwise) and int64."""
    index = np.zeros(1, np.int64)
    for dtype, alphas in ((np.float32, (np.float64, np.float32)), (np.float64, (np.float64,)), (np.int64, (np.int64,))):
        for alpha in alphas:
            add_slices(np.zeros((1, 1, 1), dtype), index, np.ones((1, 1, 1), dtype), alpha(1), False)

"""Products split over numba's threads: single-threaded OpenBLAS GEMMs on slices of the result.

Loaded by ops/linalg/product_kernels.py through vm.codegen.kernel_module. Each slice of the result is one row-major
`cblas_?gemm` of NumPy's own OpenBLAS, called inside a numba parallel loop with OpenBLAS held to one thread
on the calling thread (`openblas_set_num_threads_local`): one pool of threads then serves products and every
other parallel kernel (vm/intra_op.py). Operands travel as addresses and leading dimensions, so one compiled
signature serves every layout. Importing this module fails where NumPy's BLAS is not an OpenBLAS with these
entry points; the products then stay on np.matmul.
"""
from __future__ import annotations

import ctypes
import glob
import os

import numpy as np
from llvmlite import binding
from numba import njit, prange, types
from numba.extending import overload


def _openblas() -> tuple:
    """(library path, gemm symbol prefix and suffix, BLAS integer type) of NumPy's bundled OpenBLAS."""
    root = os.path.dirname(np.__file__)
    for path in glob.glob(os.path.join(root + ".libs", "*openblas*")):
        lib = ctypes.CDLL(path)
        if not hasattr(lib, "openblas_set_num_threads_local"):
            continue
        for prefix, suffix, integer in (("scipy_cblas_", "64_", types.int64), ("cblas_", "64_", types.int64),
                                        ("scipy_cblas_", "", types.int32), ("cblas_", "", types.int32)):
            if hasattr(lib, f"{prefix}sgemm{suffix}") and hasattr(lib, f"{prefix}dgemm{suffix}"):
                return path, prefix, suffix, integer
    raise ImportError("NumPy's BLAS is not an OpenBLAS with cblas_?gemm and openblas_set_num_threads_local")


_PATH, _PREFIX, _SUFFIX, _INT = _openblas()
binding.load_library_permanently(_PATH)  # numba links the symbols below by name (its cached code too)


def _gemm_signature(real):
    # cblas_?gemm(order, transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc); addresses as intp
    i, p = _INT, types.intp
    return types.void(i, i, i, i, i, i, real, p, i, p, i, real, p, i)


_sgemm = types.ExternalFunction(f"{_PREFIX}sgemm{_SUFFIX}", _gemm_signature(types.float32))
_dgemm = types.ExternalFunction(f"{_PREFIX}dgemm{_SUFFIX}", _gemm_signature(types.float64))
_set_local_threads = types.ExternalFunction("openblas_set_num_threads_local", types.intc(types.intc))
ROW_MAJOR = 101


def gemm(one, beta, ta, tb, m, n, k, pa, lda, pb, ldb, pc, ldc):
    """C = op(A) @ op(B) + beta * C (row-major, addresses and leading dimensions) in the precision of `one` (1.0
    typed); numba code calls it."""


@overload(gemm, inline="always")
def _gemm_typed(one, beta, ta, tb, m, n, k, pa, lda, pb, ldb, pc, ldc):
    blas = _sgemm if one == types.float32 else _dgemm
    return lambda one, beta, ta, tb, m, n, k, pa, lda, pb, ldb, pc, ldc: blas(
        ROW_MAJOR, ta, tb, m, n, k, one, pa, lda, pb, ldb, beta, pc, ldc)


@njit(parallel=True, nogil=True, cache=True)
def split(one, m, n, k, ta, tb, pa, lda, pb, ldb, pc, ldc, a_row, b_col, c_row, c_col, parts):
    """C[m, n] = op(A) @ op(B) in the precision of `one` (1.0 as float32 or float64), in `parts` slices: along m
    (a_row, c_row: bytes per row) when a_row is not 0, else along n (b_col, c_col: bytes per column)."""
    total = m if a_row != 0 else n
    step = (total + parts - 1) // parts
    for t in prange(parts):
        lo = t * step
        hi = min(total, lo + step)
        if hi > lo:
            held = _set_local_threads(1)
            if a_row != 0:
                gemm(one, one - one, ta, tb, hi - lo, n, k, pa + lo * a_row, lda, pb, ldb, pc + lo * c_row, ldc)
            else:
                gemm(one, one - one, ta, tb, m, hi - lo, k, pa, lda, pb + lo * b_col, ldb, pc + lo * c_col, ldc)
            _set_local_threads(held)


@njit(parallel=True, nogil=True, cache=True)
def batch(one, count, m, n, k, ta, tb, pa, lda, pb, ldb, pc, ldc, a_step, b_step, c_step):
    """C[i] = op(A[i]) @ op(B[i]) for each of `count` matrices (steps in bytes; 0 broadcasts), precision of `one`."""
    for i in prange(count):
        held = _set_local_threads(1)
        gemm(one, one - one, ta, tb, m, n, k, pa + i * a_step, lda, pb + i * b_step, ldb, pc + i * c_step, ldc)
        _set_local_threads(held)


def warm() -> None:
    """Compile every kernel (a 2 x 2 product each way, float32 and float64), checking the results."""
    for real in (np.float32, np.float64):
        a = np.arange(4, dtype=real).reshape(2, 2)
        c = np.empty((2, 2), real)
        item, one = a.itemsize, real(1)
        split(one, 2, 2, 2, 111, 111, a.ctypes.data, 2, a.ctypes.data, 2, c.ctypes.data, 2, 2 * item, 0, 2 * item,
              0, 2)
        split_right = np.array_equal(c, a @ a)
        batch(one, 1, 2, 2, 2, 111, 112, a.ctypes.data, 2, a.ctypes.data, 2, c.ctypes.data, 2, 0, 0, 0)
        if not (split_right and np.array_equal(c, a @ a.T)):
            raise RuntimeError("gemm_kernels: a warm-up product came out wrong")

"""Matrix products in pieces small enough that OpenBLAS runs each one on the calling thread.

OpenBLAS threads a GEMM once m * n * k reaches 2 * 65536 * GEMM_MULTITHREAD_THRESHOLD (4 in the
wheels NumPy ships). Its threaded GEMM synchronizes its threads once per block of k, so on a loaded
machine, where a thread often waits for a core, a threaded product measured 3 to 50 times slower
than the same product on one thread (the convolution shapes of a small CNN on two busy cores).
Products cut into pieces under that size never wait on another thread; a piece costs a few
microseconds of call overhead, which the sizes below keep small.
"""
from __future__ import annotations

import numpy as np

ONE_THREAD_SIZE = 2 * 65536 * 4 - 1   # the largest m * n * k OpenBLAS keeps on one thread
MIN_PIECE = 32                        # never cut a dim finer than this, whatever the other two


def matmul_into(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
    """out[...] = a @ b for 2-D arrays (any strides), in pieces of the longer of a's rows and b's
    columns, each run on this thread."""
    (m, k), n = a.shape, b.shape[1]
    if m > n:  # pieces of rows: the transposed problem
        matmul_into(b.T, a.T, out.T)
        return
    step = max(ONE_THREAD_SIZE // max(m * k, 1), MIN_PIECE)
    if step >= n:
        np.matmul(a, b, out=out)
        return
    for s in range(0, n, step):
        np.matmul(a, b[:, s:s + step], out=out[:, s:s + step])


def matmul_summed(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a @ b for 2-D arrays with a long inner dim: the sum of products of pieces of it, each run on
    this thread."""
    m, n = a.shape[0], b.shape[1]
    step = max(ONE_THREAD_SIZE // max(m * n, 1), MIN_PIECE)
    if step >= a.shape[1]:
        return np.matmul(a, b)
    total = np.zeros((m, n), np.result_type(a, b))
    part = np.empty_like(total)
    for s in range(0, a.shape[1], step):
        total += np.matmul(a[:, s:s + step], b[s:s + step], out=part)
    return total

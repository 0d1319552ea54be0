"""Compiled (numba) softmax and log_softmax over the rows of C-contiguous arrays, forward and backward.

Loaded by ops/rowwise/softmax_rows.py through vm.codegen.kernel_module. float32 rows take exp_single (the fused loops'
vectorizable float32 exp); the row max and sums are helpers compiled with relaxed rules (so LLVM vectorizes
them; a row holding a NaN is found apart), sums accumulate in float64.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit, prange, types
from numba.extending import overload

from ..reductions.reduce_kernels import row_has_nan, row_top, row_total
from ..elementwise.scalar_kernels import exp_single


@njit(cache=True, nogil=True, fastmath={"reassoc"})
def _row_dot(a, b, i):
    acc = 0.0
    for j in range(a.shape[1]):
        acc += np.float64(a[i, j]) * np.float64(b[i, j])
    return acc


def exp_of(v):
    """exp_single for float32, np.exp otherwise (chosen when numba types the call)."""


@overload(exp_of, inline="always")
def _exp_typed(v):
    if v == types.float32:
        return lambda v: exp_single(v)
    return lambda v: np.exp(v)


@njit(cache=True, nogil=True, inline="always")
def _forward_row(x, y, log, safe, i):
    n = x.shape[1]
    top = row_top(x, i)
    if top == -np.inf:  # all -inf (row_top does not see a NaN among them): NaN throughout, as torch's
        fill = 0.0 if safe and not row_has_nan(x, i) else np.nan
        for j in range(n):
            y[i, j] = fill
        return
    for j in range(n):
        y[i, j] = exp_of(x[i, j] - top)
    total = row_total(y, i)
    if total != total:  # a NaN in the row (or +inf: inf - inf) made the sum NaN: NaN throughout, as torch's
        for j in range(n):
            y[i, j] = np.nan
        return
    if log:
        log_total = math.log(total)
        for j in range(n):
            y[i, j] = (x[i, j] - top) - log_total
    else:
        scale = 1.0 / total
        for j in range(n):
            y[i, j] = y[i, j] * scale


@njit(cache=True, nogil=True)
def forward(x, y, log, safe):
    """y = softmax(x) (log_softmax if `log`) along each row; a row that is all -inf gives NaN, as torch's (zeros if
    `safe`: torch's _safe_softmax, which attention uses for fully masked rows)."""
    for i in range(x.shape[0]):
        _forward_row(x, y, log, safe, i)


@njit(cache=True, nogil=True, parallel=True)
def forward_parallel(x, y, log, safe):
    """`forward` with its rows split over numba's threads (the same bits)."""
    for i in prange(x.shape[0]):
        _forward_row(x, y, log, safe, i)


@njit(cache=True, nogil=True, inline="always")
def _backward_row(g, y, grad, log, i):
    n = y.shape[1]
    if log:
        total = row_total(g, i)
        for j in range(n):
            grad[i, j] = g[i, j] - exp_of(y[i, j]) * total
    else:
        dot = _row_dot(g, y, i)
        for j in range(n):
            grad[i, j] = y[i, j] * (g[i, j] - dot)


@njit(cache=True, nogil=True)
def backward(g, y, grad, log):
    """The input gradient of `forward` from its output `y` and output gradient `g`."""
    for i in range(y.shape[0]):
        _backward_row(g, y, grad, log, i)


@njit(cache=True, nogil=True, parallel=True)
def backward_parallel(g, y, grad, log):
    """`backward` with its rows split over numba's threads (the same bits)."""
    for i in prange(y.shape[0]):
        _backward_row(g, y, grad, log, i)


def warm() -> None:
    """Compile (or load from numba's cache) both loops for the arrays ops/rowwise/softmax_rows.py passes: float32."""
    x = np.ones((2, 3), np.float32)
    for run_forward, run_backward in ((forward, backward), (forward_parallel, backward_parallel)):
        run_forward(x, np.empty_like(x), False, False)
        run_backward(x, x, np.empty_like(x), False)

"""Compiled (numba) layer norm over the rows of C-contiguous arrays: forward and backward, one pass each.

Loaded by ops/rowwise/norm_rows.py through vm.codegen.kernel_module. Row statistics accumulate in float64; the sums
along a row are helpers compiled with reassociation (so LLVM vectorizes them), the elementwise parts without
(each element rounds as written).
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from ..reductions.reduce_kernels import row_total


@njit(cache=True, nogil=True, fastmath={"reassoc"})
def _row_square_deviation(x, i, m):
    acc = 0.0
    for j in range(x.shape[1]):
        d = np.float64(x[i, j]) - m
        acc += d * d
    return acc


@njit(cache=True, nogil=True, fastmath={"reassoc"})
def _row_dot_normalized(dy, x, i, m, r):
    acc = 0.0
    for j in range(x.shape[1]):
        acc += np.float64(dy[i, j]) * ((np.float64(x[i, j]) - m) * r)
    return acc


@njit(cache=True, nogil=True, inline="always")
def _forward_row(x, weight, bias, eps, y, mean, rstd, i):
    n = x.shape[1]
    m = row_total(x, i) / n
    r = 1.0 / np.sqrt(_row_square_deviation(x, i, m) / n + eps)
    mean[i] = m
    rstd[i] = r
    for j in range(n):
        v = (np.float64(x[i, j]) - m) * r
        if weight.shape[0]:
            v = v * weight[j]
        if bias.shape[0]:
            v = v + bias[j]
        y[i, j] = v


@njit(cache=True, nogil=True)
def forward(x, weight, bias, eps, y, mean, rstd):
    """y = (x - mean) * rstd * weight + bias per row (weight/bias of length 0: none); mean and rstd per row."""
    for i in range(x.shape[0]):
        _forward_row(x, weight, bias, eps, y, mean, rstd, i)


@njit(cache=True, nogil=True, parallel=True)
def forward_parallel(x, weight, bias, eps, y, mean, rstd):
    """`forward` with its rows split over numba's threads (the same bits)."""
    for i in prange(x.shape[0]):
        _forward_row(x, weight, bias, eps, y, mean, rstd, i)


@njit(cache=True, nogil=True, inline="always")
def _backward_rows(g, x, mean, rstd, weight, dy, grad_input, grad_weight, grad_bias, start, stop):
    n = x.shape[1]
    for i in range(start, stop):
        m, r = np.float64(mean[i]), np.float64(rstd[i])
        for j in range(n):
            dy[i, j] = g[i, j] * weight[j] if weight.shape[0] else g[i, j]
        a = row_total(dy, i) / n
        c = _row_dot_normalized(dy, x, i, m, r) / n
        for j in range(n):
            xhat = (np.float64(x[i, j]) - m) * r
            grad_weight[j] += np.float64(g[i, j]) * xhat
            grad_bias[j] += g[i, j]
        for j in range(n):
            xhat = (np.float64(x[i, j]) - m) * r
            grad_input[i, j] = r * (np.float64(dy[i, j]) - a - xhat * c)


@njit(cache=True, nogil=True)
def backward(g, x, mean, rstd, weight, dy, grad_input, grad_weight, grad_bias):
    """The gradients of `forward` (dy: scratch rows of g * weight); grad_weight/grad_bias (float64) accumulate
    g * xhat and g over the rows."""
    _backward_rows(g, x, mean, rstd, weight, dy, grad_input, grad_weight, grad_bias, 0, x.shape[0])


@njit(cache=True, nogil=True, parallel=True)
def backward_parallel(g, x, mean, rstd, weight, dy, grad_input, grad_weight, grad_bias, parts):
    """`backward` over `parts` blocks of rows on numba's threads: each block sums its own grad_weight/grad_bias,
    then the blocks' sums are added in block order (bits fixed by `parts`, whatever the threads)."""
    rows, n = x.shape
    weights = np.zeros((parts, n))
    biases = np.zeros((parts, n))
    step = (rows + parts - 1) // parts
    for t in prange(parts):
        _backward_rows(g, x, mean, rstd, weight, dy, grad_input, weights[t], biases[t], t * step,
                       min(rows, t * step + step))
    for t in range(parts):
        for j in range(n):
            grad_weight[j] += weights[t, j]
            grad_bias[j] += biases[t, j]


def warm() -> None:
    """Compile (or load from numba's cache) both loops for the arrays ops/rowwise/norm_rows.py passes: float32,
    float64."""
    for dtype in (np.float32, np.float64):
        x, params, rows = np.ones((2, 3), dtype), np.ones(3, dtype), np.ones(2, dtype)
        for run in (forward, forward_parallel):
            run(x, params, params, 1e-5, np.empty_like(x), rows.copy(), rows.copy())
        backward(x, x, rows, rows, params, np.empty((2, 3)), np.empty_like(x), np.zeros(3), np.zeros(3))
        backward_parallel(x, x, rows, rows, params, np.empty((2, 3)), np.empty_like(x), np.zeros(3), np.zeros(3), 2)

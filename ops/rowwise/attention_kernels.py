"""Compiled (numba) loops of ops/rowwise/attention_rows.py: attention's core a head at a time, forward and backward.

Loaded through vm.codegen.kernel_module. A head's products are single-threaded OpenBLAS GEMMs called from the loop
(ops/linalg/gemm_kernels.py): at a small transformer's head sizes (32 x 32 x 16) numba's own loops ran the products 4x
slower, and NumPy's batched matmul pays a call per head anyway. The scores are made in the probabilities' rows and
the softmax runs on them in place (float32 rows take the vectorizable exp of ops/rowwise/softmax_kernels.py), so nothing
but the probabilities is written beside the results. q, k, v and g come as 4-D arrays of any strides (the explicit
signatures take every layout without compiling again: a head whose rows are not contiguous is copied first); the
bias is C-contiguous of shape (1 or B, 1 or H, L, S), or empty; the probabilities are C-contiguous; results may be
strided views whose head rows are contiguous (MHA's packed layout writes each head's rows straight into the
(batch, length, heads x head dim) result). Heads go over numba's threads in the `_parallel` variants.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange, types

from ..linalg.gemm_kernels import _set_local_threads, gemm
from .softmax_kernels import exp_of

_ANY4 = {real: types.Array(real, 4, "A") for real in (types.float32, types.float64)}
_C4 = {real: types.Array(real, 4, "C") for real in (types.float32, types.float64)}
# (scale comes in the arrays' type, so that every loop computes in it: one float64 operand would widen them)
FORWARD_SIGNATURES = [types.void(_ANY4[r], _ANY4[r], _ANY4[r], _C4[r], r, _ANY4[r], _C4[r])
                      for r in (types.float32, types.float64)]
BACKWARD_SIGNATURES = [types.void(_ANY4[r], _ANY4[r], _ANY4[r], _ANY4[r], _C4[r], r, _ANY4[r], _ANY4[r], _ANY4[r])
                       for r in (types.float32, types.float64)]
_NO, _TRANS = 111, 112


@njit(cache=True, nogil=True)
def _matrix(x, a, b):
    """x[a, b] as a row-major BLAS operand: itself when each row is contiguous and rows do not overlap, else a
    contiguous copy."""
    m = x[a, b]
    rows, cols = m.shape
    item = x.itemsize
    if (cols == 1 or m.strides[1] == item) and (rows == 1 or m.strides[0] >= cols * item and m.strides[0] % item == 0):
        return m
    return m.copy()


@njit(cache=True, nogil=True)
def _lead(m):
    """The leading dimension BLAS reads matrix `m` with."""
    return max(m.strides[0] // m.itemsize, m.shape[1], 1)


@njit(cache=True, nogil=True)
def _forward_head(h, q, k, v, bias, scale, out, probs):
    """Head `h` (flat over the two leading dims): probs = safe_softmax(q k^T * scale + bias), out = probs v."""
    heads = q.shape[1]
    a, b = h // heads, h % heads
    length, depth, keys, width = q.shape[2], q.shape[3], k.shape[2], v.shape[3]
    one = np.ones(1, probs.dtype)[0]
    held = _set_local_threads(1)
    qm, km, vm = _matrix(q, a, b), _matrix(k, a, b), _matrix(v, a, b)
    scores = probs[a, b]
    gemm(one, one - one, _NO, _TRANS, length, keys, depth, qm.ctypes.data, _lead(qm), km.ctypes.data, _lead(km),
         scores.ctypes.data, keys)
    has_bias = bias.shape[2] > 0
    ba, bb = (a if bias.shape[0] > 1 else 0), (b if bias.shape[1] > 1 else 0)
    n = np.uint64(keys)  # (unsigned: numba then drops its negative-index wraparound and LLVM vectorizes the rows)
    for i in range(length):
        row = scores[i]
        for j in range(n):
            row[j] *= scale
        if has_bias:
            bias_row = bias[ba, bb, i]
            for j in range(n):
                row[j] += bias_row[j]
        top = row[0]
        for j in range(np.uint64(1), n):
            top = max(top, row[j])  # (a NaN score is not the max: it reaches the row through its exp)
        if top == -np.inf:  # a row masked throughout: zeros, as torch's _safe_softmax
            row[:] = 0
            continue
        for j in range(n):
            row[j] = exp_of(row[j] - top)
        total = 0.0  # (float64)
        for j in range(n):
            total += row[j]
        for j in range(n):
            row[j] = row[j] / total
    om = out[a, b]
    gemm(one, one - one, _NO, _NO, length, width, keys, scores.ctypes.data, keys, vm.ctypes.data, _lead(vm),
         om.ctypes.data, _lead(om))
    _set_local_threads(held)


@njit(cache=True, nogil=True)
def _backward_head(h, g, q, k, v, probs, scale, grad_q, grad_k, grad_v):
    """Head `h`: the gradients of q, k and v from the output gradient g and the saved probabilities."""
    heads = q.shape[1]
    a, b = h // heads, h % heads
    length, depth, keys, width = q.shape[2], q.shape[3], k.shape[2], v.shape[3]
    one = np.ones(1, probs.dtype)[0]
    held = _set_local_threads(1)
    qm, km, vm, gm = _matrix(q, a, b), _matrix(k, a, b), _matrix(v, a, b), _matrix(g, a, b)
    p = probs[a, b]
    ds = np.empty((length, keys), probs.dtype)
    gemm(one, one - one, _NO, _TRANS, length, keys, width, gm.ctypes.data, _lead(gm), vm.ctypes.data, _lead(vm),
         ds.ctypes.data, keys)  # the probabilities' gradient, g v^T
    n = np.uint64(keys)
    for i in range(length):
        p_row, d_row = p[i], ds[i]
        dot = 0.0  # (float64)
        for j in range(n):
            dot += p_row[j] * d_row[j]
        for j in range(n):
            d_row[j] = p_row[j] * (d_row[j] - dot)  # the scores' gradient (softmax backward)
        for j in range(n):
            d_row[j] *= scale
    gq, gk, gv = grad_q[a, b], grad_k[a, b], grad_v[a, b]
    gemm(one, one - one, _NO, _NO, length, depth, keys, ds.ctypes.data, keys, km.ctypes.data, _lead(km),
         gq.ctypes.data, _lead(gq))
    gemm(one, one - one, _TRANS, _NO, keys, depth, length, ds.ctypes.data, keys, qm.ctypes.data, _lead(qm),
         gk.ctypes.data, _lead(gk))
    gemm(one, one - one, _TRANS, _NO, keys, width, length, p.ctypes.data, keys, gm.ctypes.data, _lead(gm),
         gv.ctypes.data, _lead(gv))
    _set_local_threads(held)


@njit(FORWARD_SIGNATURES, parallel=True, nogil=True, cache=True)
def forward_parallel(q, k, v, bias, scale, out, probs):
    """Every head's forward (see _forward_head), heads over numba's threads."""
    for h in prange(q.shape[0] * q.shape[1]):
        _forward_head(h, q, k, v, bias, scale, out, probs)


@njit(FORWARD_SIGNATURES, nogil=True, cache=True)
def forward(q, k, v, bias, scale, out, probs):
    """Every head's forward (see _forward_head) on this thread."""
    for h in range(q.shape[0] * q.shape[1]):
        _forward_head(h, q, k, v, bias, scale, out, probs)


@njit(BACKWARD_SIGNATURES, parallel=True, nogil=True, cache=True)
def backward_parallel(g, q, k, v, probs, scale, grad_q, grad_k, grad_v):
    """Every head's backward (see _backward_head), heads over numba's threads."""
    for h in prange(q.shape[0] * q.shape[1]):
        _backward_head(h, g, q, k, v, probs, scale, grad_q, grad_k, grad_v)


@njit(BACKWARD_SIGNATURES, nogil=True, cache=True)
def backward(g, q, k, v, probs, scale, grad_q, grad_k, grad_v):
    """Every head's backward (see _backward_head) on this thread."""
    for h in range(q.shape[0] * q.shape[1]):
        _backward_head(h, g, q, k, v, probs, scale, grad_q, grad_k, grad_v)


def warm() -> None:
    """Run each kernel on one 2 x 3 head (float32 and float64) and check it against NumPy."""
    for real in (np.float32, np.float64):
        rng = np.random.default_rng(0)
        q, k, v, g = (rng.standard_normal((1, 1) + s).astype(real) for s in ((2, 3), (2, 3), (2, 3), (2, 3)))
        bias = np.array([[[[0.0, -np.inf], [0.5, 0.0]]]], real)
        scores = q[0, 0] @ k[0, 0].T * 0.5 + bias[0, 0]
        p = np.exp(scores - scores.max(1, keepdims=True))
        p /= p.sum(1, keepdims=True)
        ds = p * (g[0, 0] @ v[0, 0].T - (p * (g[0, 0] @ v[0, 0].T)).sum(1, keepdims=True)) * 0.5
        expected = (p @ v[0, 0], ds @ k[0, 0], ds.T @ q[0, 0], p.T @ g[0, 0])
        for fwd, bwd in ((forward, backward), (forward_parallel, backward_parallel)):
            out, probs = np.empty((1, 1, 2, 3), real), np.empty((1, 1, 2, 2), real)
            fwd(q, k, v, bias, real(0.5), out, probs)
            grads = tuple(np.empty((1, 1, 2, 3), real) for _ in range(3))
            bwd(g, q, k, v, probs, real(0.5), *grads)
            strided = np.ascontiguousarray(q.swapaxes(2, 3)).swapaxes(2, 3)  # (a head whose rows are copied first)
            again = np.empty((1, 2, 1, 6), real)[..., :3].swapaxes(1, 2)  # (a result with rows 6 apart)
            fwd(strided, k, v, bias, real(0.5), again, probs)
            for got, want in zip((out, again) + grads, expected[:1] + expected):
                if not np.allclose(got[0, 0], want, rtol=1e-4, atol=1e-5):
                    raise RuntimeError("attention_kernels: a warm-up head came out wrong")

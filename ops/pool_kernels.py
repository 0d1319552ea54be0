"""Compiled (numba) loops for max pooling and window accumulation (col2im).

Imported lazily by the kernels that use them, so `import tidal` never imports numba. Arrays are
(N*C, ...) planes in a dtype numba handles (16-bit floats arrive as float32)."""
from __future__ import annotations

from numba import njit


@njit(cache=True, nogil=True)
def max_pool_forward(x, values, index, kh, kw, sh, sw, dh, dw, top, left, low):
    """Window maxima and their flat (h * W + w) input positions, scanned as PyTorch does: the first
    maximum wins, a NaN always wins (so the last NaN), and a window of nothing above `low` reports
    its first tap inside the image."""
    planes, h, w = x.shape
    oh, ow = values.shape[1], values.shape[2]
    for p in range(planes):
        for i in range(oh):
            y0 = i * sh - top
            for j in range(ow):
                x0 = j * sw - left
                best = low
                at = -1
                for a in range(kh):
                    y = y0 + a * dh
                    if y < 0 or y >= h:
                        continue
                    for b in range(kw):
                        xx = x0 + b * dw
                        if xx < 0 or xx >= w:
                            continue
                        v = x[p, y, xx]
                        if at < 0:
                            at = y * w + xx
                        if v > best or v != v:
                            best = v
                            at = y * w + xx
                values[p, i, j] = best
                index[p, i, j] = at


@njit(cache=True, nogil=True)
def scatter_add_by_index(grad, index, out):
    """out[p, index[p, q]] += grad[p, q] over (planes, positions), in output order as PyTorch adds."""
    planes, positions = grad.shape
    out[...] = 0
    for p in range(planes):
        for q in range(positions):
            out[p, index[p, q]] += grad[p, q]


@njit(cache=True, nogil=True)
def add_windows(target, cols, sh, sw, dh, dw):
    """target[p, y*sh + i*dh, x*sw + j*dw] += cols[p, i, j, y, x] (col2im over (planes, ...) arrays)."""
    planes, kh, kw, oh, ow = cols.shape
    for p in range(planes):
        for i in range(kh):
            for j in range(kw):
                for y in range(oh):
                    row = y * sh + i * dh
                    col = j * dw
                    for x in range(ow):
                        target[p, row, col + x * sw] += cols[p, i, j, y, x]


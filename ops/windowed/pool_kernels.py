"""Compiled (numba) loops for max pooling and window accumulation (col2im).

Imported lazily by the kernels that use them, so `import tidal` never imports numba. Arrays are
(N*C, ...) planes in a dtype numba handles (16-bit floats arrive as float32)."""
from __future__ import annotations

from numba import njit


@njit(cache=True, nogil=True)
def max_pool_forward(x, values, index, kernel, stride, dilation, front, low):
    """Window maxima over (planes, D, H, W) arrays (2-D pools pass D = 1) and their flat (d * H * W +
    h * W + w) input positions, scanned as PyTorch does: the first maximum wins, a NaN always wins (so
    the last NaN), and a window of nothing above `low` reports its first tap inside the image.
    `kernel`, `stride`, `dilation` and `front` (the padding before each dim) are (D, H, W) triples."""
    planes, d, h, w = x.shape
    od, oh, ow = values.shape[1], values.shape[2], values.shape[3]
    kd, kh, kw = kernel
    for p in range(planes):
        for t in range(od):
            z0 = t * stride[0] - front[0]
            for i in range(oh):
                y0 = i * stride[1] - front[1]
                for j in range(ow):
                    x0 = j * stride[2] - front[2]
                    best = low
                    at = -1
                    for c in range(kd):
                        z = z0 + c * dilation[0]
                        if z < 0 or z >= d:
                            continue
                        for a in range(kh):
                            y = y0 + a * dilation[1]
                            if y < 0 or y >= h:
                                continue
                            for b in range(kw):
                                xx = x0 + b * dilation[2]
                                if xx < 0 or xx >= w:
                                    continue
                                v = x[p, z, y, xx]
                                flat = (z * h + y) * w + xx
                                if at < 0:
                                    at = flat
                                if v > best or v != v:
                                    best = v
                                    at = flat
                    values[p, t, i, j] = best
                    index[p, t, i, j] = at


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



@njit(cache=True, nogil=True)
def max_pool_2x2(x, values, index):
    """`max_pool_forward` for the common 2x2 window, stride 2, no padding or dilation, over (planes,
    H, W) arrays. The maximum and the position of its first occurrence are computed without
    branches (on random data the scan's branches mispredict about half the time); a window with a
    NaN, rare, is rescanned with the scan's rule, where the last NaN wins."""
    planes, h, w = x.shape
    oh, ow = values.shape[1], values.shape[2]
    for p in range(planes):
        for i in range(oh):
            top = x[p, 2 * i]
            bottom = x[p, 2 * i + 1]
            best = values[p, i]
            at = index[p, i]
            base = 2 * i * w
            for j in range(ow):
                a, b, c, d = top[2 * j], top[2 * j + 1], bottom[2 * j], bottom[2 * j + 1]
                ab = a if a >= b else b   # ties keep the earlier tap, as the scan does
                cd = c if c >= d else d
                m = ab if ab >= cd else cd
                # the first of a, b, c, d equal to m, as 0..3, with integer arithmetic only
                k = (1 - (a == m)) * (1 + (1 - (b == m)) * (1 + (1 - (c == m))))
                best[j] = m
                at[j] = base + 2 * j + (k & 1) + (k >> 1) * w
            for j in range(ow):
                a, b, c, d = top[2 * j], top[2 * j + 1], bottom[2 * j], bottom[2 * j + 1]
                if a != a or b != b or c != c or d != d:
                    m, k = a, 0
                    if b > m or b != b:
                        m, k = b, 1
                    if c > m or c != c:
                        m, k = c, 2
                    if d > m or d != d:
                        m, k = d, 3
                    best[j] = m
                    at[j] = base + 2 * j + (k & 1) + (k >> 1) * w

"""Compiled (numba) col2im for convolution's input gradient, from batch-inner columns.

Imported lazily by ops/windowed/conv.py, so `import tidal` never imports numba. The columns of an (N, C, H, W)
image are a (C, kh, kw, N, oh, ow) array (one GEMM over the whole batch makes them); taps that fall
in the zero padding are skipped, so no padded image is allocated.
"""
from __future__ import annotations

from numba import njit


@njit(cache=True, nogil=True)
def _span(out: int, start: int, step: int, size: int) -> tuple:
    """The range [lo, hi) of positions o < out whose input o * step + start lies in [0, size)."""
    lo = 0 if start >= 0 else (-start + step - 1) // step
    hi = 0 if start >= size else (size - start + step - 1) // step
    lo = min(lo, out)
    return lo, min(max(hi, lo), out)


@njit(cache=True, nogil=True)
def col2im(cols, image, sh, sw, dh, dw, top, left):
    """image[n, c, y*sh + i*dh - top, x*sw + j*dw - left] = the sum of cols[c, i, j, n, y, x] over the
    windows that cover it: the adjoint of im2col. Both arrays C-contiguous."""
    n_, c_, h, w = image.shape
    kh, kw, oh, ow = cols.shape[1], cols.shape[2], cols.shape[4], cols.shape[5]
    dst = image.ravel()
    src = cols.ravel()
    dst[:] = 0
    at = 0  # start of the (oh, ow) block cols[c, i, j, n]
    for c in range(c_):
        for i in range(kh):
            y_lo, y_hi = _span(oh, i * dh - top, sh, h)
            for j in range(kw):
                start = j * dw - left
                x_lo, x_hi = _span(ow, start, sw, w)
                for n in range(n_):
                    plane = (n * c_ + c) * h * w
                    for y in range(y_lo, y_hi):
                        row = plane + (y * sh + i * dh - top) * w + start
                        block = at + y * ow
                        for q in range(x_lo, x_hi):
                            dst[row + q * sw] += src[block + q]
                    at += oh * ow


@njit(cache=True, nogil=True)
def add_runs(cols, buf, offsets, plane):
    """buf[(n * C + c) * plane + offsets[t] + q] += cols[c, t, n, q]: col2im of unit-stride columns taken as
    contiguous runs of the padded image (ops/windowed/conv_rows.py), a plane at a time so it stays in cache."""
    c_, t_, n_, run = cols.shape
    for n in range(n_):
        for c in range(c_):
            base = (n * c_ + c) * plane
            for t in range(t_):
                src = cols[c, t, n]
                dst = buf[base + offsets[t]:base + offsets[t] + run]
                for q in range(run):
                    dst[q] += src[q]

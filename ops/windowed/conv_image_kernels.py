"""2-D convolution an image at a time: the image's columns (im2col) made in cache, then one BLAS GEMM.

Loaded by ops/windowed/conv.py through vm.codegen.kernel_module. Columns of the whole batch at once (the NumPy path
of ops/windowed/conv.py) are C * kh * kw times the image: the small CNN's 16->32 layer writes 7 MB of them and reads
them back from memory. Made one image at a time they stay in the core's cache (113 KB there), and the
GEMM writes the image's result rows straight into the NCHW result: no transpose of the result after.
Images are split over numba's threads in `parts` fixed slices (the thread count set, so the sums -- the
weight gradient adds the slices' partial sums in order -- do not depend on how many threads run now);
each GEMM is a single-threaded OpenBLAS call (ops/linalg/gemm_kernels.py).

Every array travels flat (C-contiguous, one dtype: float32 or float64) with its sizes in `dims`:
(N, C, H, W, O, oh, ow, kh, kw, sh, sw, dh, dw, top, left, groups). Three kinds of work:
FORWARD      out (N, O, oh, ow) = conv(a: image (N, C, H, W), b: weight (O, C/groups * kh * kw)) + bias (O)
INPUT_GRAD   out (N, C, H, W) = col2im(weight^T @ a: result gradient (N, O, oh, ow)), b: weight; + bias (C)
WEIGHT_GRAD  out (parts, O, C/groups * kh * kw) += b: result gradient @ im2col(a: image)^T, a slice each
(`bias` empty: none.)
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from .conv_kernels import _span
from ..linalg.gemm_kernels import _set_local_threads, gemm

FORWARD, INPUT_GRAD, WEIGHT_GRAD = 0, 1, 2
_NO_TRANS, _TRANS = 111, 112


# The loops below index rows through views with unsigned indices: numba then drops its negative-index wraparound and
# LLVM vectorizes the unit-stride runs (the small CNN's columns 2.1 -> 0.8 ms); slice assignments of a number cost
# more than these loops on rows this short.
@njit(cache=True, nogil=True)
def _zero(row, lo, hi):
    for q in range(np.uint64(lo), np.uint64(hi)):
        row[q] = 0


@njit(cache=True, nogil=True)
def _im2col(x, base, c_, h, w, kh, kw, sh, sw, dh, dw, top, left, oh, ow, cols):
    """cols[(c * kh + i) * kw + j, y * ow + q] = image[c, y*sh + i*dh - top, q*sw + j*dw - left], 0 in the
    padding, for the c_ channels starting at x[base]."""
    positions = oh * ow
    row = 0
    for c in range(c_):
        for i in range(kh):
            y_lo, y_hi = _span(oh, i * dh - top, sh, h)
            for j in range(kw):
                start = j * dw - left
                x_lo, x_hi = _span(ow, start, sw, w)
                tap = cols[row * positions:(row + 1) * positions]
                _zero(tap, 0, y_lo * ow)
                for y in range(y_lo, y_hi):
                    row_at = y * ow
                    _zero(tap, row_at, row_at + x_lo)
                    dst = tap[row_at + x_lo:row_at + x_hi]
                    at = base + (c * h + y * sh + i * dh - top) * w + start + x_lo * sw
                    src = x[at:at + (x_hi - x_lo) * sw]
                    if sw == 1:
                        for q in range(np.uint64(x_hi - x_lo)):
                            dst[q] = src[q]
                    else:
                        for q in range(np.uint64(x_hi - x_lo)):
                            dst[q] = src[q * np.uint64(sw)]
                    _zero(tap, row_at + x_hi, row_at + ow)
                _zero(tap, y_hi * ow, positions)
                row += 1


@njit(cache=True, nogil=True)
def _col2im(cols, image, base, c_, h, w, kh, kw, sh, sw, dh, dw, top, left, oh, ow):
    """image[c, y*sh + i*dh - top, q*sw + j*dw - left] += cols[(c * kh + i) * kw + j, y * ow + q] inside the image,
    for the c_ channels starting at image[base]: the adjoint of _im2col."""
    positions = oh * ow
    row = 0
    for c in range(c_):
        for i in range(kh):
            y_lo, y_hi = _span(oh, i * dh - top, sh, h)
            for j in range(kw):
                start = j * dw - left
                x_lo, x_hi = _span(ow, start, sw, w)
                for y in range(y_lo, y_hi):
                    at = row * positions + y * ow + x_lo
                    src = cols[at:at + x_hi - x_lo]
                    at = base + (c * h + y * sh + i * dh - top) * w + start + x_lo * sw
                    dst = image[at:at + (x_hi - x_lo) * sw]
                    if sw == 1:
                        for q in range(np.uint64(x_hi - x_lo)):
                            dst[q] += src[q]
                    else:
                        for q in range(np.uint64(x_hi - x_lo)):
                            dst[q * np.uint64(sw)] += src[q]
                row += 1


@njit(cache=True, nogil=True)
def _part(kind, one, a, b, bias, out, scratch, dims, part, parts):
    """The images of slice `part` (of `parts`) for work `kind`; scratch holds each slice's columns."""
    n_, c_, h, w, o_, oh, ow, kh, kw, sh, sw, dh, dw, top, left, groups = (
        dims[0], dims[1], dims[2], dims[3], dims[4], dims[5], dims[6], dims[7], dims[8], dims[9], dims[10],
        dims[11], dims[12], dims[13], dims[14], dims[15])
    cg, og = c_ // groups, o_ // groups
    taps = cg * kh * kw
    positions = oh * ow
    step = (n_ + parts - 1) // parts
    item = a.itemsize
    cols = scratch[part * taps * positions:(part + 1) * taps * positions]
    pa, pb, pout, pcols = a.ctypes.data, b.ctypes.data, out.ctypes.data, cols.ctypes.data
    held = _set_local_threads(1)
    for n in range(part * step, min(n_, part * step + step)):
        if kind == INPUT_GRAD:  # col2im adds into the bias, or zeros
            for c in range(c_):
                out[(n * c_ + c) * h * w:(n * c_ + c + 1) * h * w] = bias[c] if bias.size else 0
        for g in range(groups):
            image = (n * c_ + g * cg) * h * w
            result = (n * o_ + g * og) * positions
            if kind == FORWARD:
                _im2col(a, image, cg, h, w, kh, kw, sh, sw, dh, dw, top, left, oh, ow, cols)
                if bias.size:  # the product adds onto the bias
                    for o in range(og):
                        out[result + o * positions:result + (o + 1) * positions] = bias[g * og + o]
                gemm(one, one if bias.size else one - one, _NO_TRANS, _NO_TRANS, og, positions, taps,
                     pb + g * og * taps * item, taps, pcols, positions, pout + result * item, positions)
            elif kind == INPUT_GRAD:
                gemm(one, one - one, _TRANS, _NO_TRANS, taps, positions, og, pb + g * og * taps * item, taps,
                     pa + result * item, positions, pcols, positions)
                _col2im(cols, out, image, cg, h, w, kh, kw, sh, sw, dh, dw, top, left, oh, ow)
            else:
                _im2col(a, image, cg, h, w, kh, kw, sh, sw, dh, dw, top, left, oh, ow, cols)
                gemm(one, one, _NO_TRANS, _TRANS, og, taps, positions, pb + result * item, positions, pcols,
                     positions, pout + (part * o_ + g * og) * taps * item, taps)
    _set_local_threads(held)


@njit(parallel=True, nogil=True, cache=True)
def run_parallel(kind, one, a, b, bias, out, scratch, dims, parts):
    """Work `kind` (module docstring) in `parts` slices of the images, over numba's threads."""
    for part in prange(parts):
        _part(kind, one, a, b, bias, out, scratch, dims, part, parts)


@njit(nogil=True, cache=True)
def run_serial(kind, one, a, b, bias, out, scratch, dims, parts):
    """Work `kind` (module docstring) in `parts` slices of the images, one after another on this thread."""
    for part in range(parts):
        _part(kind, one, a, b, bias, out, scratch, dims, part, parts)


def warm() -> None:
    """Compile each runner for float32 and float64 (two 3 x 3 images, a 2 x 2 kernel), checking the results."""
    for real in (np.float32, np.float64):
        x = np.arange(18, dtype=real) - 4
        planes = x.reshape(2, 3, 3)
        weight, none = np.array([1, -2, 3, 5], real), np.empty(0, real)
        dims = np.array([2, 1, 3, 3, 1, 2, 2, 2, 2, 1, 1, 1, 1, 0, 0, 1], np.int64)
        result = sum(weight[2 * i + j] * planes[:, i:i + 2, j:j + 2] for i in range(2) for j in range(2))
        weight_grad = [planes[:, i:i + 2, j:j + 2].sum() for i in range(2) for j in range(2)]
        for run in (run_parallel, run_serial):
            out, input_grad, partial = np.empty(8, real), np.empty(18, real), np.zeros(8, real)
            run(FORWARD, real(1), x, weight, none, out, np.empty(32, real), dims, 2)
            run(INPUT_GRAD, real(1), np.ones(8, real), weight, none, input_grad, np.empty(32, real), dims, 2)
            run(WEIGHT_GRAD, real(1), x, np.ones(8, real), none, partial, np.empty(32, real), dims, 2)
            if not (np.array_equal(out, result.ravel()) and input_grad[4] == weight.sum() and input_grad[0] == 1
                    and np.array_equal(partial.reshape(2, 4).sum(0), weight_grad)):
                raise RuntimeError("conv_image_kernels: a warm-up convolution came out wrong")

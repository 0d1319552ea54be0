"""Pooling: max, average and adaptive pools in 1-D and 2-D, forward and backward.

Each pool is a kernel over the canonical (N, C, H, W) layout of ops/windows.py paired with the
kernel that computes its gradient; the pair are each other's backward, so double backward works:

    max pools     values + flat input indices   <->  scatter-add by those indices / gather by them
    avg_pool      window sums / divisor          <->  divisor-scaled col2im
    adaptive avg  Ah @ x @ Aw^T (separable)      <->  the same kernel with the matrices transposed
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..autograd.graph import needs_grad, record
from ..tensor import Tensor
from ..tensor import dtype as dt
from .dispatch import launch, register_kernel
from .windows import (batched, check_tensor, col2im, compute_array, int_list, not_implemented, padded, pair,
                      sliding_windows)

__all__ = ["max_pool1d", "max_pool2d", "avg_pool1d", "avg_pool2d", "adaptive_avg_pool1d", "adaptive_avg_pool2d",
           "adaptive_max_pool1d", "adaptive_max_pool2d"]
METHODS: dict = {}


class PoolGeometry(NamedTuple):
    """A pool's windows, and the input (image) and output (result) layouts, as seen and in 4-D."""
    image: tuple
    result: tuple
    image4: tuple
    result4: tuple
    kernel: tuple = (1, 1)
    stride: tuple = (1, 1)
    dilation: tuple = (1, 1)
    pads: tuple = (0, 0, 0, 0)   # (top, bottom, left, right); bottom/right include ceil_mode's overhang
    divisor: object = None       # avg_pool: the (oh, ow) array each window sum is divided by
    rows: object = None          # adaptive pools: per-dim matrices (avg) or window index tables (max)
    cols: object = None


# -- kernels -------------------------------------------------------------------------------------
def _lowest(dtype: np.dtype):
    return -np.inf if dtype.kind == "f" else np.iinfo(dtype).min


def _first_inside(count: int, stride: int, pad: int, dilation: int) -> np.ndarray:
    """Per output position, the first window tap inside the image (PyTorch's index for an all -inf window)."""
    start = np.arange(count) * stride - pad
    return np.where(start < 0, start + (-start + dilation - 1) // dilation * dilation, start)


@register_kernel("max_pool2d", "cpu")
def _max_pool_kernel(ins, outs, geo: PoolGeometry) -> None:
    x = compute_array(ins[0]).reshape(geo.image4)
    low = _lowest(x.dtype)
    (kh, kw), (sh, sw), (dh, dw) = geo.kernel, geo.stride, geo.dilation
    n, c, oh, ow = geo.result4
    windows = sliding_windows(padded(x, geo.pads, low), (oh, ow), geo.kernel, geo.stride, geo.dilation)
    taps = windows.reshape(n, c, kh * kw, oh, ow)
    best = taps.argmax(axis=2)  # the first maximum in row-major window order, as PyTorch picks
    values = np.take_along_axis(taps, best[:, :, None], axis=2)[:, :, 0]
    rows = best // kw * dh + (np.arange(oh) * sh - geo.pads[0])[:, None]
    cols = best % kw * dw + np.arange(ow) * sw - geo.pads[2]
    index = rows * geo.image4[3] + cols
    empty = values == low  # nothing beat the initial -inf: PyTorch reports the first tap inside the image
    if empty.any():
        first = (_first_inside(oh, sh, geo.pads[0], dh)[:, None] * geo.image4[3]
                 + _first_inside(ow, sw, geo.pads[2], dw))
        index = np.where(empty, first, index)
    outs[0].reshape(values.shape)[...] = values
    outs[1].reshape(index.shape)[...] = index


@register_kernel("adaptive_max_pool2d", "cpu")
def _adaptive_max_pool_kernel(ins, outs, geo: PoolGeometry) -> None:
    # separable: the maximum of each window row first, then of those row maxima; argmax keeps the
    # first maximum in row-major order at both steps, as PyTorch's scan does
    x = compute_array(ins[0]).reshape(geo.image4)
    oh, ow = geo.result4[2:]
    across = x[:, :, :, geo.cols]                                # (N, C, H, ow, Kw)
    col_best = across.argmax(axis=-1)
    row_max = np.take_along_axis(across, col_best[..., None], axis=-1)[..., 0]
    col_index = geo.cols[np.arange(ow), col_best]                # (N, C, H, ow)
    down = row_max[:, :, geo.rows]                               # (N, C, oh, Kh, ow)
    row_best = down.argmax(axis=3)
    values = np.take_along_axis(down, row_best[:, :, :, None], axis=3)[:, :, :, 0]
    rows = geo.rows[np.arange(oh)[:, None], row_best]            # (N, C, oh, ow)
    index = rows * geo.image4[3] + np.take_along_axis(col_index, rows, axis=2)
    outs[0].reshape(values.shape)[...] = values
    outs[1].reshape(index.shape)[...] = index


@register_kernel("max_pool_scatter", "cpu")
def _max_pool_scatter_kernel(ins, outs, geo: PoolGeometry) -> None:
    n, c, h, w = geo.image4
    grad = compute_array(ins[0]).reshape(n * c, -1)
    flat = ins[1].reshape(n * c, -1) + (np.arange(n * c) * (h * w))[:, None]
    outs[0].reshape(-1)[...] = np.bincount(flat.ravel(), weights=grad.ravel(), minlength=n * c * h * w)


@register_kernel("max_pool_gather", "cpu")
def _max_pool_gather_kernel(ins, outs, geo: PoolGeometry) -> None:
    n, c = geo.image4[:2]
    image = compute_array(ins[0]).reshape(n * c, -1)
    picked = np.take_along_axis(image, ins[1].reshape(n * c, -1), axis=1)
    outs[0].reshape(picked.shape)[...] = picked


@register_kernel("avg_pool2d", "cpu")
def _avg_pool_kernel(ins, outs, geo: PoolGeometry) -> None:
    x = compute_array(ins[0]).reshape(geo.image4)
    windows = sliding_windows(padded(x, geo.pads), geo.result4[2:], geo.kernel, geo.stride, (1, 1))
    total = np.zeros(geo.result4, np.int64 if x.dtype.kind in "iu" else x.dtype)
    for i in range(geo.kernel[0]):
        for j in range(geo.kernel[1]):
            total += windows[:, :, i, j]
    if total.dtype.kind == "i":  # integer averages truncate toward zero, as C++ division does
        divisor = geo.divisor.astype(np.int64)
        outs[0].reshape(geo.result4)[...] = np.sign(total) * (np.abs(total) // divisor)
    else:
        outs[0].reshape(geo.result4)[...] = total / geo.divisor.astype(total.dtype)


@register_kernel("avg_pool2d_backward", "cpu")
def _avg_pool_backward_kernel(ins, outs, geo: PoolGeometry) -> None:
    grad = compute_array(ins[0]).reshape(geo.result4)
    scaled = grad / geo.divisor.astype(grad.dtype)
    n, c, oh, ow = geo.result4
    cols = np.broadcast_to(scaled[:, :, None, None], (n, c) + geo.kernel + (oh, ow))
    outs[0].reshape(geo.image4)[...] = col2im(cols, geo.image4[2:], geo.stride, (1, 1), geo.pads)


@register_kernel("adaptive_avg_pool2d", "cpu")
def _adaptive_avg_pool_kernel(ins, outs, geo: PoolGeometry) -> None:
    x = compute_array(ins[0]).reshape(geo.image4)
    outs[0].reshape(geo.result4)[...] = np.matmul(np.matmul(geo.rows.astype(x.dtype), x), geo.cols.T.astype(x.dtype))


@register_kernel("adaptive_avg_pool2d_backward", "cpu")
def _adaptive_avg_pool_backward_kernel(ins, outs, geo: PoolGeometry) -> None:
    g = compute_array(ins[0]).reshape(geo.result4)
    outs[0].reshape(geo.image4)[...] = np.matmul(np.matmul(geo.rows.T.astype(g.dtype), g), geo.cols.astype(g.dtype))


# -- differentiable primitives ---------------------------------------------------------------------
def _max_pool(kernel: str, x: Tensor, geo: PoolGeometry, name: str) -> tuple:
    values, index = launch(kernel, (x,), [(geo.result, x.dtype), (geo.result, dt.int64)], geo)
    if needs_grad((x,)):
        record(name, lambda node, g: (_scatter(g, node.saved_tensors[0], node.attrs),), (x,), (values,),
               saved=(index,), attrs=geo)
    return values, index


def _scatter(g: Tensor, index: Tensor, geo: PoolGeometry) -> Tensor:
    """Gradients of a max pool's outputs added into the input positions `index` picked."""
    out = launch("max_pool_scatter", (g, index), [(geo.image, g.dtype)], geo)[0]
    if needs_grad((g,)):
        record("max_pool_scatter", lambda node, gg: (_gather(gg, node.saved_tensors[0], node.attrs), None),
               (g, index), (out,), saved=(index,), attrs=geo)
    return out


def _gather(image: Tensor, index: Tensor, geo: PoolGeometry) -> Tensor:
    """The values of an input-shaped tensor at a max pool's `index` (the adjoint of `_scatter`)."""
    out = launch("max_pool_gather", (image, index), [(geo.result, image.dtype)], geo)[0]
    if needs_grad((image,)):
        record("max_pool_gather", lambda node, g: (_scatter(g, node.saved_tensors[0], node.attrs), None),
               (image, index), (out,), saved=(index,), attrs=geo)
    return out


_ADJOINT = {"avg_pool2d": "avg_pool2d_backward", "adaptive_avg_pool2d": "adaptive_avg_pool2d_backward"}


def _linear_pool(x: Tensor, geo: PoolGeometry, kernel: str, forward: bool = True) -> Tensor:
    """A pool linear in its input (avg, adaptive avg), or with `forward` False its adjoint (the
    gradient); each is the other's backward."""
    shape, name = (geo.result, kernel) if forward else (geo.image, _ADJOINT[kernel])
    out = launch(name, (x,), [(shape, x.dtype)], geo)[0]
    if needs_grad((x,)):
        record(name, lambda node, g: (_linear_pool(g, node.attrs, kernel, not forward),), (x,), (out,), attrs=geo)
    return out

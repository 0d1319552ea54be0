"""Sliding windows over the last two axes: the NumPy helpers convolution, pooling, unfold and fold share.

Every op here works on a canonical 4-D layout (batch, channels, height, width): 1-D ops are 2-D ops
with height 1 and unbatched inputs get a batch of 1, so there is one implementation of each window
idea. `sliding_windows` is im2col as a strided view; `add_windows` is its adjoint (col2im), a loop
over the kernel's offsets that adds one strided slice per offset.
"""
from __future__ import annotations

import numpy as np

from ..tensor import Tensor
from ..tensor import dtype as dt

_as_strided = np.lib.stride_tricks.as_strided

# PyTorch's legacy tensor-type names, as its conv dtype errors print them
TENSOR_TYPE = {dt.float32: "Float", dt.float64: "Double", dt.float16: "Half", dt.bfloat16: "BFloat16",
               dt.int64: "Long", dt.int32: "Int", dt.int16: "Short", dt.int8: "Char", dt.uint8: "Byte",
               dt.bool_: "Bool"}


# -- arguments (calling thread) ------------------------------------------------------------------
def is_int(value) -> bool:
    """Whether `value` is an int (NumPy integers included, bool excluded), as PyTorch's int args take."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def int_list(value, op: str, arg: str) -> list:
    """`value` (an int or a sequence of ints) as a list; TypeError naming the argument otherwise."""
    items = [value] if is_int(value) else value
    if not isinstance(items, (list, tuple)) or not all(is_int(v) for v in items):
        shown = type(value).__name__ if not isinstance(value, (list, tuple)) else \
            next(type(v).__name__ for v in value if not is_int(v))
        raise TypeError(f"{op}(): argument '{arg}' must be tuple of ints, not {shown}")
    return [int(v) for v in items]


def check_tensor(value, op: str, arg: str, position: int) -> None:
    """TypeError as PyTorch's argument parser raises when a Tensor argument is something else."""
    if not isinstance(value, Tensor):
        raise TypeError(f"{op}(): argument '{arg}' (position {position}) must be Tensor, "
                        f"not {type(value).__name__}")


def not_implemented(kernel: str, d: dt.dtype) -> NotImplementedError:
    """PyTorch's error for a kernel without an implementation for dtype `d`."""
    return NotImplementedError(f'"{kernel}" not implemented for \'{TENSOR_TYPE[d]}\'')


def batched(shape: tuple, spatial: int) -> tuple:
    """The canonical (N, C, H, W) form of a ((N,) C, *spatial) shape with 1 or 2 spatial dims."""
    shape = tuple(shape)
    if len(shape) == spatial + 1:
        shape = (1,) + shape
    return shape[:2] + (1,) * (2 - spatial) + shape[2:]


def pair(values: list, spatial: int, fill: int) -> tuple:
    """A per-dim list for `spatial` dims as a (height, width) pair; 1-D ops get `fill` for height."""
    return tuple(values) if spatial == 2 else (fill, values[0])


# -- kernels (worker thread) ---------------------------------------------------------------------
def compute_array(x: np.ndarray) -> np.ndarray:
    """`x` in the dtype arithmetic runs in: 16-bit floats (bfloat16 included) as float32."""
    if x.dtype.itemsize == 2 and x.dtype.kind in "fV":
        return x.astype(np.float32)
    return x


def padded(x: np.ndarray, pads: tuple, value=0) -> np.ndarray:
    """`x` (N, C, H, W) with (top, bottom, left, right) rows/columns of `value` around its image."""
    top, bottom, left, right = pads
    if not any(pads):
        return x
    n, c, h, w = x.shape
    out = np.full((n, c, h + top + bottom, w + left + right), value, x.dtype)
    out[:, :, top:top + h, left:left + w] = x
    return out


def sliding_windows(x: np.ndarray, out_hw: tuple, kernel: tuple, stride: tuple, dilation: tuple) -> np.ndarray:
    """The (N, C, kh, kw, oh, ow) view of a padded (N, C, H, W) array: element [n, c, i, j, y, x] is
    x[n, c, y*sh + i*dh, x*sw + j*dw]. Callers check that the windows fit."""
    n, c = x.shape[:2]
    sn, sc, sy, sx = x.strides
    shape = (n, c) + tuple(kernel) + tuple(out_hw)
    strides = (sn, sc, sy * dilation[0], sx * dilation[1], sy * stride[0], sx * stride[1])
    return _as_strided(x, shape, strides, writeable=False)


def add_windows(target: np.ndarray, cols: np.ndarray, stride: tuple, dilation: tuple) -> None:
    """target[n, c, y*sh + i*dh, x*sw + j*dw] += cols[n, c, i, j, y, x]: col2im."""
    n, c, kh, kw, oh, ow = cols.shape
    (sh, sw), (dh, dw) = stride, dilation
    if target.dtype == cols.dtype and target.dtype in _COMPILED_FLOATS and target.flags.c_contiguous:
        from .pool_kernels import add_windows as compiled  # numba: loaded on first use
        planes = n * c
        compiled(target.reshape((planes,) + target.shape[2:]), cols.reshape((planes,) + cols.shape[2:]),
                 sh, sw, dh, dw)
        return
    for i in range(kh):  # one strided slice per window offset
        rows = slice(i * dh, i * dh + sh * (oh - 1) + 1, sh)
        for j in range(kw):
            target[:, :, rows, j * dw:j * dw + sw * (ow - 1) + 1:sw] += cols[:, :, i, j]


_COMPILED_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def im2col(x: np.ndarray, out_hw: tuple, kernel: tuple, stride: tuple, dilation: tuple, pads: tuple) -> np.ndarray:
    """The contiguous (N, C, kh, kw, oh, ow) windows of `x` (N, C, H, W) zero-padded by `pads`."""
    return np.ascontiguousarray(sliding_windows(padded(x, pads), out_hw, kernel, stride, dilation))


def col2im(cols: np.ndarray, image_hw: tuple, stride: tuple, dilation: tuple, pads: tuple,
           dtype=None) -> np.ndarray:
    """The (N, C, H, W) image whose windows' sums are `cols` (N, C, kh, kw, oh, ow); padding dropped."""
    (h, w), (top, bottom, left, right) = image_hw, pads
    n, c, kh, kw, oh, ow = cols.shape
    # the padded image, at least large enough for every window (ceil-mode pooling may overhang)
    full_h = max(h + top + bottom, (oh - 1) * stride[0] + (kh - 1) * dilation[0] + 1)
    full_w = max(w + left + right, (ow - 1) * stride[1] + (kw - 1) * dilation[1] + 1)
    target = np.zeros((n, c, full_h, full_w), dtype or cols.dtype)
    if cols.size:
        add_windows(target, cols, stride, dilation)
    return target[:, :, top:top + h, left:left + w]

"""Sliding windows over the trailing (spatial) axes: the NumPy helpers convolution, pooling, unfold and fold share.

Every op here works on a canonical layout (batch, channels, *spatial) with at least two spatial dims:
1-D ops are 2-D ops with height 1, 3-D ops keep their depth, and unbatched inputs get a batch of 1, so
there is one implementation of each window idea for every rank. `sliding_windows` is im2col as a
strided view; `add_windows` is its adjoint (col2im), a loop over the kernel's offsets that adds one
strided slice per offset.
"""
from __future__ import annotations

import numpy as np

from ...tensor import Tensor
from ...tensor import dtype as dt
from ...vm.codegen import import_numba_user

_as_strided = np.lib.stride_tricks.as_strided
COMPILED_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))  # the dtypes the compiled window kernels take

# PyTorch's legacy tensor-type names, as its conv dtype errors print them
TENSOR_TYPE = {dt.float32: "Float", dt.float64: "Double", dt.float16: "Half", dt.bfloat16: "BFloat16",
               dt.int64: "Long", dt.int32: "Int", dt.int16: "Short", dt.int8: "Char", dt.uint8: "Byte",
               dt.bool_: "Bool", dt.complex64: "ComplexFloat", dt.complex128: "ComplexDouble"}


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


def canonical_rank(spatial: int) -> int:
    """The number of spatial dims of the canonical layout for an op over `spatial` dims."""
    return max(spatial, 2)


def batched(shape: tuple, spatial: int) -> tuple:
    """The canonical (N, C, [D,] H, W) form of a ((N,) C, *spatial) shape with 1, 2 or 3 spatial dims."""
    shape = tuple(shape)
    if len(shape) == spatial + 1:
        shape = (1,) + shape
    return shape[:2] + (1,) * (canonical_rank(spatial) - spatial) + shape[2:]


def pair(values: list, spatial: int, fill: int) -> tuple:
    """A per-dim list for `spatial` dims in the canonical layout: 1-D ops get `fill` for height."""
    return (fill,) * (canonical_rank(spatial) - spatial) + tuple(values)


# -- kernels (worker thread) ---------------------------------------------------------------------
def compute_array(x: np.ndarray) -> np.ndarray:
    """`x` in the dtype arithmetic runs in: 16-bit floats (bfloat16 included) as float32."""
    if x.dtype.itemsize == 2 and x.dtype.kind in "fV":
        return x.astype(np.float32)
    return x


def padded(x: np.ndarray, pads: tuple, value=0) -> np.ndarray:
    """`x` (N, C, *spatial) with (before, after) pairs of `value` around each spatial dim, in order."""
    if not any(pads):
        return x
    before, after = pads[0::2], pads[1::2]
    spatial = x.shape[2:]
    out = np.full(x.shape[:2] + tuple(s + b + a for s, b, a in zip(spatial, before, after)), value, x.dtype)
    out[(slice(None), slice(None)) + tuple(slice(b, b + s) for b, s in zip(before, spatial))] = x
    return out


def sliding_windows(x: np.ndarray, out_size: tuple, kernel: tuple, stride: tuple, dilation: tuple) -> np.ndarray:
    """The (N, C, *kernel, *out_size) view of a padded (N, C, *spatial) array: in 2-D, element
    [n, c, i, j, y, x] is x[n, c, y*sh + i*dh, x*sw + j*dw]. Callers check that the windows fit."""
    spatial = x.strides[2:]
    shape = x.shape[:2] + tuple(kernel) + tuple(out_size)
    strides = x.strides[:2] + tuple(s * d for s, d in zip(spatial, dilation)) + \
        tuple(s * st for s, st in zip(spatial, stride))
    return _as_strided(x, shape, strides, writeable=False)


def add_windows(target: np.ndarray, cols: np.ndarray, stride: tuple, dilation: tuple) -> None:
    """target[n, c, y*sh + i*dh, x*sw + j*dw] += cols[n, c, i, j, y, x] (in 2-D; any rank): col2im."""
    rank = len(stride)
    kernel, out = cols.shape[2:2 + rank], cols.shape[2 + rank:]
    if rank == 2 and target.dtype == cols.dtype and target.dtype in COMPILED_FLOATS and target.flags.c_contiguous:
        compiled = import_numba_user(".pool_kernels", __package__).add_windows  # numba: loaded on first use
        planes = cols.shape[0] * cols.shape[1]
        compiled(target.reshape((planes,) + target.shape[2:]), cols.reshape((planes,) + cols.shape[2:]),
                 *stride, *dilation)
        return
    for offset in np.ndindex(*kernel):  # one strided slice per window offset
        where = tuple(slice(i * d, i * d + s * (o - 1) + 1, s) for i, d, s, o in zip(offset, dilation, stride, out))
        target[(slice(None), slice(None)) + where] += cols[(slice(None), slice(None)) + offset]



def im2col(x: np.ndarray, out_size: tuple, kernel: tuple, stride: tuple, dilation: tuple,
           pads: tuple) -> np.ndarray:
    """The contiguous (N, C, *kernel, *out_size) windows of `x` (N, C, *spatial) zero-padded by `pads`."""
    return np.ascontiguousarray(sliding_windows(padded(x, pads), out_size, kernel, stride, dilation))


def col2im(cols: np.ndarray, image_size: tuple, stride: tuple, dilation: tuple, pads: tuple,
           dtype=None) -> np.ndarray:
    """The (N, C, *image_size) image whose windows' sums are `cols` (N, C, *kernel, *out); padding dropped."""
    rank = len(image_size)
    kernel, out = cols.shape[2:2 + rank], cols.shape[2 + rank:]
    before, after = pads[0::2], pads[1::2]
    # the padded image, at least large enough for every window (ceil-mode pooling may overhang)
    full = tuple(max(n + b + a, (o - 1) * s + (k - 1) * d + 1)
                 for n, b, a, o, s, k, d in zip(image_size, before, after, out, stride, kernel, dilation))
    target = np.zeros(cols.shape[:2] + full, dtype or cols.dtype)
    if cols.size:
        add_windows(target, cols, stride, dilation)
    return target[(slice(None), slice(None)) + tuple(slice(b, b + n) for b, n in zip(before, image_size))]

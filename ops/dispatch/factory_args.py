"""Arguments of the factory functions, parsed as PyTorch parses them: sizes, dtypes, devices, numbers.

Shared by creation, from_data, ranges and random, so every factory raises the same errors.
"""
from __future__ import annotations

import functools
import math
import operator

import numpy as np

from ...tensor import Tensor, device as _device
from ...tensor import dtype as dt
from ...tensor.device import OPEN_BLOCKS, default_device
from ...tensor.tensor import contiguous_strides
from ...vm import Blob, View, get_vm
from ..elementwise.plans import torch_name
from .type_names import CHECKED_NAME, TYPEMETA_NAME  # noqa: F401 (importers take them from here too)
from .mem_overlap import check_out
from ..movement.stride_rules import PRESERVE, format_strides, memory_format_name, preserved_strides

CPU = _device("cpu")
META = _device("meta")
_PY_DTYPES = {float: dt.float64, int: dt.int64, bool: dt.bool_}

FLOAT_MAX = {dt.float16: 65504.0, dt.bfloat16: 3.3895313892515355e38, dt.float32: 3.4028234663852886e38,
             dt.float64: 1.7976931348623157e308}
FLOAT_MAX.update({dt.float8_e4m3fn: 448.0, dt.float8_e5m2: 57344.0, dt.float8_e4m3fnuz: 240.0,
                  dt.float8_e5m2fnuz: 57344.0, dt.float8_e8m0fnu: 2.0 ** 127})
_NO_INFINITY = (dt.float8_e4m3fn, dt.float8_e4m3fnuz, dt.float8_e5m2fnuz, dt.float8_e8m0fnu)
FLOAT_DIGITS = {dt.float16: 11, dt.bfloat16: 8, dt.float32: 24, dt.float64: 53}


def is_int(x) -> bool:
    """Whether `x` is usable as a size or count (Python/NumPy int or one-element integer tensor)."""
    if isinstance(x, bool):
        return False
    if isinstance(x, (int, np.integer)):
        return True
    return isinstance(x, Tensor) and x.dtype.category == dt.INT and x.numel() == 1


def _ints(fn: str, seq, name: str = "size") -> tuple:
    out = []
    for k, s in enumerate(seq):
        if not is_int(s):
            raise TypeError(f"{fn}(): argument '{name}' failed to unpack the object at pos {k + 1} with error "
                            f"\"type must be tuple of ints,but got {type(s).__name__}\"")
        out.append(operator.index(s))
    return tuple(out)


def size_tuple(fn: str, size, position: int | None = 1, name: str = "size") -> tuple:
    """A size given as one tuple/list/Size (or a 1-d integer tensor), as `full(size, ...)` takes it."""
    if isinstance(size, (tuple, list)):
        return _ints(fn, size, name)
    if isinstance(size, Tensor) and size.dim() == 1 and size.dtype.category == dt.INT:
        return tuple(int(s) for s in size.tolist())
    where = f" (position {position})" if position else ""
    raise TypeError(f"{fn}(): argument '{name}'{where} must be tuple of ints, not {type(size).__name__}")


def size_varargs(fn: str, args: tuple, size=None) -> tuple:
    """A size given as ints (`zeros(2, 3)`), one sequence (`zeros((2, 3))`) or `size=`."""
    if size is not None:
        if args:
            raise TypeError(f"{fn}() got multiple values for argument 'size'")
        return size_tuple(fn, size, None)
    if not args:
        raise TypeError(f'{fn}() missing 1 required positional arguments: "size"')
    if len(args) == 1 and not is_int(args[0]):
        return size_tuple(fn, args[0])
    return _ints(fn, args)


def reject_extra(fn: str, kwargs: dict) -> None:
    """TypeError for keywords a `**kwargs` factory (kept for `size=`) does not take."""
    if kwargs:
        raise TypeError(f"{fn}() got an unexpected keyword argument '{next(iter(kwargs))}'")


def check_shape(shape: tuple, zeros_message: str | None = None) -> tuple:
    """Raise PyTorch's error for a negative dimension (zeros words it its own way)."""
    for s in shape:
        if s < 0:
            if zeros_message:
                raise RuntimeError(zeros_message)
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: {list(shape)}")
    return shape


def dtype_arg(fn: str, dtype) -> dt.dtype | None:
    """A tidal dtype (Python's float/int/bool map as in PyTorch), or None."""
    if dtype is None or isinstance(dtype, dt.dtype):
        return dtype
    if isinstance(dtype, type) and dtype in _PY_DTYPES:
        return _PY_DTYPES[dtype]
    raise TypeError(f"{fn}(): argument 'dtype' must be tidal.dtype, not {type(dtype).__name__}")


def device_arg(device) -> _device:
    """The device a factory creates on: cpu by default (or an open `with device(d):` block's); 'cuda' means
    cuda:0; an int is a CUDA index; cpu and meta tensors have no index."""
    if device is None:
        if not OPEN_BLOCKS[0]:
            return CPU
        device = default_device()
        if device is None:
            return CPU
    if isinstance(device, int) and not isinstance(device, bool):
        device = _device("cuda", device)
    d = _device(device)
    if d.type == "cpu":
        return CPU
    if d.type == "meta":
        return META
    return _device(d.type, 0) if d.index is None else d


def check_requires_grad(dtype: dt.dtype, requires_grad: bool) -> None:
    """RuntimeError when gradients are asked of a non-floating dtype."""
    if requires_grad and not dtype.is_floating_point:
        raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")


def number_arg(fn: str, name: str, value, position: int | None = None):
    """A Python number from a number, a NumPy scalar or a 0-d tensor; TypeError otherwise."""
    if isinstance(value, (bool, int, float, complex)):
        return value
    if isinstance(value, np.generic) and value.dtype.kind in "biufc":
        return value.item()
    if isinstance(value, Tensor) and value.dim() == 0:
        return value.item()
    where = f" (position {position})" if position else ""
    raise TypeError(f"{fn}(): argument '{name}'{where} must be Number, not {type(value).__name__}")


def int_arg(fn: str, name: str, value, position: int | None = None) -> int:
    """A Python int within int64 (bools and floats rejected as PyTorch does)."""
    if not is_int(value):
        where = f" (position {position})" if position else ""
        raise TypeError(f"{fn}(): argument '{name}'{where} must be int, not {type(value).__name__}")
    value = operator.index(value)
    if not -2 ** 63 <= value < 2 ** 63:
        raise ValueError("Overflow when unpacking long long")
    return value


def fmt(x) -> str:
    """A number as C++ streams print a double in PyTorch's messages (1, 0.5, 1e-10, 1.23457e+08)."""
    return f"{float(x):g}"


def overflows(value, dtype: dt.dtype) -> bool:
    """c10's checked conversion: whether `value` can't be held by `dtype` (unsigned wraps negatives)."""
    if dtype is dt.bool_ or dtype.category == dt.COMPLEX:
        return False
    if isinstance(value, complex):  # into a real dtype: only its real part, and only when that is all of it
        if value.imag != 0:
            return True
        value = value.real
    if dtype.category == dt.FLOAT:
        if dtype in dt.FLOAT8:  # c10: an infinity overflows a type without one; e8m0fnu's lowest is 2**-127
            if math.isinf(value) and dtype in _NO_INFINITY or dtype is dt.float8_e8m0fnu and value < 2.0 ** -127:
                return True
        return math.isfinite(value) and abs(value) > FLOAT_MAX[dtype]
    if isinstance(value, float) and not math.isfinite(value):
        return True
    lo, hi = _int_range(dtype.np)
    if lo == 0 and not isinstance(value, float):  # integers wrap into unsigned types, floats don't
        return abs(value) > hi
    return value < lo or value > hi


@functools.lru_cache(maxsize=None)
def _int_range(np_dtype) -> tuple:
    info = np.iinfo(np_dtype)  # slow to build: once per dtype
    return int(info.min), int(info.max)


_ZERO_FILLS = ("zeros", "zeros_like", "new_zeros")


def fill_scalar(fn: str, value, dtype: dt.dtype, numel: int | None = None):
    """`value` as the Python scalar a fill of `dtype` stores (checked, integers wrapped like C++). torch's fill of
    one float8 element (`numel` 1) is a plain cast, unchecked."""
    if overflows(value, dtype) and not (fn in _ZERO_FILLS and value == 0) and \
            not (numel == 1 and dtype in dt.FLOAT8):  # (torch zeros e8m0fnu's bytes)
        if dtype is dt.uint64 and isinstance(value, int):  # torch reads it as a C unsigned long first
            raise OverflowError("can't convert negative int to unsigned" if value < 0 else "int too big to convert")
        raise RuntimeError(f"value cannot be converted to type {CHECKED_NAME[dtype]} without overflow")
    if dtype is dt.bool_:
        return bool(value)
    if isinstance(value, complex) and dtype.category != dt.COMPLEX:
        value = value.real
    if dtype.category >= dt.FLOAT:
        return complex(value) if dtype.category == dt.COMPLEX else float(value)
    bits = dtype.itemsize * 8
    v = int(value) & ((1 << bits) - 1)
    return v - (1 << bits) if dtype.is_signed and v >= 1 << (bits - 1) else v


def check_allocation(shape: tuple, nbytes: int, dev) -> None:
    """torch's error at the call for a size past int64 (one past the machine's memory is refused where every
    result's memory is described: vm.blob.fresh_view). Memory itself is still taken lazily."""
    if nbytes >= 1 << 63:
        raise RuntimeError(f"Storage size calculation overflowed with sizes={list(shape)}")


def new_tensor_checked(shape: tuple, dtype: dt.dtype, dev) -> Tensor:
    """`Tensor._empty` after `check_allocation`."""
    check_allocation(shape, math.prod(shape) * dtype.itemsize, dev)
    return Tensor._empty(shape, dtype, dev)


def empty_strided_tensor(shape: tuple, strides: tuple, dtype: dt.dtype, dev) -> Tensor:
    """A new tensor with the given strides over a fresh blob just big enough for them."""
    span = 1 + sum((n - 1) * s for n, s in zip(shape, strides)) if all(shape) else 0
    check_allocation(shape, span * dtype.itemsize, dev)
    vm = get_vm(dev)
    return Tensor._make(View(Blob(span * dtype.itemsize, vm), tuple(shape), tuple(strides), 0, dtype.np),
                        dtype, dev, vm)


def empty_like_tensor(input: Tensor, dtype: dt.dtype, dev, memory_format=None) -> Tensor:
    """A new tensor shaped like `input`, laid out in `memory_format` (default preserve_format: torch's rule)."""
    shape = input._v.shape
    name = memory_format_name("empty_like", memory_format)
    strides = preserved_strides(input) if name == PRESERVE else format_strides(shape, name)
    if strides == contiguous_strides(shape):
        return new_tensor_checked(shape, dtype, dev)
    return empty_strided_tensor(shape, strides, dtype, dev)


def out_dtype(fn: str, dtype: dt.dtype | None, out) -> dt.dtype | None:
    """With `out=`, the result takes out's dtype, which an explicit `dtype` must match."""
    if out is None:
        return dtype
    tensor_arg(fn, "out", out)
    if dtype is not None and dtype is not out.dtype:
        raise RuntimeError(f"dtype {torch_name(dtype)} does not match dtype of out parameter "
                           f"({torch_name(out.dtype)})")
    return out.dtype


def write_out(result: Tensor, out) -> Tensor:
    """`result`, or `out` holding a copy of it (of another shape, out is resized first, silently as torch's
    factories do)."""
    if out is None:
        return result
    if out._v.shape != result._v.shape:
        check_out(out, ())
        out._v = Tensor._empty(tuple(result._v.shape), out.dtype, out.device)._v  # new storage, as resize_ gives
    return out.copy_(result)


def tensor_arg(fn: str, name: str, value, position: int = 1) -> Tensor:
    """`value` itself when it is a tensor; TypeError naming the argument otherwise."""
    if not isinstance(value, Tensor):
        raise TypeError(f"{fn}(): argument '{name}' (position {position}) must be Tensor, "
                        f"not {type(value).__name__}")
    return value

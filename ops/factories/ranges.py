"""Evenly spaced values: arange, linspace, logspace.

Sizes, dtypes and errors are worked out at the call, following PyTorch's formulas; the
values are computed by a kernel on the VM, in the precision PyTorch's CPU kernels use
(int64 for integer dtypes, the dtype itself or double elsewhere), so results match. Each op is a
record without inputs (at the bottom of the file), whose attrs hold the planned size and dtype.
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from ...tensor import Tensor
from ...tensor import dtype as dt
from ..dispatch.primitive import Primitive
from ..elementwise.plans import torch_name
from ..dispatch.factory_args import (check_requires_grad, device_arg, dtype_arg, int_arg, number_arg, out_dtype,
                                     write_out)
from ..dispatch.limited_dtypes import check as check_limited
from ..dispatch.user_frame import user_stacklevel

__all__ = ["arange", "linspace", "logspace"]
METHODS: dict = {}

_INT64_MAX = 2 ** 63 - 1


def _c_trunc(x) -> int:
    """A number converted to an integer as C++ does (toward zero)."""
    return int(x)


def _range_text(x) -> str:
    if isinstance(x, float) and math.isfinite(x) and x.is_integer():
        return str(int(x))
    return str(x)


def _not_for_bool(kernel: str, dtype: dt.dtype) -> None:
    if dtype is dt.bool_:
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{torch_name(dtype)}'")


def _arange_size(start, end, step, dtype: dt.dtype) -> int:
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if not (math.isfinite(start) and math.isfinite(end)):
        raise RuntimeError(f"unsupported range: {_range_text(start)} -> {_range_text(end)}")
    if not ((step > 0 and end >= start) or (step < 0 and end <= start)):
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    if dtype is dt.int64:  # exact integer arithmetic, as PyTorch does for int64
        xs, xe, xst = _c_trunc(start), _c_trunc(end), _c_trunc(step)
        if xst == 0:
            raise ValueError("step must be nonzero")
        num = xe - xs + xst - (1 if xst > 0 else -1)
        size = abs(num) // abs(xst) * (1 if (num >= 0) == (xst > 0) else -1)
    else:
        size = math.ceil((float(end) - float(start)) / float(step))
    if not 0 <= size <= _INT64_MAX:
        raise RuntimeError("invalid size, possible overflow?")
    return size


def arange(start=0, end=None, step=1, *, out=None, dtype: dt.dtype | None = None, layout=None, device=None,
           pin_memory: bool = False, requires_grad: bool = False) -> Tensor:
    """Values from `start` to `end` (exclusive) by `step`: int64 for integer arguments, else the default float."""
    if end is None:  # arange(end)
        start, end = 0, number_arg("arange", "end", start, 1)
    else:
        start, end = number_arg("arange", "start", start, 1), number_arg("arange", "end", end, 2)
    step = number_arg("arange", "step", step, 3)
    if any(isinstance(v, complex) for v in (start, end, step)):  # (torch's checked conversion to its double bounds)
        raise RuntimeError("value cannot be converted to type double without overflow")
    dtype = out_dtype("arange", dtype_arg("arange", dtype), out)
    if dtype is None:
        dtype = dt.get_default_dtype() if any(isinstance(v, float) for v in (start, end, step)) else dt.int64
    _not_for_bool("arange_cpu", dtype)
    if dtype.is_complex:
        raise NotImplementedError(f"\"arange_cpu\" not implemented for '{dtype.scalar_name}'")
    check_limited("arange", dtype)
    size = _arange_size(start, end, step, dtype)
    check_requires_grad(dtype, requires_grad)
    if dtype.category == dt.INT:
        acc, attrs = "int64", (_c_trunc(start), _c_trunc(step))
    else:
        acc, attrs = ("float64" if dtype is dt.float64 or dtype is dt.float32 else "float32"), (start, step)
    result = ARANGE((), attrs + (acc, size, dtype), device=device_arg(device))
    result.requires_grad = requires_grad
    if out is not None and out.numel() not in (0, size):  # (torch's own warning when out held elements; resized)
        warnings.warn(f"The number of elements in the out tensor of shape {list(out.shape)} is {out.numel()} which "
                      f"does not match the computed number of elements {size}. Note that this may occur as a result of "
                      f"rounding error. The out tensor will be resized to a tensor of shape ({size},).", UserWarning,
                      stacklevel=user_stacklevel())
    return write_out(result, out)


def _endpoint(fn: str, name: str, value, position: int):
    if isinstance(value, Tensor) and value.dim() != 0:
        raise RuntimeError(f"{fn} only supports 0-dimensional start and end tensors, but got {name} with "
                           f"{value.dim()} dimension(s).")
    return number_arg(fn, name, value, position)


def _spaced(fn: str, start, end, steps, base, dtype, device, requires_grad, out) -> Tensor:
    start = _endpoint(fn, "start", start, 1)
    end = _endpoint(fn, "end", end, 2)
    steps = int_arg(fn, "steps", steps, 3)
    dtype = out_dtype(fn, dtype_arg(fn, dtype), out)
    if isinstance(start, complex) or isinstance(end, complex):  # complex endpoints: a complex result
        inferred = dt.get_default_dtype().to_complex()
        if dtype is not None and not dtype.is_complex:
            kind = "double" if inferred is dt.complex128 else "float"
            raise RuntimeError(f"torch.{fn}(): inferred dtype c10::complex<{kind}> can't be safely cast to passed "
                               f"dtype {dtype.scalar_name}")
        dtype = dtype or inferred
    dtype = dtype or dt.get_default_dtype()
    _not_for_bool(f"{fn}_cpu", dtype)
    check_limited(fn, dtype)
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    check_requires_grad(dtype, requires_grad)
    spaced = LOGSPACE if fn == "logspace" else LINSPACE
    result = spaced((), (start, end, steps, base, dtype), device=device_arg(device))
    result.requires_grad = requires_grad
    return write_out(result, out)


def linspace(start, end, steps, *, out=None, dtype: dt.dtype | None = None, layout=None, device=None,
             pin_memory: bool = False, requires_grad: bool = False) -> Tensor:
    """`steps` values evenly spaced from `start` to `end`, both included."""
    return _spaced("linspace", start, end, steps, None, dtype, device, requires_grad, out)


def logspace(start, end, steps, base: float = 10.0, *, out=None, dtype: dt.dtype | None = None, layout=None,
             device=None, pin_memory: bool = False, requires_grad: bool = False) -> Tensor:
    """`steps` values `base ** x` for x evenly spaced from `start` to `end`."""
    base = number_arg("logspace", "base", base, 4)
    return _spaced("logspace", start, end, steps, float(base), dtype, device, requires_grad, out)


# -- kernels (run on the VM) ----------------------------------------------------------------------------
def _store(out: np.ndarray, values: np.ndarray) -> None:
    with np.errstate(over="ignore", invalid="ignore"):
        np.copyto(out, values, casting="unsafe")


def _arange_kernel(ins, outs, attrs) -> None:
    start, step, acc = attrs[:3]
    acc = np.dtype(acc)
    with np.errstate(over="ignore"):
        _store(outs[0], acc.type(start) + acc.type(step) * np.arange(outs[0].shape[0], dtype=acc))


# a wider type in which `a * b + c` of two `dtype` numbers rounds once, as the fused multiply-add torch's
# compiled loop uses (float32 products are exact in double; x86's long double holds double's nearly always)
_FMA_WIDE = {np.dtype(np.float32): np.float64, np.dtype(np.float64): np.longdouble}


def _ramp(start, end, step, steps: int, dtype: np.dtype, fused: bool = False) -> np.ndarray:
    """PyTorch's symmetric ramp: from `start` for the first half, back from `end` for the second, in `dtype`;
    `fused`: each value one multiply-add (start + step * i, end - step * (steps - 1 - i)) rounded once."""
    wide = _FMA_WIDE.get(np.dtype(dtype), np.dtype(dtype).type) if fused else np.dtype(dtype).type
    idx = np.arange(steps)
    up, down = idx.astype(wide), (steps - idx - 1).astype(wide)
    start, end, step = wide(start), wide(end), wide(step)
    return np.where(idx < steps // 2, start + step * up, end - step * down).astype(dtype)


def _linspace_kernel(ins, outs, attrs) -> None:
    start, end, steps = attrs[:3]
    out = outs[0]
    if steps == 0:
        return
    if out.dtype.kind in "iu":  # endpoints truncated to the integer type, the ramp in double
        start, end = _c_trunc(start), _c_trunc(end)
        work = np.dtype(np.float64)
    else:  # the dtype's own arithmetic (NumPy rounds each float16 op as c10::Half does)
        work = out.dtype
    if steps == 1:
        _store(out, np.asarray(start))
        return
    start, end = work.type(start), work.type(end)
    _store(out, _ramp(start, end, (end - start) / work.type(steps - 1), steps, work, fused=True))


def _logspace_kernel(ins, outs, attrs) -> None:
    start, end, steps, base = attrs[:4]
    out = outs[0]
    with np.errstate(all="ignore"):
        wide = np.complex128 if out.dtype.kind == "c" else np.float64
        if steps == 1:
            _store(out, np.power(wide(base), wide(start)))
        elif steps > 1:
            # endpoints in the output dtype, their difference too; the exponents and the power in double
            if out.dtype.kind in "iu":
                start, end = _c_trunc(start), _c_trunc(end)
            else:
                start, end = out.dtype.type(start), out.dtype.type(end)
            step = wide(end - start) / (steps - 1)
            exponents = _ramp(wide(start), wide(end), step, steps, np.dtype(wide))
            if out.dtype.kind == "c":  # torch's complex pow: exp(x log base) in the output's precision
                _store(out, np.exp(exponents.astype(out.dtype) * np.log(out.dtype.type(base))))
            else:
                _store(out, np.power(wide(base), exponents))


# -- records -------------------------------------------------------------------------------------------
# (the front ends work out the sizes and dtypes: arange's attrs (start, step, acc, size, dtype), the others'
# (start, end, steps, base, dtype))
def _arange_shape(inputs: tuple, attrs: tuple) -> list:
    return [((attrs[3],), attrs[4])]


def _spaced_shape(inputs: tuple, attrs: tuple) -> list:
    return [((attrs[2],), attrs[4])]


ARANGE = Primitive("arange", _arange_shape, cpu=_arange_kernel)
LINSPACE = Primitive("linspace", _spaced_shape, cpu=_linspace_kernel)
LOGSPACE = Primitive("logspace", _spaced_shape, cpu=_logspace_kernel)

"""Dtype refusals of torch's kernels that the elementwise plan cannot see: it knows an op's promoted dtype,
not which public function called it or whether a bound was a Python number.

clamp with number bounds runs torch's `clamp_scalar` kernels (no bool loop, where a bool tensor bound
takes maximum/minimum, which have one); lerp wants `end` and a weight tensor of the input's own dtype and
has no integer loop; `~` and unary `+` refuse by dtype before any kernel. The elementwise plan's own table
(elementwise.REAL_REJECT) covers the refusals that follow from the promoted dtype alone.
"""
from __future__ import annotations

from numbers import Real

from ...tensor import Tensor
from ...tensor import dtype as dt
from .factory_args import CHECKED_NAME, TYPEMETA_NAME, overflows
from ..elementwise.plans import torch_name
from .limited_dtypes import check as check_limited
from .number_args import invalid_combination

_TYPEMETA = {**TYPEMETA_NAME, dt.complex32: "c10::complex<c10::Half>", dt.complex64: "c10::complex<float>",
             dt.complex128: "c10::complex<double>"}


_CLAMP = ("Tensor input, Tensor min = None, Tensor max = None, *, Tensor out = None",
          "Tensor input, Number min = None, Number max = None, *, Tensor out = None")


def check_number(value, dtype: dt.dtype) -> None:
    """torch's RuntimeError for a number argument (alpha, clamp's bounds) that `dtype` can't hold (its
    checked conversion: negative integers do wrap into unsigned types)."""
    if overflows(value, dtype):
        raise RuntimeError(f"value cannot be converted to type {CHECKED_NAME[dtype]} without overflow")


def _fits_every_dtype(value) -> bool:
    """Whether every dtype holds `value` (a cheap test first: exponents and bounds are mostly small)."""
    return (value.__class__ is int or value.__class__ is float) and -128 <= value <= 127


def _result_dtype(*args) -> dt.dtype:
    """The promoted dtype of tensors and Python numbers, as the elementwise plan promotes them."""
    kinds = {"dim": None, "zero": None, "wrapped": None}
    for a in args:
        kind, d = ("dim" if a.ndim else "zero", a.dtype) if isinstance(a, Tensor) else ("wrapped", dt.scalar_dtype(a))
        kinds[kind] = d if kinds[kind] is None else dt.promote_types(kinds[kind], d)
    return dt.result_type_of(kinds["dim"], kinds["zero"], kinds["wrapped"])


def check_pow(input, exponent) -> None:
    """torch's RuntimeError for a number exponent of a tensor that its kernel can't hold: integer kernels take
    it as int64, then (unless negative: refused by pow itself) as the result dtype; 16-bit float kernels in
    their own dtype; float32/64 and complex ones in double (never refused)."""
    if not _fits_every_dtype(exponent) and isinstance(input, Tensor) and not isinstance(exponent, (Tensor, complex)):
        result = _result_dtype(input, exponent)
        if result.category <= dt.INT:
            check_number(exponent, dt.int64)
            if exponent >= 0:
                check_number(exponent, result)
        elif result.itemsize == 2 and not result.is_complex:
            check_number(exponent, result)


def check_where(input, other) -> None:
    """torch's RuntimeError for a number branch of where that an integer or float32 result dtype can't hold (a
    16-bit or float64 result takes it, overflowing to inf)."""
    # (Python and NumPy real numbers only: a global or traced tensor is not a number to read on the host)
    numbers = [a for a in (input, other) if isinstance(a, Real) and not _fits_every_dtype(a)]
    if numbers:
        result = _result_dtype(input, other)
        if result.category == dt.INT or result is dt.float32:
            for n in numbers:
                check_number(n, result)


def check_clamp(input, min, max, out=None) -> None:
    """torch's TypeError for clamp's bounds mixing a tensor and a number; for number bounds, its RuntimeError
    for a bound the result dtype can't hold, for an `out` of another dtype than the result (in place: of a
    lower kind, named by its C++ type) and its NotImplementedError for a bool tensor by bool bounds."""
    bounds = [b for b in (min, max) if b is not None]
    if len({isinstance(b, Tensor) for b in bounds}) == 2:  # one schema takes two tensors, the other two numbers
        raise invalid_combination("clamp", (input, min, max), _CLAMP)
    if not isinstance(input, Tensor) or not bounds or isinstance(bounds[0], Tensor) or input.dtype.is_complex:
        return
    if input.dtype in dt.LIMITED:  # torch's clamp_scalar kernels have no uint16/32/64 loop
        check_limited("clamp_scalar" if len(bounds) == 2 else "clamp_min_scalar" if max is None else
                      "clamp_max_scalar", _result_dtype(input, *bounds))
    if out is not None:
        _check_clamp_out(input, bounds, out)
    if not all(_fits_every_dtype(b) for b in bounds):
        result = _result_dtype(input, *bounds)
        for b in bounds:
            check_number(b, result)
    if input.dtype is not dt.bool_:
        return
    if bounds and all(isinstance(b, bool) for b in bounds):  # any other number promotes past bool
        kernel = "clamp_scalar_cpu" if len(bounds) == 2 else "clamp_min_scalar_cpu" if max is None \
            else "clamp_max_scalar_cpu"
        raise NotImplementedError(f"\"{kernel}\" not implemented for 'Bool'")


def _check_clamp_out(input: Tensor, bounds: list, out: Tensor) -> None:
    """clamp_scalar's checks of its output: in place the result must cast into it, otherwise match it."""
    result = _result_dtype(input, *bounds)
    if out is input:
        if result.category > out.dtype.category:
            raise RuntimeError(f"result type {torch_name(result)} can't be cast to the desired output type "
                               f"{_TYPEMETA[out.dtype]}")
    elif out.dtype is not result:
        raise RuntimeError(f"Found dtype {torch_name(out.dtype)} but expected {torch_name(result)}")


def check_lerp(input: Tensor, end, weight) -> None:
    """torch's errors for lerp: `end` and a weight tensor of more than 0 dims must have the input's dtype,
    integer and bool inputs have no kernel (a number weight; the plan refuses tensor weights), and a number
    weight must fit the kernel's math type."""
    for name, other in (("end", end), ("weight", weight)):
        if isinstance(other, Tensor) and other.dtype is not input.dtype and (name == "end" or other.ndim):
            raise RuntimeError(f"expected dtype {_TYPEMETA[input.dtype]} for `{name}` but got dtype "
                               f"{_TYPEMETA[other.dtype]}")
    check_limited("lerp" if isinstance(weight, Tensor) else "lerp(weight=number)", input.dtype)
    if isinstance(weight, Tensor):
        return
    if input.dtype.category < dt.FLOAT:
        raise NotImplementedError(f"\"lerp_kernel_scalar\" not implemented for '{torch_name(input.dtype)}'")
    # the weight is converted to the kernel's math type (float32 for 16-bit floats)
    math_type = input.dtype.compute
    if isinstance(weight, complex) and not math_type.is_complex or \
            not isinstance(weight, complex) and overflows(weight, math_type.to_real()):
        raise RuntimeError(f"value cannot be converted to type {_TYPEMETA[math_type]} without overflow")


def check_invert(input: Tensor) -> None:
    """torch's TypeError for `~` on a floating or complex tensor."""
    if input.dtype.category >= dt.FLOAT:
        raise TypeError("~ (operator.invert) is only implemented on integer and Boolean-type tensors")


def check_positive(input: Tensor) -> None:
    """torch's RuntimeError for unary `+` (torch.positive) on a bool tensor."""
    if input.dtype is dt.bool_:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")

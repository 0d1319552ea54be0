"""torch's complex32 (ComplexHalf) casts on NumPy arrays.

NumPy has no 32-bit complex type: a complex32 array is a structured array of (real, imag) float16 pairs
(tensor/dtype.COMPLEX32_NP), which NumPy can copy, index, concatenate and `np.where` as it is, but cannot
cast. Every conversion to or from it comes here (ops/elementwise's casters):
- to complex32, torch converts each part to float first, then to half: a float64 or complex128 value is
  rounded twice (1 + 2**-11 + 2**-40 becomes 1, not NumPy's 1 + 2**-10), an integer goes through float32,
  bfloat16 and float8 through their float32 values;
- from complex32, the parts widen exactly to complex64, which then converts as complex64 does; to bool a
  value is True where either part is nonzero.
"""
from __future__ import annotations

import numpy as np

from ...tensor import dtype as dt
from ..elementwise.float8 import cast as float8_cast, is_float8

__all__ = ["COMPLEX32_NP", "is_complex32", "to_complex32", "cast", "widened", "fitted"]

COMPLEX32_NP = dt.COMPLEX32_NP


def is_complex32(np_dtype) -> bool:
    """Whether a NumPy dtype is tidal's complex32 layout."""
    return np_dtype == COMPLEX32_NP


def to_complex32(x) -> np.ndarray:
    """`x` (any NumPy array or number) as a complex32 array, rounded as torch's casts."""
    x = np.asarray(x)
    if x.dtype == COMPLEX32_NP:
        return x
    if is_float8(x.dtype):
        x = float8_cast(x, np.float32)
    with np.errstate(invalid="ignore", over="ignore"):
        if x.dtype.kind == "c":
            x = x.astype(np.complex64)  # (complex128: double -> float, then -> half, as torch)
            real, imag = x.real, x.imag
        else:
            real, imag = x.astype(np.float32), None
        out = np.empty(x.shape, COMPLEX32_NP)
        out["real"] = real.astype(np.float16)
        out["imag"] = 0 if imag is None else imag.astype(np.float16)
    return out


def cast(x, target) -> np.ndarray:
    """`x` as NumPy dtype `target` where `x` or `target` is complex32 (torch's conversions)."""
    target = np.dtype(target)
    x = np.asarray(x)
    if target == COMPLEX32_NP:
        return to_complex32(x)
    if x.dtype == COMPLEX32_NP:
        x = dt.complex32_values(x)
    if target.kind == "c":
        return x.astype(target)
    if target == np.bool_:
        return x != 0
    if is_float8(target) or is_float8(x.dtype):
        return float8_cast(x, target)
    with np.errstate(invalid="ignore", over="ignore"):
        return (x.real if x.dtype.kind == "c" else x).astype(target)


def widened(a: np.ndarray) -> np.ndarray:
    """`a` as complex64 values if it is a complex32 array (kernels compute on those), else `a` itself."""
    return dt.complex32_values(a) if a.dtype == COMPLEX32_NP else a


def fitted(dst: np.ndarray, values):
    """`values` ready to be assigned into `dst` (NumPy would copy a number into both parts of a complex32 pair,
    and can't read one): converted when either holds complex32 pairs, else unchanged."""
    if dst.dtype == COMPLEX32_NP:
        return to_complex32(values)
    if getattr(values, "dtype", None) == COMPLEX32_NP:
        return cast(values, dst.dtype)
    return values

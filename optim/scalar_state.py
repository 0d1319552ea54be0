"""Host arithmetic of scalar optimizer state (NAdam's `mu_product`, ASGD's `eta` and `mu`) as PyTorch's 0-d state
tensors compute it.

PyTorch keeps these in 0-d tensors of its scalar dtype (float32 unless the default dtype is float64), and loads them
in their parameter's dtype (a float64 model's NAdam multiplies mu_product in float64 from then on). tidal keeps the
tensors too and mirrors their values on the host (step_counts.py), so a step never waits for the device; the values
are computed here rounded to the tensor's dtype so that the updates equal PyTorch's to the last bit. A value of a
dtype other than the scalar dtype is a `Scalar`, a float that remembers that dtype.
"""
from __future__ import annotations

import numpy as np

from ..tensor import dtype as dt

__all__ = ["Scalar", "rounded", "product", "assign", "finfo_eps"]

_EPS = {"float16": 2.0 ** -10, "bfloat16": 2.0 ** -7, "float32": 2.0 ** -23, "float64": 2.0 ** -52}


class Scalar(float):
    """A host scalar state value that PyTorch would hold in a 0-d tensor of `dtype` (not its scalar dtype)."""

    def __new__(cls, value: float, dtype: dt.dtype) -> "Scalar":
        self = super().__new__(cls, value)
        self.dtype = dtype
        return self

    def __reduce__(self):
        return Scalar, (float(self), self.dtype)


def _in(x: float, dtype: dt.dtype | None) -> float:
    """`x` rounded to `dtype` (None: PyTorch's scalar dtype)."""
    if dtype is None:
        return float(x) if dt.get_default_dtype() is dt.float64 else float(np.float32(x))
    return float(x) if dtype is dt.float64 else float(np.float32(x).astype(dtype.np))


def rounded(x: float) -> float:
    """`x` as PyTorch's scalar state tensor holds it."""
    return _in(x, None)


def product(a: float, b: float) -> float:
    """`a *= b` on a scalar state tensor: both factors and the product in its dtype (16-bit: computed in float32)."""
    dtype = getattr(a, "dtype", None)
    if dtype is None:
        return rounded(rounded(a) * rounded(b))
    if dtype is dt.float64:
        return Scalar(float(a) * float(b), dtype)
    return Scalar(_in(np.float32(a) * np.float32(b), dtype), dtype)


def assign(old: float, x: float) -> float:
    """`old.copy_(torch.as_tensor(x))`: `x` in the default dtype, then in `old`'s dtype."""
    dtype = getattr(old, "dtype", None)
    return rounded(x) if dtype is None else Scalar(_in(rounded(x), dtype), dtype)


def finfo_eps(dtype: dt.dtype) -> float:
    """torch.finfo(dtype).eps for tidal's floating dtypes."""
    return _EPS[dtype.name]

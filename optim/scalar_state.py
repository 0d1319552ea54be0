"""Scalar optimizer state kept on the host: NAdam's `mu_product`, ASGD's `eta` and `mu` (step counts are tensors
mirrored on the host: step_counts.py).

PyTorch keeps these in 0-d tensors of its scalar dtype (float32 unless the default dtype is
float64) and reads them back with `.item()`. tidal keeps Python numbers, so a step never waits
for the device, rounded to that same dtype so that the updates equal PyTorch's to the last bit.
A state dict holds them as those 0-d tensors. PyTorch loads every one but the step count in
its parameter's dtype (a float64 model's NAdam multiplies mu_product in float64 from then on);
a loaded value is a `Scalar`, a float that remembers that dtype.
"""
from __future__ import annotations

from typing import Iterable

import numpy as np

from ..tensor import Tensor
from ..tensor import dtype as dt

__all__ = ["Scalar", "rounded", "product", "assign", "to_host", "finfo_eps"]

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


def to_host(optimizer, keys: Iterable[str]) -> None:
    """Turn the tensors a loaded state dict put under `keys` (PyTorch saves them so) into Python floats that
    remember their dtype (the parameter's, as PyTorch loads them) when it is not the scalar dtype. The step count
    stays a tensor (step_counts.py mirrors it on the host)."""
    scalar_dtype = dt.float64 if dt.get_default_dtype() is dt.float64 else dt.float32
    for state in optimizer.state.values():
        if not isinstance(state, dict):
            continue
        for key in keys:
            if key == "step":
                continue
            value = state.get(key)
            if isinstance(value, Tensor):
                number = float(value.item())
                keep = value.dtype is not scalar_dtype and value.dtype.is_floating_point
                state[key] = Scalar(number, value.dtype) if keep else number


def finfo_eps(dtype: dt.dtype) -> float:
    """torch.finfo(dtype).eps for tidal's floating dtypes."""
    return _EPS[dtype.name]

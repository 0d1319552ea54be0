"""Scalar optimizer state kept on the host: step counts, NAdam's `mu_product`, ASGD's `eta` and `mu`.

PyTorch keeps these in 0-d tensors of its scalar dtype (float32 unless the default dtype is
float64) and reads them back with `.item()`. tidal keeps Python numbers, so a step never waits
for the device, rounded to that same dtype so that the updates equal PyTorch's to the last bit.
"""
from __future__ import annotations

from typing import Iterable

import numpy as np

from ..tensor import Tensor
from ..tensor import dtype as dt

__all__ = ["rounded", "product", "to_host", "finfo_eps"]

_EPS = {"float16": 2.0 ** -10, "bfloat16": 2.0 ** -7, "float32": 2.0 ** -23, "float64": 2.0 ** -52}


def rounded(x: float) -> float:
    """`x` as PyTorch's scalar state tensor holds it."""
    return float(x) if dt.get_default_dtype() is dt.float64 else float(np.float32(x))


def product(a: float, b: float) -> float:
    """`a *= b` on a scalar state tensor: both factors and the product in the scalar dtype."""
    return rounded(rounded(a) * rounded(b))


def to_host(optimizer, keys: Iterable[str]) -> None:
    """Turn the tensors a loaded state dict put under `keys` (PyTorch saves them so) into Python floats."""
    for state in optimizer.state.values():
        if not isinstance(state, dict):
            continue
        for key in keys:
            if isinstance(state.get(key), Tensor):
                state[key] = float(state[key].item())


def finfo_eps(dtype: dt.dtype) -> float:
    """torch.finfo(dtype).eps for tidal's floating dtypes."""
    return _EPS[dtype.name]

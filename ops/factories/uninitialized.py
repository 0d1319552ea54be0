"""torch.utils.deterministic.fill_uninitialized_memory, for tidal's factories.

Under `use_deterministic_algorithms(True)` (and while `fill_uninitialized_memory` is True, its default), torch fills
the memory its factories leave uninitialized so that a program reading it is reproducible: `empty`, `empty_like`,
`new_empty`, `empty_strided`, `new_empty_strided`, `empty_permuted` and the elements `resize_` adds hold NaN
(floating and complex dtypes: NaN real part, zero imaginary part), the largest value (integer dtypes) or True (bool).
The two switches live here, below the layers that set them (compat's use_deterministic_algorithms, and
tidal.utils.deterministic's module attribute).
"""
from __future__ import annotations

import math

import numpy as np

from ...autograd.grad_mode import no_grad
from ...tensor import Tensor
from ...tensor import dtype as dt

__all__ = ["STATE", "filled"]

STATE = {"deterministic": False, "fill": True}


def _value(dtype: dt.dtype):
    if dtype is dt.bool_:
        return True
    if dtype.is_complex:
        return complex(math.nan, 0.0)
    if dtype.is_floating_point:
        return math.nan
    return int(np.iinfo(dtype.np).max)


def filled(t: Tensor, start: int = 0) -> Tensor:
    """`t` (a fresh factory result, or `resize_`'s flat new memory from element `start` on) filled as torch fills
    uninitialized memory when both switches are on; else `t` as it is."""
    if not (STATE["deterministic"] and STATE["fill"]) or t.numel() <= start or t.device.type == "meta":
        return t
    with no_grad():
        (t if not start else t[start:]).fill_(_value(t.dtype))
    return t

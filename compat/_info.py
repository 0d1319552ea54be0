"""`finfo` and `iinfo`: the numeric limits of tidal's dtypes, as torch reports them."""
from __future__ import annotations

import numpy as np

from ..tensor import dtype as dt

__all__ = ["finfo", "iinfo"]

builtin_type = type  # the constructors' argument is named `type`, as in torch


class finfo:
    """Limits of a floating dtype: bits, eps, max, min, tiny, smallest_normal, resolution, dtype."""

    def __init__(self, type: dt.dtype | None = None):
        if type is None:
            type = dt.get_default_dtype()
        if not isinstance(type, dt.dtype):
            raise TypeError(f"finfo(): argument 'type' (position 1) must be torch.dtype, not "
                            f"{builtin_type(type).__name__}")
        if not type.is_floating_point:
            raise TypeError("torch.finfo() requires a floating point input type. Use torch.iinfo to handle "
                            "'torch.finfo'")
        type = type.to_real()  # a complex dtype's limits are those of its parts, as torch's
        info = _np_finfo(type)
        self.bits = type.itemsize * 8
        self.eps = float(info.eps)
        self.max = float(info.max)
        self.min = float(info.min)
        self.tiny = self.smallest_normal = float(info.smallest_normal)
        self.resolution = 10.0 ** -int(info.precision)
        if type in dt.FLOAT8:  # c10's numeric_limits: digits10 is 0, and e5m2fnuz's epsilon is 2**-3
            self.resolution = 1.0
            if type is dt.float8_e5m2fnuz:
                self.eps = 0.125
        self.dtype = type.name

    def __eq__(self, other) -> bool:
        return isinstance(other, finfo) and vars(self) == vars(other)

    __hash__ = None  # torch's finfo is unhashable too

    def __repr__(self) -> str:
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, eps={self.eps:g}, "
                f"smallest_normal={self.smallest_normal:g}, tiny={self.tiny:g}, dtype={self.dtype})")


class iinfo:
    """Limits of an integer dtype: bits, max, min, dtype."""

    def __init__(self, type: dt.dtype):
        if not isinstance(type, dt.dtype):
            raise TypeError(f"iinfo(): argument 'type' (position 1) must be torch.dtype, not "
                            f"{builtin_type(type).__name__}")
        if type is dt.bool_:
            raise TypeError("torch.bool is not supported by torch.iinfo")
        if type.category != dt.INT:
            raise TypeError("torch.iinfo() requires an integer input type. Use torch.finfo to handle "
                            "'torch.iinfo'")
        info = np.iinfo(type.np)
        self.bits = type.itemsize * 8
        self.max = int(info.max)
        self.min = int(info.min)
        self.dtype = type.name

    def __eq__(self, other) -> bool:
        return isinstance(other, iinfo) and vars(self) == vars(other)

    __hash__ = None

    def __repr__(self) -> str:
        return f"iinfo(min={self.min:g}, max={self.max:g}, dtype={self.dtype})"



def _np_finfo(d: dt.dtype):
    if d is dt.bfloat16 or d in dt.FLOAT8:  # NumPy has no bfloat16 or float8 types; ml_dtypes describes them
        import ml_dtypes
        return ml_dtypes.finfo(d.np)
    return np.finfo(d.np)


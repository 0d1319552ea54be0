"""Data types and PyTorch's type-promotion rules."""
from __future__ import annotations

import numpy as np

try:  # bfloat16 has no NumPy dtype of its own; ml_dtypes provides one
    from ml_dtypes import bfloat16 as _np_bfloat16
except ImportError:  # pragma: no cover - ml_dtypes is a core dependency
    _np_bfloat16 = None

BOOL, INT, FLOAT = 0, 1, 2  # categories, in promotion order


class dtype:
    """A tensor element type: a name, a NumPy dtype and a promotion category."""

    __slots__ = ("name", "np", "itemsize", "category", "is_signed", "compute")

    def __init__(self, name: str, np_dtype, category: int, is_signed: bool):
        self.name = name
        self.np = np.dtype(np_dtype)
        self.itemsize = self.np.itemsize
        self.category = category
        self.is_signed = is_signed
        self.compute = self  # the dtype arithmetic runs in (float32 for 16-bit floats)

    @property
    def is_floating_point(self) -> bool:
        """True for float16, bfloat16, float32, float64."""
        return self.category == FLOAT

    @property
    def is_complex(self) -> bool:
        """Always False: tidal has no complex dtypes yet."""
        return False

    def to_real(self) -> "dtype":
        """The dtype itself (no complex dtypes)."""
        return self

    def __repr__(self) -> str:
        return "tidal." + self.name

    def __reduce__(self):
        return (from_name, (self.name,))


bool_ = dtype("bool", np.bool_, BOOL, False)
uint8 = dtype("uint8", np.uint8, INT, False)
int8 = dtype("int8", np.int8, INT, True)
int16 = dtype("int16", np.int16, INT, True)
int32 = dtype("int32", np.int32, INT, True)
int64 = dtype("int64", np.int64, INT, True)
float16 = dtype("float16", np.float16, FLOAT, True)
bfloat16 = dtype("bfloat16", _np_bfloat16 if _np_bfloat16 is not None else np.float32, FLOAT, True)
float32 = dtype("float32", np.float32, FLOAT, True)
float64 = dtype("float64", np.float64, FLOAT, True)
float16.compute = bfloat16.compute = float32

ALL = (bool_, uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64)
_BY_NAME = {d.name: d for d in ALL}
_BY_NAME.update(half=float16, float=float32, double=float64, short=int16, int=int32, long=int64)
_BY_NP = {d.np: d for d in ALL}

_default_float = float32


def from_name(name: str) -> dtype:
    """The dtype called `name` (PyTorch aliases such as 'long' and 'half' included)."""
    return _BY_NAME[name]


def from_numpy(np_dtype) -> dtype:
    """The tidal dtype of a NumPy dtype; TypeError for unsupported ones."""
    try:
        return _BY_NP[np.dtype(np_dtype)]
    except KeyError:
        raise TypeError(
            f"can't convert np.ndarray of type {np.dtype(np_dtype)}. The only supported types are: "
            "float64, float32, float16, bfloat16, int64, int32, int16, int8, uint8, and bool.") from None


def get_default_dtype() -> dtype:
    """The dtype of Python floats and of float factory functions (float32 unless changed)."""
    return _default_float


def set_default_dtype(d: dtype) -> None:
    """Set the default floating dtype, as torch.set_default_dtype."""
    global _default_float
    if not isinstance(d, dtype) or not d.is_floating_point:
        raise TypeError(f"only floating-point types are supported as the default type, got {d}")
    _default_float = d


def _promote_pair(a: dtype, b: dtype) -> dtype:
    if a is b:
        return a
    if a.category != b.category:
        return a if a.category > b.category else b
    if a.category == FLOAT:
        if {a, b} == {float16, bfloat16}:
            return float32
        return a if a.itemsize >= b.itemsize else b
    if a.category == BOOL:
        return a
    return _BY_NP[np.promote_types(a.np, b.np)]


_PROMOTE = {(a, b): _promote_pair(a, b) for a in ALL for b in ALL}


def promote_types(a: dtype, b: dtype) -> dtype:
    """The smallest dtype both `a` and `b` convert to, as torch.promote_types."""
    return _PROMOTE[a, b]


def _combine(higher: dtype | None, lower: dtype | None) -> dtype | None:
    # A lower priority class (0-d tensors, then Python scalars) only matters when it
    # brings a higher category than the classes above it.
    if higher is None:
        return lower
    if lower is None or higher.category == FLOAT:
        return higher
    if higher.category == BOOL or lower.category == FLOAT:
        return _PROMOTE[higher, lower]
    return higher


def scalar_dtype(value) -> dtype:
    """The dtype a Python scalar takes when it meets a tensor."""
    if isinstance(value, bool):
        return bool_
    if isinstance(value, int):
        return int64
    return _default_float


def result_type_of(dim: dtype | None, zero: dtype | None, wrapped: dtype | None) -> dtype:
    """Combine the promoted dtypes of dimensioned tensors, 0-d tensors and Python scalars."""
    out = _combine(dim, _combine(zero, wrapped))
    return out if out is not None else _default_float

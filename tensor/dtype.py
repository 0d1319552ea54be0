"""Data types and PyTorch's type-promotion rules."""
from __future__ import annotations

import numpy as np

try:  # bfloat16 and the float8 types have no NumPy dtypes of their own; ml_dtypes provides them
    import ml_dtypes as _ml
    _np_bfloat16 = _ml.bfloat16
except ImportError:  # pragma: no cover - ml_dtypes is a core dependency
    _ml = _np_bfloat16 = None

BOOL, INT, FLOAT, COMPLEX = 0, 1, 2, 3  # categories, in promotion order


class dtype:
    """A tensor element type: a name, a NumPy dtype and a promotion category."""

    __slots__ = ("name", "np", "itemsize", "category", "is_signed", "compute", "scalar_name")

    def __init__(self, name: str, np_dtype, category: int, is_signed: bool, scalar_name: str):
        self.name = name
        self.scalar_name = scalar_name  # torch's C++ ScalarType name, as its messages print it ('Long')
        self.np = np.dtype(np_dtype)
        self.itemsize = self.np.itemsize
        self.category = category
        self.is_signed = is_signed
        self.compute = self  # the dtype arithmetic runs in (float32 for 16-bit floats)

    @property
    def is_floating_point(self) -> bool:
        """True for the inexact dtypes: float16, bfloat16, float32, float64, and (unlike torch's dtype
        attribute) complex64/complex128, since tidal's layers read it as 'may hold gradients'; the
        Tensor method and tidal.is_floating_point are torch's (real floats only)."""
        return self.category >= FLOAT

    @property
    def is_complex(self) -> bool:
        """True for complex32, complex64 and complex128."""
        return self.category == COMPLEX

    def to_real(self) -> "dtype":
        """The real dtype of a complex one's parts (complex64 -> float32); other dtypes unchanged."""
        return _REAL_OF.get(self, self)

    def to_complex(self) -> "dtype":
        """The complex dtype with this float dtype's parts (float64 -> complex128), as torch's."""
        if self.category == COMPLEX:
            return self
        if self in _COMPLEX_OF:
            return _COMPLEX_OF[self]
        raise RuntimeError(f"Unknown Complex ScalarType for {self.scalar_name}")

    def __repr__(self) -> str:
        return f"{repr_namespace[0]}.{self.name}"

    def __reduce__(self):
        return (from_name, (self.name,))


bool_ = dtype("bool", np.bool_, BOOL, False, "Bool")
uint8 = dtype("uint8", np.uint8, INT, False, "Byte")
int8 = dtype("int8", np.int8, INT, True, "Char")
int16 = dtype("int16", np.int16, INT, True, "Short")
int32 = dtype("int32", np.int32, INT, True, "Int")
int64 = dtype("int64", np.int64, INT, True, "Long")
float16 = dtype("float16", np.float16, FLOAT, True, "Half")
bfloat16 = dtype("bfloat16", _np_bfloat16 if _np_bfloat16 is not None else np.float32, FLOAT, True, "BFloat16")
float32 = dtype("float32", np.float32, FLOAT, True, "Float")
float64 = dtype("float64", np.float64, FLOAT, True, "Double")
complex64 = dtype("complex64", np.complex64, COMPLEX, True, "ComplexFloat")
complex128 = dtype("complex128", np.complex128, COMPLEX, True, "ComplexDouble")
# torch's ComplexHalf: NumPy has no 32-bit complex type, so its arrays hold (real, imag) float16 pairs as a
# structured dtype (4 bytes, so views, strides and element_size stay torch's); it computes as complex64, and
# every conversion goes through ops/complex_half.cast (NumPy cannot cast a structured array)
COMPLEX32_NP = np.dtype([("real", "<f2"), ("imag", "<f2")])
complex32 = dtype("complex32", COMPLEX32_NP, COMPLEX, True, "ComplexHalf")
# torch's "limited support" unsigned types: no promotion with any other integer, bool or complex dtype, and
# only some kernels (ops/dispatch/limited_dtypes.py lists the ones torch refuses)
uint16 = dtype("uint16", np.uint16, INT, False, "UInt16")
uint32 = dtype("uint32", np.uint32, INT, False, "UInt32")
uint64 = dtype("uint64", np.uint64, INT, False, "UInt64")
# torch's float8 types (storage formats for scaled matmuls): casts, copies, creation, views and a few kernels
# only (ops/dispatch/limited_dtypes.py), no promotion with any other dtype
float8_e4m3fn = dtype("float8_e4m3fn", _ml.float8_e4m3fn, FLOAT, True, "Float8_e4m3fn")
float8_e5m2 = dtype("float8_e5m2", _ml.float8_e5m2, FLOAT, True, "Float8_e5m2")
float8_e4m3fnuz = dtype("float8_e4m3fnuz", _ml.float8_e4m3fnuz, FLOAT, True, "Float8_e4m3fnuz")
float8_e5m2fnuz = dtype("float8_e5m2fnuz", _ml.float8_e5m2fnuz, FLOAT, True, "Float8_e5m2fnuz")
float8_e8m0fnu = dtype("float8_e8m0fnu", _ml.float8_e8m0fnu, FLOAT, False, "Float8_e8m0fnu")
FLOAT8 = frozenset((float8_e4m3fn, float8_e5m2, float8_e4m3fnuz, float8_e5m2fnuz, float8_e8m0fnu))
UNSIGNED_LIMITED = frozenset((uint16, uint32, uint64))
# the dtypes with only some of torch's kernels (ops/dispatch/limited_dtypes.py holds what each refuses)
LIMITED = UNSIGNED_LIMITED | FLOAT8 | {complex32}
NO_NUMPY = FLOAT8 | {complex32, bfloat16}  # numpy() refuses them, as torch's (ml_dtypes' types, float16 pairs)
NO_SUM = FLOAT8 | {complex32}  # torch has no sum/prod/cumsum kernels for them
cfloat, cdouble, chalf = complex64, complex128, complex32
float16.compute = bfloat16.compute = float32
for _d in FLOAT8:
    _d.compute = float32
complex32.compute = complex64
_REAL_OF = {complex32: float16, complex64: float32, complex128: float64}
_COMPLEX_OF = {float16: complex32, float32: complex64, float64: complex128}

ALL = (bool_, uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64, complex64, complex128,
       uint16, uint32, uint64, float8_e4m3fn, float8_e5m2, float8_e4m3fnuz, float8_e5m2fnuz, float8_e8m0fnu,
       complex32)
_BY_NAME = {d.name: d for d in ALL}
_BY_NAME.update(half=float16, float=float32, double=float64, short=int16, int=int32, long=int64,
                cfloat=complex64, cdouble=complex128, chalf=complex32)
_BY_NP = {d.np: d for d in ALL}
# PyTorch's legacy tensor type names (`t.type()`, torch.FloatTensor...), also used in its messages; the unsigned
# types have `t.type()` names but no constructors
LEGACY_TYPE_NAMES = {float32: "FloatTensor", float64: "DoubleTensor", float16: "HalfTensor",
                     bfloat16: "BFloat16Tensor", int64: "LongTensor", int32: "IntTensor", int16: "ShortTensor",
                     int8: "CharTensor", uint8: "ByteTensor", bool_: "BoolTensor", uint16: "UInt16Tensor",
                     uint32: "UInt32Tensor", uint64: "UInt64Tensor"}
LEGACY_TYPE_NAMES.update({d: d.scalar_name + "Tensor" for d in FLOAT8 | {complex32}})


def complex32_values(arr: np.ndarray) -> np.ndarray:
    """A complex32 array (float16 pairs) as the complex64 array of the same values (exact)."""
    arr = np.asarray(arr)
    out = np.empty(arr.shape, np.complex64)
    out.real = arr["real"]
    out.imag = arr["imag"]
    return out


def legacy_type_name(d: dtype) -> str:
    """`d`'s legacy tensor type name as torch's messages print it ('FloatTensor'), else the dtype's name."""
    return LEGACY_TYPE_NAMES.get(d, d.name)

_default_float = float32
# The module name dtype and Size reprs show: "torch" while tidal.compat.install() makes `import torch` give
# tidal, so a script prints `torch.float32` as it does under torch
repr_namespace = ["tidal"]


def from_name(name: str) -> dtype:
    """The dtype called `name` (PyTorch aliases such as 'long' and 'half' included)."""
    return _BY_NAME[name]


def from_numpy(np_dtype) -> dtype:
    """The tidal dtype of a NumPy dtype; TypeError for unsupported ones."""
    try:
        return _BY_NP[np.dtype(np_dtype)]
    except KeyError:
        raise TypeError(
            f"can't convert np.ndarray of type numpy.{np.dtype(np_dtype).type.__name__}. The only supported types "
            "are: float64, float32, float16, complex64, complex128, int64, int32, int16, int8, uint64, uint32, "
            "uint16, uint8, and bool.") from None  # torch's words (its list: without tidal's ml_dtypes bfloat16)


def get_default_dtype() -> dtype:
    """The dtype of Python floats and of float factory functions (float32 unless changed)."""
    return _default_float


def get_default_complex_dtype() -> dtype:
    """The dtype of Python complex numbers: complex128 when the default float is float64, else complex64."""
    return complex128 if _default_float is float64 else complex64


def set_default_dtype(d: dtype) -> None:
    """Set the default floating dtype, as torch.set_default_dtype."""
    global _default_float
    if not isinstance(d, dtype) or d.category != FLOAT:
        raise TypeError("only floating-point types are supported as the default type")
    _default_float = d


def _promote_pair(a: dtype, b: dtype) -> dtype | None:
    if a is b:
        return a
    if a in FLOAT8 or b in FLOAT8:
        return None  # torch promotes a float8 type with nothing but itself (promote_types raises)
    if (a in UNSIGNED_LIMITED or b in UNSIGNED_LIMITED) and FLOAT not in (a.category, b.category):
        return None  # torch promotes uint16/32/64 with floats only (promote_types raises)
    if COMPLEX in (a.category, b.category):
        # complex with float: complex parts as wide as the wider float (float64 + complex64 -> complex128)
        c, other = (a, b) if a.category == COMPLEX else (b, a)
        if other.category < FLOAT:
            return c
        real = other.to_real()
        if real is bfloat16:  # half and bfloat16 promote to float32 (complex32 + bfloat16 -> complex64)
            real = float32
        return c if c.to_real().itemsize >= real.itemsize else _COMPLEX_OF.get(real, c)
    if a.category != b.category:
        return a if a.category > b.category else b
    if a.category == FLOAT:
        if {a, b} == {float16, bfloat16}:
            return float32
        return a if a.itemsize >= b.itemsize else b
    if a.category == BOOL:
        return a
    return _BY_NP[np.promote_types(a.np, b.np)]


_PROMOTE = {(a, b): c for a in ALL for b in ALL if (c := _promote_pair(a, b)) is not None}


def promote_types(type1: dtype, type2: dtype) -> dtype:
    """The smallest dtype both `type1` and `type2` convert to, as torch.promote_types."""
    try:
        return _PROMOTE[type1, type2]
    except KeyError:
        if isinstance(type1, dtype) and isinstance(type2, dtype):
            if type1 in FLOAT8 or type2 in FLOAT8:
                raise RuntimeError(f"Promotion for Float8 Types is not supported, attempted to promote "
                                   f"{type1.scalar_name} and {type2.scalar_name}") from None
            raise RuntimeError(f"Promotion for uint16, uint32, uint64 types is not supported, attempted to "
                               f"promote {type1.scalar_name} and {type2.scalar_name}") from None
        raise


def _combine(higher: dtype | None, lower: dtype | None) -> dtype | None:
    # A lower priority class (0-d tensors, then Python scalars) only matters when it
    # brings a higher category than the classes above it.
    if higher is None:
        return lower
    if lower is None or higher.category == COMPLEX:
        return higher
    if lower.category == COMPLEX:  # a complex scalar or 0-d tensor keeps a float tensor's precision
        return (complex64 if higher is bfloat16 else higher.to_complex()) if higher.category == FLOAT else lower
    if higher.category == FLOAT:
        return higher
    if higher.category == BOOL or lower.category == FLOAT:
        return promote_types(higher, lower)
    return higher


def scalar_dtype(value) -> dtype:
    """The dtype a Python scalar takes when it meets a tensor."""
    if isinstance(value, bool):
        return bool_
    if isinstance(value, int):
        return int64
    if isinstance(value, complex):
        return get_default_complex_dtype()
    return _default_float


def result_type_of(dim: dtype | None, zero: dtype | None, wrapped: dtype | None) -> dtype:
    """Combine the promoted dtypes of dimensioned tensors, 0-d tensors and Python scalars."""
    out = _combine(dim, _combine(zero, wrapped))
    return out if out is not None else _default_float

"""torch's float8 casts on NumPy arrays (ml_dtypes' float8 types hold the data).

torch converts through float32 (a float64 source is rounded to float32 first), and its rules differ from
ml_dtypes' in a few codes, which this module fixes up after ml_dtypes' round-to-nearest-even:
- float8_e4m3fn saturates: a finite value past 448, and an infinity, becomes +-448 (ml_dtypes: NaN);
- float8_e5m2 writes NaN as 0x7f/0xff (ml_dtypes: 0x7e/0xfe);
- float8_e8m0fnu keeps the float32 exponent only: the sign is dropped, zero is code 0, and the mantissa
  rounds it to the nearest power of two, ties up except below float32's smallest normal (ml_dtypes: NaN for
  zero and negatives).
Back to float32, a NaN keeps its mantissa bits as payload with the quiet bit set (the fnuz types' and
e8m0fnu's single NaN reads as 0x7f800001), a 256-entry table per dtype; wider types get a quiet NaN
(bfloat16 its one NaN, 0x7fc0).
"""
from __future__ import annotations

import numpy as np

from ...tensor import dtype as dt

__all__ = ["is_float8", "from_float8", "to_float8", "cast"]

_MANTISSA_BITS = {dt.float8_e4m3fn: 3, dt.float8_e5m2: 2, dt.float8_e4m3fnuz: 3, dt.float8_e5m2fnuz: 2,
                  dt.float8_e8m0fnu: 0}
_FLOAT8_NP = {d.np: d for d in dt.FLOAT8}
_TABLES: dict = {}


def is_float8(np_dtype) -> bool:
    """Whether a NumPy dtype is one of ml_dtypes' float8 types tidal uses."""
    return np_dtype in _FLOAT8_NP


def _table(d: dt.dtype) -> np.ndarray:
    """float32 bits of the 256 codes of `d`, as torch's casts give them (NaN payloads included)."""
    table = _TABLES.get(d)
    if table is None:
        codes = np.arange(256, dtype=np.uint8)
        table = codes.view(d.np).astype(np.float32).view(np.uint32).copy()
        nan = np.isnan(table.view(np.float32))
        if d in (dt.float8_e4m3fn, dt.float8_e5m2):
            shift = 23 - _MANTISSA_BITS[d]
            payload = (codes.astype(np.uint32) & ((1 << _MANTISSA_BITS[d]) - 1)) << shift
            sign = (codes.astype(np.uint32) >> 7) << 31
            table = np.where(nan, sign | np.uint32(0x7FC00000) | payload, table).astype(np.uint32)
        else:
            table[nan] = 0x7F800001
        _TABLES[d] = table
    return table


def from_float8(x: np.ndarray, target) -> np.ndarray:
    """A float8 array converted to the NumPy dtype `target` as torch converts (through float32)."""
    f32 = _table(_FLOAT8_NP[x.dtype])[x.view(np.uint8)].view(np.float32)
    target = np.dtype(target)
    if target == f32.dtype:
        return f32
    if is_float8(target):
        return to_float8(f32, target)
    nan = np.isnan(f32)
    if nan.any():  # torch's NaN is quiet in every wider type (NumPy keeps 0x7f800001 signaling in float16);
        bits = f32.view(np.uint32) | np.uint32(0x400000)  # bfloat16 has the one NaN 0x7fc0
        bits = np.full_like(bits, 0x7FC00000) if target == dt.bfloat16.np else bits
        f32 = np.where(nan, bits.view(np.float32), f32)
    with np.errstate(invalid="ignore", over="ignore"):
        return f32.astype(target)


def to_float8(x: np.ndarray, target) -> np.ndarray:
    """An array converted to the float8 NumPy dtype `target` with torch's rounding and special values."""
    d = _FLOAT8_NP[np.dtype(target)]
    if x.dtype.kind == "c":
        x = x.real
    if is_float8(x.dtype):
        x = from_float8(x, np.float32)
    with np.errstate(invalid="ignore", over="ignore"):
        f = np.asarray(x).astype(np.float32)
    if d is dt.float8_e8m0fnu:
        return _to_e8m0(f).view(d.np)
    with np.errstate(invalid="ignore", over="ignore"):
        out = f.astype(d.np)
    bits = out.view(np.uint8)
    if d is dt.float8_e4m3fn:  # saturate what ml_dtypes turned into NaN
        over = np.isnan(out) & ~np.isnan(f)
        bits[over] = np.where(np.signbit(f[over]), 0xFE, 0x7E)
    elif d is dt.float8_e5m2:
        nan = np.isnan(f)
        bits[nan] = np.where(np.signbit(f[nan]), 0xFF, 0x7F)
    return out


def _to_e8m0(f: np.ndarray) -> np.ndarray:
    bits = f.view(np.uint32)
    exponent = (bits >> 23) & 0xFF
    mantissa = bits & 0x7FFFFF
    # to the nearest power of two by the mantissa, ties up (but down below the smallest normal float32)
    up = (mantissa > 0x400000) | (mantissa == 0x400000) & (exponent != 0)
    out = (exponent + up).astype(np.uint8)
    out[exponent == 0xFF] = 0xFF  # infinities and NaN
    return out


def cast(x: np.ndarray, target) -> np.ndarray:
    """`x` as NumPy dtype `target` with torch's float8 conversions when either side is float8."""
    x = np.asarray(x)
    if x.ndim == 0:  # (a fill's scalar: the fix-ups index arrays)
        return cast(x.reshape(1), target).reshape(())
    if is_float8(x.dtype):
        return from_float8(x, target)
    if is_float8(np.dtype(target)):
        return to_float8(x, target)
    return x.astype(target)

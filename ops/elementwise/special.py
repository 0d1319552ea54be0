"""The NumPy side of the special-function vocabulary: scalar_kernels' code, vectorized lazily.

Also the small NumPy helpers that mirror scalar_kernels (sgn, nonzero_divisor).

Each entry is a ufunc that numba builds from the same scalar function the compiled
kernels call, on its first use (so `import tidal` never imports numba), one input type at
a time. Templates hand them float32 or float64 only (inputs are cast to the compute dtype
first), so a type is compiled once and then loaded from numba's on-disk cache.
"""
from __future__ import annotations

import math
import threading

import numpy as np

from ...vm import codegen

_lock = threading.Lock()


# Functions the C library computes too: while numba builds their ufunc (seconds, in the compile
# process when kernels compile in the background), calls run on these, element by element
# (0.1-0.4 us an element), or, for float32 erfc, on whole arrays in float64 below (float32 erf
# has its own formula, erf_single).
# (not lgamma: Python's raises at its poles, where the ufunc gives inf)
_LIBM = {"erf": math.erf, "erfc": math.erfc}


# erfc(z) = t exp(-z^2 + P(t)), t = 1 / (1 + z/2), for z >= 0: the Chebyshev fit in Numerical
# Recipes (Press et al., 6.2), relative error below 1.2e-7 (about one float32 ulp)
_ERFC_FIT = (0.17087277, -0.82215223, 1.48851587, -1.13520398, 0.27886807, -0.18628806, 0.09678418,
             0.37409196, 1.00002368, -1.26551223)


def _horner(coefficients, t: np.ndarray, out: np.ndarray) -> np.ndarray:
    # sum_i c_i t^(n-i), highest power first, into `out`, in place
    out.fill(coefficients[0])
    for c in coefficients[1:]:
        out *= t
        out += c
    return out


def _erfc_positive(z: np.ndarray, t: np.ndarray, out: np.ndarray) -> np.ndarray:
    # into `out` (`t`: scratch of z's size), in place: a pass per operation, no temporaries
    np.multiply(z, 0.5, out=t)
    t += 1.0
    np.reciprocal(t, out=t)
    _horner(_ERFC_FIT, t, out)
    out -= z * z
    np.exp(out, out=out)
    out *= t
    return out


_CHUNK = 16384  # elements per pass: float64 scratch that stays in cache across the ~40 passes


def _whole_array(x: np.ndarray, chunk_fn, out_type=np.float32) -> np.ndarray:
    """`chunk_fn(x_part, z, t, p, s) -> float64 result` over `x` in cache-sized pieces, as `out_type`."""
    flat = np.ascontiguousarray(x).reshape(-1)
    out = np.empty(flat.shape, out_type)
    n = min(_CHUNK, flat.size)
    scratch = [np.empty(n) for _ in range(4)]
    for start in range(0, flat.size, _CHUNK):
        part = flat[start:start + _CHUNK]
        out[start:start + part.size] = chunk_fn(part, *[a[:part.size] for a in scratch])
    return out.reshape(np.shape(x))


# erf in single precision, as float32 arithmetic with fused multiply-adds (scalar_kernels.erf_single, which
# a compiled loop runs 16 lanes wide): for |x| <= CUT, x + x SMALL(x^2); beyond, 1 - TAIL(|x| - CENTER) with
# TAIL ~ erfc, and +-1 from LIMIT, the first float32 whose erf rounds to 1 (as float32 arithmetic, and
# torch's GELU tail, have it). Lowest power first; float32 coefficients of near-minimax fits made for tidal
# (relative error 1.4e-9 and absolute error 5e-10 before rounding in float32). Checked on every float32:
# within one ulp of the exact erf, 98.6% of inputs exactly rounded (93-97% on [0.5, 4)).
ERF_SINGLE_SMALL = (0.12837917, -0.37612626, 0.11283579, -0.026853347, 0.005187162, -7.997853e-04, 7.806903e-05)
ERF_SINGLE_TAIL = (5.033536e-04, -0.0026563029, 0.006534515, -0.009831296, 0.009914218, -0.006805409, 0.0029370629,
                   -4.4624982e-04, -3.5574325e-04, 2.846358e-04, -7.5939985e-05, -1.55177e-05, 1.737214e-05,
                   -2.9651608e-06, -1.1000402e-06, 3.58686e-07)
ERF_SINGLE_CUT, ERF_SINGLE_CENTER, ERF_SINGLE_LIMIT = 1.0, 2.46, 3.919205904006958


# The NumPy path's float32 erf: NumPy has no float32 fused multiply-add, and emulating one in float64 made it
# 5x slower than this float64 rational formula, z RP(z^2) / RQ(z^2), a least-squares fit to math.erf made for
# tidal (relative error 2e-9: 98% of float32 inputs exactly rounded, within one ulp). It agrees with the
# compiled formula but for one ulp on a few percent of inputs (2-7% on [0.5, 4)). Lowest power first.
_RATIONAL_P = (1.1283791693639165, 0.1852052164955875, 0.054316832939581144, 0.0038496496870612093,
               0.00037959541342880257, 4.684364364601171e-06, -1.3200209689266332e-08)
_RATIONAL_Q = (1.0, 0.49746726318306633, 0.11395893701610844, 0.015462118009937766, 0.0013075597685788497,
               6.310670094845747e-05)


def erf_single(x) -> np.ndarray:
    """erf of float32 (or narrower) values on the NumPy path: the float64 rational formula, as float32."""
    return _whole_array(np.asarray(x, np.float32), _erf_single_chunk)  # (a dozen passes over scratch in cache)


def _erf_single_chunk(x, z, t, q, p):
    np.clip(x, -ERF_SINGLE_LIMIT, ERF_SINGLE_LIMIT, out=z)  # (NaN stays NaN)
    np.multiply(z, z, out=t)
    _horner(_RATIONAL_Q[::-1], t, q)
    _horner(_RATIONAL_P[::-1], t, p)
    p *= z
    p /= q
    np.divide(z, ERF_SINGLE_LIMIT, out=p, where=t >= ERF_SINGLE_LIMIT * ERF_SINGLE_LIMIT)  # z is +-LIMIT: exactly +-1
    return p


def _erfc_chunk(x, z, t, p, s):
    np.abs(x, out=z)
    _erfc_positive(z, t, p)
    np.subtract(2.0, p, out=s)
    np.copyto(p, s, where=x < 0)
    return p


def _erfc_float32(x: np.ndarray) -> np.ndarray:
    return _whole_array(x, _erfc_chunk)


_WHOLE_ARRAY = {("erfc", np.float32): _erfc_float32}


def build(name: str, type_name: str, nin: int = 1):
    """numba's ufunc of scalar_kernels' `name` for one float type, from numba's on-disk cache when
    there (the compile process calls this to fill that cache)."""
    numba = codegen.import_numba_user("numba")
    scalar = getattr(codegen.import_numba_user(".scalar_kernels", __package__), name)
    sig = f"{type_name}({', '.join([type_name] * nin)})"
    return numba.vectorize([sig], cache=True)(getattr(scalar, "py_func", scalar))


class LazyUfunc:
    """A function of ops/elementwise/scalar_kernels.py, made a NumPy ufunc by numba for each input float type
    when first called with it (float32 in, float32 out; the code itself runs in float64)."""

    __slots__ = ("name", "nin", "_by_type")

    def __init__(self, name: str, nin: int = 1):
        self.name, self.nin, self._by_type = name, nin, {}

    def _build(self, np_type):
        with _lock:
            fn = self._by_type.get(np_type)
            if fn is None:
                fn = self._by_type[np_type] = build(self.name, np.dtype(np_type).name, self.nin)
        return fn

    def _missing(self, np_type):
        # the ufunc to call now: built here, or the C library's function while it builds elsewhere
        exact = _LIBM.get(self.name)
        if exact is None or not codegen.background:
            return self._build(np_type)
        codegen.compiler.request(("ufunc", self.name, np_type), lambda: self._build(np_type),
                                 (__name__, None, "build", (self.name, np.dtype(np_type).name, self.nin)),
                                 first=True)  # the stand-in below is slow
        whole = _WHOLE_ARRAY.get((self.name, np_type))
        if whole is not None:
            return lambda x: whole(np.asarray(x))
        each = np.frompyfunc(exact, self.nin, 1)
        return lambda *args: np.asarray(each(*args), dtype=np_type)

    def __call__(self, *args):
        np_type = np.result_type(*args).type
        fn = self._by_type.get(np_type)
        if fn is None:
            fn = self._missing(np_type)
        return fn(*args)

    def __repr__(self) -> str:
        return f"<lazy ufunc {self.name}>"


def sgn(x):
    """PyTorch's sign on arrays: NaN gives 0, bool is returned unchanged."""
    x = np.asarray(x)
    if x.dtype == np.bool_:
        return x
    return (x > 0).astype(x.dtype) - (x < 0).astype(x.dtype)


def nonzero_divisor(b):
    """`b`, checked: integer division by zero raises PyTorch's error (float division gives inf/nan)."""
    arr = np.asarray(b)
    if arr.dtype.kind in "biu" and not arr.all():
        raise RuntimeError("ZeroDivisionError")
    return b


def remainder_torch(a, b):
    """torch's remainder on arrays (scalar_kernels.remainder_torch's NumPy twin): NumPy's, with a zero taking the
    dividend's sign rather than the divisor's."""
    r = np.remainder(a, b)
    if r.dtype.kind != "f":
        return r
    if np.ndim(r) == 0:
        return np.copysign(r, a) if r == 0 else r
    np.copysign(r, a, out=r, where=r == 0)  # (r is a new array)
    return r


NUMPY_FUNCS = {name: LazyUfunc(name) for name in ("erf", "erfc", "lgamma", "erfinv", "digamma", "bessel_i0",
                                                 "bessel_i1")}
NUMPY_FUNCS["polygamma"] = LazyUfunc("polygamma", 2)
NUMPY_FUNCS.update(sgn=sgn, nonzero_divisor=nonzero_divisor, erf_single=erf_single,
                   remainder_torch=remainder_torch)

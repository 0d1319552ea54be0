"""What compiled kernels of complex-valued programs import after the vocabulary (ops/scalar_kernels.py).

A program that computes on complex values gets its own kernel file (vm/codegen.py), whose header
ends with `from tidal.ops.complex_kernels import *`: the complex casts, and `np`, which replaces
NumPy's namespace in those kernels by one whose `exp` follows NumPy and torch where numba's does
not (C99's special values: exp(x + 0j) keeps its zero imaginary part, exp(-inf + iy) is a signed
zero, and a complex64 result that overflows float32 only in one part keeps the other). Every other
name is NumPy's own. The functions numba gets wrong that are not fixed here keep their programs on
the NumPy path (ops/complex_compiled.py says which, and why). Kernels are cached by this file's
hash (it is registered with codegen), so everything they call lives here.
"""
import math
import sys
import types as _pytypes

import numpy
from numba import njit, types
from numba.extending import overload

__all__ = ["as_complex64", "as_complex128", "np"]


@njit(inline="always")
def as_complex64(x):
    return numpy.complex64(x)


@njit(inline="always")
def as_complex128(x):
    return numpy.complex128(x)


@njit
def _cexp_parts(x, y):
    # C99 Annex G's cexp on float64 parts (what NumPy's npy_cexp and glibc give)
    if math.isfinite(x):
        if y == 0.0:
            return math.exp(x), y  # exact: the imaginary zero keeps its sign
        if not math.isfinite(y):
            return math.nan, math.nan
        e = math.exp(x)
        if math.isinf(e):  # e^x overflows but e^x cos(y) may not: halve the exponent twice
            h = math.exp(0.5 * x)
            return h * math.cos(y) * h, h * math.sin(y) * h
        return e * math.cos(y), e * math.sin(y)
    if math.isinf(x):
        if x > 0.0:
            if y == 0.0:
                return x, y
            if not math.isfinite(y):
                return x, math.nan
            return x * math.cos(y), x * math.sin(y)
        if not math.isfinite(y):
            return 0.0, 0.0
        return math.copysign(0.0, math.cos(y)), math.copysign(0.0, math.sin(y))
    if y == 0.0:  # x is nan
        return x, y
    return math.nan, math.nan


def cexp(z):
    """e**z (the compiled overload below computes it)."""
    return numpy.exp(z)


@overload(cexp)
def _cexp(z):
    if not isinstance(z, types.Complex):
        return lambda z: numpy.exp(z)
    if z.bitwidth == 64:  # complex64: float64 parts, rounded once (a part overflowing float32 alone stays alone)
        def exp64(z):
            re, im = _cexp_parts(numpy.float64(z.real), numpy.float64(z.imag))
            return numpy.complex64(complex(re, im))
        return exp64

    def exp128(z):
        re, im = _cexp_parts(z.real, z.imag)
        return complex(re, im)
    return exp128


class _Namespace(_pytypes.ModuleType):
    """NumPy's names, with the complex-correct functions above in place of NumPy's."""

    def __getattr__(self, name):
        return getattr(numpy, name)


np = _Namespace(__name__ + ".np")
np.exp = cexp
sys.modules.setdefault(np.__name__, np)

"""The vocabulary compiled elementwise kernels import (numba): casts and helpers.

Generated kernel files do `from tidal.ops.scalar_kernels import *`, so every name an
expression template uses must exist here and in `elementwise.NUMPY_VOCAB` alike
(except the NumPy-only 16-bit casts, which keep such expressions off the compiler).
"""
import math  # noqa: F401  templates may use math.*

import numpy as np
from numba import njit

as_uint8 = np.uint8
as_int8 = np.int8
as_int16 = np.int16
as_int32 = np.int32
as_int64 = np.int64
as_float32 = np.float32
as_float64 = np.float64


@njit(inline="always")
def as_bool(x):
    return x != 0


@njit(inline="always")
def where(c, a, b):
    return a if c else b


@njit(inline="always")
def erf(x):
    return math.erf(x)


@njit(inline="always")
def erfc(x):
    return math.erfc(x)


@njit(inline="always")
def lgamma(x):
    return math.lgamma(x)


@njit(inline="always")
def sgn(x):
    return (x > 0) - (x < 0)

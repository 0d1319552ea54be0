"""Which complex-valued elementwise programs the VM compiles, and with what (registered at import).

Fused groups on complex64/complex128 values compile into the same generated numba loops as real
ones; their kernel files also import ops/complex_kernels.py (the complex casts, and an `np` whose
`exp` has C99's special values) and spell `a / b` as NumPy's true_divide (numba's complex `/`
raises on a zero divisor). Compiled this way, arithmetic, division, reciprocal, rsqrt, eq/ne,
where, lerp, logical ops, abs, sgn, conj, square, isnan/isinf/isfinite, exp, sigmoid, log, log2,
log10, log1p, sqrt and logaddexp give the NumPy path's values.

The functions below stay on the NumPy path for complex values, each for a reason found by comparing
numba 0.68 with NumPy and torch on a grid of zeros, signed infinities, NaNs, huge and tiny parts:
"""
from __future__ import annotations

from ..vm import codegen

COMPLEX_NUMPY_ONLY = {
    # numba's trigonometric and hyperbolic functions multiply through infinities (0 * inf = nan)
    # where C99 keeps exact zeros and NaN signs: sin(100j) is nan+infj (torch: infj), cosh(infj)
    # nan+nanj (torch: nan+0j); tanh also loses float32 precision for finite inputs, and sinc
    # (from sin and a division) inherits both
    "np.sin": "inf/nan parts", "np.cos": "inf/nan parts", "np.tan": "inf/nan parts",
    "np.sinh": "inf/nan parts", "np.cosh": "inf/nan parts", "np.tanh": "inf/nan parts, float32 precision",
    "np.sinc": "inf/nan parts, precision",
    # the inverse functions: NaN handling (atan(nan j) is pi/2 + nan j in numba, nan+nanj in torch)
    # and, for acosh, precision near the imaginary axis (acosh(1e-30j) loses its real part)
    "np.arcsin": "nan parts", "np.arccos": "nan parts", "np.arctan": "nan parts",
    "np.arcsinh": "nan parts", "np.arccosh": "nan parts, precision", "np.arctanh": "nan parts",
    # exp2 and expm1 of complex: numba computes 2**z and exp(z) - 1 without the special cases
    # (exp2(1e30+0j) is inf+nanj, torch inf+0j) and expm1 loses tiny arguments (expm1(1e-30) = 0)
    "np.exp2": "inf/nan parts", "np.expm1": "precision at tiny arguments",
    # numba's complex power has none of NumPy's special cases (0 ** (1+1j) is nan+nanj, NumPy 0j)
    "np.power": "zero bases, integer exponents",
}

codegen.register_complex_vocabulary("tidal.ops.complex_kernels", compiles=("as_complex64", "as_complex128"),
                                    numpy_only=tuple(COMPLEX_NUMPY_ONLY))

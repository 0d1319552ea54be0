"""Which complex-valued elementwise programs the VM compiles, and with what (registered at import).

Fused groups on complex64/complex128 values compile into the same generated numba loops as real
ones; their kernel files also import ops/complex_kernels.py (the complex casts, and an `np` whose
complex exp, exp2, expm1, log, log2, log10, log1p, sin, cos, tan, sinh, cosh, tanh, sinc and power
follow NumPy's C code, C99's special values) and spell `a / b` as NumPy's complex division (numba's `/` raises on
a zero divisor). So arithmetic, division, reciprocal, rsqrt, sigmoid, eq/ne, where, lerp, logical
ops, abs, sgn, conj, square, isnan/isinf/isfinite, sqrt, logaddexp and the functions above compile,
with the NumPy path's values (GPU kernels: ops/complex_cuda.py). A complex group feeding a fused
reduction stays on NumPy (vm/fusion.py).

The names below keep a complex-valued program on the NumPy path, each for a reason found by
comparing numba 0.68 with NumPy and torch on a grid of zeros, signed infinities, NaNs, huge and
tiny parts (rewriting them as glibc does is possible, not yet done; numba's complex power, which
has none of NumPy's special cases, is replaced by NumPy's in complex_kernels):
"""
from __future__ import annotations

from ..vm import codegen

COMPLEX_NUMPY_ONLY = {
    # numba's inverse functions take NaN parts their own way (atan(nan j) is pi/2 + nan j in
    # numba, nan + nan j in NumPy and torch; atanh(nan + 0j) nan + pi/2 j, NumPy's nan + nan j),
    # and acosh loses precision near the imaginary axis (acosh(1e-30j) has real part 0, not 1e-30)
    "np.arcsin": "nan parts", "np.arccos": "nan parts", "np.arctan": "nan parts",
    "np.arcsinh": "nan parts", "np.arccosh": "nan parts, precision", "np.arctanh": "nan parts",
}

# compiles: the complex casts, and the functions the real vocabulary keeps on NumPy for speed (its
# vectorized float loops); NumPy's complex ones are scalar C calls, so fusing them pays
codegen.register_complex_vocabulary("tidal.ops.complex_kernels",
                                    compiles=("as_complex64", "as_complex128", "np.tanh", "np.sin", "np.cos"),
                                    numpy_only=tuple(COMPLEX_NUMPY_ONLY), cuda_module="tidal.ops.complex_cuda")

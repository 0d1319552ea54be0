"""Which complex-valued elementwise programs the VM compiles, and with what (registered at import).

Fused groups on complex64/complex128 values compile into the same generated numba loops as real
ones; their kernel files also import ops/complex_numbers/kernels.py (the complex casts, and an `np` whose
complex exp, exp2, expm1, log, log2, log10, log1p, sin, cos, tan, sinh, cosh, tanh, their inverses,
sinc and power are ops/complex_numbers/math.py's: NumPy's C code, C99's special values) and spell `a / b`
as NumPy's complex division (numba's `/` raises on a zero divisor). So every elementwise op tidal
declares for complex values compiles, with the NumPy path's values (GPU kernels: ops/complex_numbers/cuda.py).
A complex group feeding a fused reduction stays on NumPy (vm/fusion.py).
"""
from __future__ import annotations

from ...vm import codegen

# names whose compiled complex versions would be wrong: a complex program using one runs on the
# NumPy path (none now: numba's own complex functions, which differ from NumPy's in special values,
# are all replaced in complex_kernels.np; a function added to the templates that numba gets wrong
# for complex values goes here, with its reason)
COMPLEX_NUMPY_ONLY: dict = {}

# compiles: the complex casts, and the functions the real vocabulary keeps on NumPy for speed (its
# vectorized float loops); NumPy's complex ones are scalar C calls, so fusing them pays
codegen.register_complex_vocabulary("tidal.ops.complex_numbers.kernels",
                                    compiles=("as_complex64", "as_complex128", "np.tanh", "np.sin", "np.cos"),
                                    numpy_only=tuple(COMPLEX_NUMPY_ONLY), cuda_module="tidal.ops.complex_numbers.cuda",
                                    imports=("tidal.ops.complex_numbers.math",))

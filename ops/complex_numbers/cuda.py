"""What CUDA kernels of complex-valued programs import after vm/cuda_math.py (their `np`).

A complex program on a GPU compiles from the same Program as on the CPU (vm/codegen_cuda.py): its
kernel file imports this module last, so `np` is cuda_math's namespace with complex versions of
its functions: ops/complex_numbers/math.py's (NumPy's C code: exp, log, sin..., their inverses, power and
the division, called as device functions, through complex_kernels' tables), numba's cmath sqrt
(NumPy's algorithm, as the CPU's np.sqrt), and the part tests: the CPU's compiled loops' values.
"""
import cmath
import math
import sys

from ...vm import cuda_math
from .kernels import FUNCTIONS, Namespace, as_complex64, as_complex128, complex_impl, divide_impl, power_impl

try:  # the numba-cuda package (its own typing), or numba's built-in CUDA target: as in cuda_math
    from numba.cuda import types
    from numba.cuda.extending import overload
except ImportError:
    from numba import types
    from numba.core.extending import overload

__all__ = ["as_complex64", "as_complex128", "np"]


def _unary(name: str, complex_typer):
    """cuda_math's `name` (the identity where it has none), `complex_typer(z)`'s code on complex values."""
    real = getattr(cuda_math, name, None)

    def fn(z):
        return real(z) if real is not None else z
    fn.__name__ = fn.__qualname__ = name

    def typer(z):  # (complex_kernels.complex_impl's implementations take z)
        if isinstance(z, types.Complex):
            return complex_typer(z)
        return (lambda z: real(z)) if real is not None else (lambda z: z)
    overload(fn, target="cuda", inline="always")(typer)
    return fn


def _binary(name: str, real, complex_typer):
    def fn(a, b):
        return real(a, b)
    fn.__name__ = fn.__qualname__ = name

    def typer(a, b):  # (complex_kernels.divide_impl's implementations take (a, b))
        if isinstance(a, types.Complex) or isinstance(b, types.Complex):
            return complex_typer(a, b)
        return lambda a, b: real(a, b)
    overload(fn, target="cuda", inline="always")(typer)
    return fn


def _of(fn):
    return lambda z: fn


_CMATH = {"sqrt": lambda z: cmath.sqrt(z),
          "isnan": lambda z: math.isnan(z.real) or math.isnan(z.imag),
          "isinf": lambda z: math.isinf(z.real) or math.isinf(z.imag),
          "isfinite": lambda z: math.isfinite(z.real) and math.isfinite(z.imag),
          "conj": lambda z: z.conjugate(), "real": lambda z: z.real}

np = Namespace(__name__ + ".np", cuda_math)
for _name, (_parts, _single) in FUNCTIONS.items():
    setattr(np, _name, _unary(_name, lambda z, p=_parts, s=_single: complex_impl(z, p, s)))
for _name, _impl in _CMATH.items():
    setattr(np, _name, _unary(_name, _of(_impl)))
np.true_divide = _binary("true_divide", lambda x, y: x / y, divide_impl)
np.power = _binary("power", cuda_math.power, power_impl)
sys.modules.setdefault(np.__name__, np)

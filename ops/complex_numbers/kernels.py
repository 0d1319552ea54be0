"""What compiled kernels of complex-valued programs import after the vocabulary (ops/elementwise/scalar_kernels.py).

A program that computes on complex values gets its own kernel file (vm/codegen.py), whose header
ends with `from tidal.ops.complex_numbers.kernels import *`: the complex casts, and `np`, a stand-in for
NumPy's namespace whose functions, on complex values, are ops/complex_numbers/math.py's (NumPy's C code,
C99's special values) rather than numba's, which multiply through infinities (sinh(inf + 1j) gets
nan parts, C99 signed infinities), drop exact zeros (exp(x + 0j) gets a nan imaginary part once e^x
overflows), lose tiny results (log(1 + 1e-30j) has real part 0, not 5e-61), take -0.0 for |-0.0| in
the division (1 / (-0.0 + 0j) is -inf + nan j, NumPy's inf + nan j) and have none of NumPy's cases
of power (0 ** (1+1j) is nan + nan j, NumPy's 0j). Real arguments get NumPy's own function; every
other name is NumPy's. ops/complex_numbers/cuda.py builds the CUDA kernels' names from the same tables.
Kernels are cached by this file's hash and complex_math's (codegen registers both), so everything
they call lives in the two.
"""
import sys
import types as _pytypes

import numpy
from numba import types
from numba.extending import overload

from .math import (_cos_parts, _cosh_parts, _divide_parts, _divide_single, _double, _exp2_parts, _exp2_single,
                   _exp_parts, _expm1_parts, _expm1_single, _log10_parts, _log1p_parts, _log1p_single, _log2_parts,
                   _log_parts, _power_parts, _power_single, _sin_parts, _sinc_parts, _sinc_single, _single, _sinh_parts,
                   _tan_parts, _tanh_parts, _asin_parts, _acos_parts, _atan_parts, _asinh_parts, _acosh_parts,
                   _atanh_parts)

__all__ = ["as_complex64", "as_complex128", "np"]


as_complex64 = numpy.complex64
as_complex128 = numpy.complex128


def complex_impl(z, parts, single=None):
    """The implementation, for the complex numba type `z`, of a function that `parts` computes from
    float64 parts (`single`, where given, from a complex64 value's float32 parts, as NumPy's loop)."""
    if z.bitwidth == 64 and single is not None:
        return lambda z: _single(single(z.real, z.imag))
    if z.bitwidth == 64:
        return lambda z: _single(parts(numpy.float64(z.real), numpy.float64(z.imag)))
    return lambda z: _double(parts(z.real, z.imag))


def divide_impl(a, b):
    """The implementation of a / b for numba types `a`, `b`, one of them complex: NumPy's division,
    in the complex operand's precision as on the NumPy path (a number in a template is weak there)."""
    if all(t.bitwidth == 64 for t in (a, b) if isinstance(t, types.Complex)):
        return lambda a, b: _single(_divide_single(a.real, a.imag, b.real, b.imag))
    return lambda a, b: _double(_divide_parts(numpy.float64(a.real), numpy.float64(a.imag),
                                              numpy.float64(b.real), numpy.float64(b.imag)))


def power_impl(a, b):
    """The implementation of a ** b for numba types `a`, `b`, one of them complex: NumPy's complex power,
    in the complex operands' precision (as divide_impl)."""
    if all(t.bitwidth == 64 for t in (a, b) if isinstance(t, types.Complex)):
        return lambda a, b: _single(_power_single(numpy.float32(a.real), numpy.float32(a.imag),
                                                  numpy.float32(b.real), numpy.float32(b.imag)))
    return lambda a, b: _double(_power_parts(numpy.float64(a.real), numpy.float64(a.imag),
                                             numpy.float64(b.real), numpy.float64(b.imag)))


# NumPy's name -> (parts, single): the functions this file computes for complex values
FUNCTIONS = {"exp": (_exp_parts, None), "exp2": (_exp2_parts, _exp2_single), "expm1": (_expm1_parts, _expm1_single),
             "log": (_log_parts, None), "log2": (_log2_parts, None), "log10": (_log10_parts, None),
             "log1p": (_log1p_parts, _log1p_single),
             "sinh": (_sinh_parts, None), "cosh": (_cosh_parts, None), "tanh": (_tanh_parts, None),
             "sin": (_sin_parts, None), "cos": (_cos_parts, None), "tan": (_tan_parts, None),
             "sinc": (_sinc_parts, _sinc_single), "arcsin": (_asin_parts, None), "arccos": (_acos_parts, None),
             "arctan": (_atan_parts, None), "arcsinh": (_asinh_parts, None), "arccosh": (_acosh_parts, None),
             "arctanh": (_atanh_parts, None)}


def _function(name: str):
    """NumPy's function `name` for kernels, FUNCTIONS' version on complex values."""
    numpy_fn = getattr(numpy, name)
    parts, single = FUNCTIONS[name]

    def fn(z):
        return numpy_fn(z)
    fn.__name__ = fn.__qualname__ = name
    overload(fn)(lambda z: complex_impl(z, parts, single) if isinstance(z, types.Complex) else
                 (lambda z: numpy_fn(z)))
    return fn


def true_divide(a, b):
    """a / b (kernels of complex programs spell `/` this way: see vm/codegen.py)."""
    return numpy.true_divide(a, b)


@overload(true_divide)
def _true_divide(a, b):
    if not isinstance(a, types.Complex) and not isinstance(b, types.Complex):
        return lambda a, b: numpy.true_divide(a, b)
    return divide_impl(a, b)


def power(a, b):
    """NumPy's power (complex values: power_impl)."""
    return numpy.power(a, b)


@overload(power)
def _power(a, b):
    if not isinstance(a, types.Complex) and not isinstance(b, types.Complex):
        return lambda a, b: numpy.power(a, b)
    return power_impl(a, b)


class Namespace(_pytypes.ModuleType):
    """A module's names (NumPy's here), with some replaced (setattr)."""

    def __init__(self, name: str, fallback):
        super().__init__(name)
        self._fallback = fallback

    def __getattr__(self, name):
        return getattr(self._fallback, name)


np = Namespace(__name__ + ".np", numpy)
for _name in FUNCTIONS:
    setattr(np, _name, _function(_name))
np.true_divide = true_divide
np.power = power
sys.modules.setdefault(np.__name__, np)

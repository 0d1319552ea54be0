"""NumPy's scalar ufuncs for generated CUDA kernels, which import this module as `np`.

Expression templates call `np.exp(x)`, `np.remainder(a, b)`... Numba's CUDA target compiles
only some NumPy ufuncs, so each name here is a function that means NumPy itself when run as
Python (the CUDA simulator runs kernels as Python) and is compiled for CUDA from `math`
(whose CUDA versions keep float32 in float32) through an overload. Ufuncs the CUDA target
already compiles are NumPy's own. Semantics follow NumPy's C loops (npy_divmod & co.).
"""
from __future__ import annotations

import builtins
import math

import numpy as np

try:  # the numba-cuda package: its own typing and IR, so overloads must be registered through it
    from numba.cuda import types
    from numba.cuda.extending import overload
except ImportError:  # numba's built-in CUDA target
    from numba import types
    from numba.core.extending import overload

# compiled by numba's CUDA target as they are
arctan2, hypot, maximum, minimum, fmax, fmin = np.arctan2, np.hypot, np.maximum, np.minimum, np.fmax, np.fmin
left_shift, right_shift = np.left_shift, np.right_shift
sin, cos, tan, arcsin, arccos, arctan = np.sin, np.cos, np.tan, np.arcsin, np.arccos, np.arctan
sinh, cosh, tanh, arcsinh, arccosh, arctanh = np.sinh, np.cosh, np.tanh, np.arcsinh, np.arccosh, np.arctanh
deg2rad, rad2deg, log, log2, log10 = np.deg2rad, np.rad2deg, np.log, np.log2, np.log10

_LN2 = math.log(2.0)

# names of the compiled (CPU) vocabulary that this module replaces in CUDA kernels (see module_source)
__all__ = ["nonzero_divisor", "exp_single", "remainder_torch"]


def _is_int(*tys) -> bool:
    return all(isinstance(t, (types.Integer, types.Boolean)) for t in tys)


def _unary(np_fn, typer):
    def fn(x):
        return np_fn(x)
    fn.__name__ = fn.__qualname__ = np_fn.__name__
    overload(fn, target="cuda", inline="always")(lambda x: typer(x))  # numba matches the signature
    return fn


def _binary(np_fn, typer):
    def fn(x, y):
        return np_fn(x, y)
    fn.__name__ = fn.__qualname__ = np_fn.__name__
    overload(fn, target="cuda", inline="always")(lambda x, y: typer(x, y))
    return fn


def _any(impl):
    """A typer giving `impl` whatever the argument types."""
    return lambda *tys: impl


def _by_kind(int_impl, float_impl):
    """A typer choosing the integer (and bool) or the floating-point implementation."""
    return lambda *tys: int_impl if _is_int(*tys) else float_impl


def _rint(x):
    # round half to even, exact for every float (x - trunc(x) is exact); inf and nan pass through
    t = math.trunc(x)
    d = x - t
    if d > 0.5 or (d == 0.5 and t % 2 != 0):
        t += 1
    elif d < -0.5 or (d == -0.5 and t % 2 != 0):
        t -= 1
    return t


def _float_fmod(x, y):
    return math.fmod(x, y)


def _int_fmod(x, y):
    # C's truncated remainder from Python's floored one (0 for a zero divisor, like numba's //)
    if y == 0:
        return x - x
    r = x % y
    if r != 0 and (r < 0) != (x < 0):
        r -= y
    return r


def _float_remainder(x, y):
    if y == 0:
        return math.fmod(x, y)
    m = math.fmod(x, y)
    if m != 0:
        if (y < 0) != (m < 0):
            m += y
    else:
        m = math.copysign(0.0, y)
    return m


def _torch_remainder(x, y):
    # torch's: NumPy's, except that a zero keeps the dividend's sign (fmod's) rather than the divisor's
    r = np.remainder(x, y)
    if np.asarray(r).dtype.kind != "f":
        return r
    return np.where(r == 0, np.copysign(r, x), r)


def _torch_float_remainder(x, y):
    m = math.fmod(x, y)
    if m != 0 and (y < 0) != (m < 0):
        m += y
    return m


def _float_floor_divide(x, y):
    if y == 0:
        return x / y
    m = math.fmod(x, y)
    div = (x - m) / y
    if m != 0 and (y < 0) != (m < 0):
        div -= 1
    if div != 0:
        q = math.floor(div)
        if div - q > 0.5:
            q += 1
        return q
    return math.copysign(0.0, x / y)


def _logaddexp(x, y):
    if x == y:
        return x + _LN2
    d = x - y
    if d > 0:
        return x + math.log1p(math.exp(-d))
    if d <= 0:
        return y + math.log1p(math.exp(d))
    return d  # nan


def _logaddexp2(x, y):
    if x == y:
        return x + 1
    d = x - y
    if d > 0:
        return x + math.log1p(2.0 ** -d) / _LN2
    if d <= 0:
        return y + math.log1p(2.0 ** d) / _LN2
    return d


def _sinc(x):
    if x == 0:
        return x * 0 + 1
    y = math.pi * x
    return math.sin(y) / y


def _nextafter_typer(x, y):
    from numba.cuda import libdevice
    if isinstance(x, types.Float) and x.bitwidth == 32:
        return lambda x, y: libdevice.nextafterf(x, y)
    return lambda x, y: libdevice.nextafter(x, y)


abs = _unary(np.abs, _any(lambda x: builtins.abs(x)))  # noqa: A001  NumPy's name
floor = _unary(np.floor, _by_kind(lambda x: x, lambda x: math.floor(x)))
ceil = _unary(np.ceil, _by_kind(lambda x: x, lambda x: math.ceil(x)))
trunc = _unary(np.trunc, _by_kind(lambda x: x, lambda x: math.trunc(x)))
rint = _unary(np.rint, _by_kind(lambda x: x, _rint))
isnan = _unary(np.isnan, _by_kind(lambda x: False, lambda x: math.isnan(x)))
isinf = _unary(np.isinf, _by_kind(lambda x: False, lambda x: math.isinf(x)))
isfinite = _unary(np.isfinite, _by_kind(lambda x: True, lambda x: math.isfinite(x)))
signbit = _unary(np.signbit, _by_kind(lambda x: x < 0, lambda x: math.copysign(1.0, x) < 0))
invert = _unary(np.invert, lambda x: (lambda x: not x) if isinstance(x, types.Boolean) else (lambda x: ~x))
exp = _unary(np.exp, _any(lambda x: math.exp(x)))
exp_single = _unary(np.exp, _any(lambda x: math.exp(x)))  # (the CPU formula is for vectorizing loops)
exp2 = _unary(np.exp2, _any(lambda x: 2.0 ** x))
expm1 = _unary(np.expm1, _any(lambda x: math.expm1(x)))
log1p = _unary(np.log1p, _any(lambda x: math.log1p(x)))
sqrt = _unary(np.sqrt, _any(lambda x: math.sqrt(x)))
sinc = _unary(np.sinc, _any(_sinc))
conj = _unary(np.conj, _any(lambda x: x))  # real dtypes only on CUDA: the identity
fmod = _binary(np.fmod, _by_kind(_int_fmod, _float_fmod))
remainder = _binary(np.remainder, _by_kind(lambda x, y: x % y, _float_remainder))
remainder_torch = _binary(_torch_remainder, _by_kind(lambda x, y: x % y, _torch_float_remainder))
floor_divide = _binary(np.floor_divide, _by_kind(lambda x, y: x // y, _float_floor_divide))
power = _binary(np.power, _by_kind(lambda x, y: x ** y, lambda x, y: math.pow(x, y)))
copysign = _binary(np.copysign, _any(lambda x, y: math.copysign(x, y)))
nextafter = _binary(np.nextafter, _nextafter_typer)
logaddexp = _binary(np.logaddexp, _any(_logaddexp))
logaddexp2 = _binary(np.logaddexp2, _any(_logaddexp2))


def nonzero_divisor(b):
    """The divisor as it is: a GPU kernel cannot raise, so an integer division by zero gives what numba's
    division gives there (the CPU vocabulary's version raises PyTorch's error)."""
    return b


overload(nonzero_divisor, target="cuda", inline="always")(lambda b: lambda b: b)

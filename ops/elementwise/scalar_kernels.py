"""The vocabulary compiled elementwise kernels import (numba): casts, helpers, special functions.

Generated kernel files do `from tidal.ops.elementwise.scalar_kernels import *`, so every name an
expression template uses must exist here and in `elementwise.NUMPY_VOCAB` alike
(except the NumPy-only 16-bit casts, which keep such expressions off the compiler).
The special functions are written once, here, on Python floats: compiled kernels call
them directly and the NumPy path vectorizes the same code lazily (ops/elementwise/special.py).
They compute in float64 whatever the input type (but for the float32 formulas erf_single and
exp_single, which elementwise.py substitutes for float32 erf and exp), and take fractional parts with `_frac`
(numba's math.floor returns an int64, which inf does not fit, and its CUDA target has no np.floor). Kernels are cached by this file's
hash, so everything they call must live in this file.
"""
import math  # templates may use math.*

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic, overload

as_uint8 = np.uint8
as_uint16 = np.uint16
as_uint32 = np.uint32
as_uint64 = np.uint64
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
def sgn(x):
    # PyTorch's sign: NaN gives 0, bool stays bool (the caller's cast)
    return (x > 0) - (x < 0)


def nonzero_divisor(b):
    """`b`, checked: integer division by zero raises PyTorch's error (float division gives inf/nan)."""
    return b


@overload(nonzero_divisor, inline="always")
def _nonzero_divisor(b):
    if isinstance(b, (types.Integer, types.Boolean)):
        def check(b):
            if b == 0:
                raise RuntimeError("ZeroDivisionError")
            return b
        return check
    return lambda b: b


def remainder_torch(a, b):
    """torch's remainder: a float zero keeps the dividend's sign (NumPy's takes the divisor's)."""
    return np.remainder(a, b)


@overload(remainder_torch, inline="always")
def _remainder_torch(a, b):
    if isinstance(a, types.Float) or isinstance(b, types.Float):
        def torch_float(a, b):  # fmod moved into the divisor's sign unless it is zero, as torch's kernel
            m = np.fmod(a, b)
            return m + b if m != 0 and (b < 0) != (m < 0) else m
        return torch_float
    return lambda a, b: np.remainder(a, b)  # (numba's integer np.fmod is wrong for negative dividends)


@njit(inline="always")
def erf(x):
    return math.erf(x)


from .special import ERF_SINGLE_CENTER, ERF_SINGLE_CUT, ERF_SINGLE_LIMIT, ERF_SINGLE_SMALL, ERF_SINGLE_TAIL

_F32 = np.float32


@intrinsic
def _fma(typingctx, a, b, c):
    """a * b + c rounded once (LLVM's fma: one instruction where the CPU has it, which loops vectorize)."""
    def codegen(context, builder, signature, args):
        ty = args[0].type
        fma = builder.module.declare_intrinsic("llvm.fma", [ty], ir.FunctionType(ty, [ty, ty, ty]))
        return builder.call(fma, args)
    if not (a == b == c and isinstance(a, types.Float)):
        return None
    return a(a, b, c), codegen


# special.py's float32 polynomials, highest power first, as float32 constants
_SMALL = tuple(_F32(c) for c in ERF_SINGLE_SMALL[::-1])
_TAIL = tuple(_F32(c) for c in ERF_SINGLE_TAIL[::-1])
_CUT, _CENTER, _LIMIT = _F32(ERF_SINGLE_CUT), _F32(ERF_SINGLE_CENTER), _F32(ERF_SINGLE_LIMIT)


@njit(inline="always")
def erf_single(x):
    # erf for float32 (and narrower) values in float32 arithmetic a compiled loop vectorizes, 16 lanes wide
    # (the float64 rational formula it replaces halved the lanes and divided: GELU's loops ran 2x slower):
    # special.py's two polynomials, both computed and one chosen, by fused multiply-adds. Within one ulp of
    # the exact erf for every float32; +-1 from LIMIT on; -0 stays -0, inf gives +-1 and NaN stays NaN (it
    # fails every comparison into the tail polynomial, which it taints).
    a = _F32(x)
    t = abs(a)  # (the CUDA target has no np.abs)
    s = a * a
    p = _SMALL[0]
    for c in _SMALL[1:]:
        p = _fma(p, s, c)
    small = _fma(a, p, a)  # a + a P(a^2): rounded once
    u = t - _CENTER  # exact where it is used (t in [1, 4) and the centre are multiples of 2**-23, |u| < 2)
    q = _TAIL[0]
    for c in _TAIL[1:]:
        q = _fma(q, u, c)
    tail = _F32(1.0) if t >= _LIMIT else _F32(1.0) - q
    tail = math.copysign(tail, a)  # (one bitwise instruction, where a select took three)
    return small if t <= _CUT else tail


@njit(inline="always")
def exp_single(x):
    # exp for float32 (and narrower) values in float32 arithmetic that a compiled loop vectorizes
    # (numba calls libm's scalar expf per element: softmax and GELU's backward were 2x slower): x = n ln2 + r
    # with |r| <= ln2/2 (Cody-Waite), exp(r) by Cephes' expf polynomial in fused multiply-adds with the 1
    # added last, 2**n built in the exponent bits as two factors so results below FLT_MIN come out as
    # denormals. Checked on every float32: within 1 ulp of the exact value, 99.2% exactly rounded (96.5%
    # with separate multiplies and adds, 25% slower); inf -> inf, -inf -> 0, NaN -> NaN (it fails both
    # clamps and taints the polynomial).
    z = _F32(x)
    z = _F32(88.8) if z > _F32(88.8) else z  # past the largest float32 exp: inf
    z = _F32(-104.0) if z < _F32(-104.0) else z  # below half the smallest denormal: 0
    t = _fma(z, _F32(1.44269504), _F32(12582912.0))  # 1.5 * 2**23: n = round(z / ln2) in t's low bits
    n = t - _F32(12582912.0)
    r = _fma(n, _F32(2.12194440e-4), _fma(n, _F32(-0.693359375), z))
    r2 = r * r
    upper = _fma(_fma(_F32(1.9875691500e-4), r, _F32(1.3981999507e-3)), r2,
                 _fma(_F32(8.3334519073e-3), r, _F32(4.1665795894e-2)))
    p = _fma(upper, r2 * r2, _fma(_fma(_F32(1.6666665459e-1), r, _F32(5.0000001201e-1)), r2, r)) + _F32(1.0)
    k = np.int32(_F32(t).view(np.int32) - np.int32(0x4B400000))  # n as an integer
    half = k >> np.int32(1)
    low = np.int32((half + np.int32(127)) << np.int32(23)).view(np.float32)  # 2**(n//2)
    high = np.int32((k - half + np.int32(127)) << np.int32(23)).view(np.float32)
    return p * low * high


@njit(inline="always")
def erfc(x):
    return math.erfc(x)


@njit(inline="always")
def lgamma(x):
    return math.lgamma(x)


_TWO_OVER_SQRT_PI = 1.1283791670955126
_SQRT_PI = 1.7724538509055159


@njit
def erfinv(x):
    """Inverse error function: a float32-accurate start refined by Halley steps (Newton on
    log erfc in the far tail, where the start's fit does not reach)."""
    x = float(x)
    a = abs(x)
    if not a < 1.0:
        if a == 1.0:
            return math.copysign(math.inf, x)
        return math.nan
    t = 1.0 - a  # exact for a > 0.5
    if t < 1e-7:
        # erfc(y) ~ exp(-y^2) / (y sqrt(pi)) gives a start; Newton on log erfc(y) = log t
        y = math.sqrt(-math.log(t))
        for _ in range(2):
            y = math.sqrt(-math.log(t * y * _SQRT_PI))
        for _ in range(6):
            c = math.erfc(y)
            step = math.log(c / t) * c / (-_TWO_OVER_SQRT_PI * math.exp(-y * y))
            y -= step
            if abs(step) <= 1e-15 * y:
                break
        return math.copysign(y, x)
    # Giles' single-precision approximation as the starting point
    w = -math.log(t * (1.0 + a))
    if w < 5.0:
        w -= 2.5
        p = 2.81022636e-08
        p = 3.43273939e-07 + p * w
        p = -3.5233877e-06 + p * w
        p = -4.39150654e-06 + p * w
        p = 0.00021858087 + p * w
        p = -0.00125372503 + p * w
        p = -0.00417768164 + p * w
        p = 0.246640727 + p * w
        p = 1.50140941 + p * w
    else:
        w = math.sqrt(w) - 3.0
        p = -0.000200214257
        p = 0.000100950558 + p * w
        p = 0.00134934322 + p * w
        p = -0.00367342844 + p * w
        p = 0.00573950773 + p * w
        p = -0.0076224613 + p * w
        p = 0.00943887047 + p * w
        p = 1.00167406 + p * w
        p = 2.83297682 + p * w
    y = p * a
    # a Halley step (erf'' = -2y erf') triples the start's ~7 correct digits; the residual
    # erf(y) - a goes through erfc above 1/2 so it keeps its relative precision
    for _ in range(3):
        r = math.erf(y) - a if a <= 0.5 else t - math.erfc(y)
        step = r / (_TWO_OVER_SQRT_PI * math.exp(-y * y) + y * r)
        y -= step
        if abs(step) <= 1e-6 * y:  # the error left is about step^3
            break
    return math.copysign(y, x)


@njit
def _digamma_positive(x):
    acc = 0.0
    while x < 10.0:  # psi(x) = psi(x + 1) - 1/x until the asymptotic series is exact
        acc -= 1.0 / x
        x += 1.0
    z = 1.0 / (x * x)
    tail = z * (1.0 / 12 - z * (1.0 / 120 - z * (1.0 / 252 - z * (1.0 / 240 - z * (
        1.0 / 132 - z * (691.0 / 32760 - z * (1.0 / 12)))))))
    return acc + math.log(x) - 0.5 / x - tail


@njit
def _frac(x):
    """x - trunc(x), sign kept (numba's CUDA target has no np.trunc, its CPU target no math.fmod)."""
    if x != x or math.isinf(x):
        return math.nan
    if abs(x) >= 4503599627370496.0:  # 2**52: every float this large is an integer
        return 0.0
    return x - float(int(x))


@njit
def digamma(x):
    """psi(x), the logarithmic derivative of gamma; -inf at +0, NaN at negative integers."""
    x = float(x)
    if x == 0.0:
        return math.copysign(math.inf, -x)
    if x < 0.0:
        if _frac(x) == 0.0 or math.isinf(x):
            return math.nan
        # reflection; tan of the fractional part keeps pi*x exact for large |x|
        return _digamma_positive(1.0 - x) - math.pi / math.tan(math.pi * _frac(x))
    return _digamma_positive(x)


@njit
def trigamma(x):
    """psi'(x): reflection below 1/2, recurrence, then the asymptotic series."""
    x = float(x)
    acc = 0.0
    sign = 1.0
    if x < 0.5:
        s = math.sin(math.pi * _frac(x))
        acc = -(math.pi * math.pi) / (s * s)
        sign = -1.0
        x = 1.0 - x
    while x < 10.0:
        acc += 1.0 / (x * x)
        x += 1.0
    z = 1.0 / (x * x)
    # psi'(x) ~ 1/x + 1/(2x^2) + sum B_2k / x^(2k+1)
    tail = (1.0 + 0.5 / x + z * (1.0 / 6 - z * (1.0 / 30 - z * (1.0 / 42 - z * (1.0 / 30 - z * (
        5.0 / 66 - z * (691.0 / 2730 - z * (7.0 / 6)))))))) / x
    return sign * (acc + tail)


# B_2j / (2j)!: the Euler-Maclaurin coefficients
_EULER_MACLAURIN = (1.0 / 12, -1.0 / 720, 1.0 / 30240, -1.0 / 1209600, 1.0 / 47900160,
                    -691.0 / 1307674368000, 1.0 / 74724249600, -3617.0 / 10670622842880000)


@njit
def zeta(s, q):
    """The Hurwitz zeta function sum_k (q + k)^-s for s > 1."""
    s, q = float(s), float(q)
    if s == 1.0:
        return math.inf
    if s < 1.0 or s != s or q != q:
        return math.nan
    if math.isinf(q):
        return 0.0 if q > 0 else math.inf  # -inf counts as a pole, as in PyTorch
    if q <= 0.0:
        if _frac(q) == 0.0:  # q is finite here
            return math.inf
        if _frac(s) != 0.0 and not math.isinf(s):
            return math.nan  # a negative base to a fractional power
    total = 0.0
    a = q
    while a < 16.0:  # sum directly until the Euler-Maclaurin tail converges fast
        total += a ** -s
        a += 1.0
    p = a ** -s
    total += a * p / (s - 1.0) + 0.5 * p
    rising = s
    power = p / a
    inv2 = 1.0 / (a * a)
    for j in range(8):
        total += _EULER_MACLAURIN[j] * rising * power
        rising *= (s + 2 * j + 1) * (s + 2 * j + 2)
        power *= inv2
    return total


@njit
def polygamma(n, x):
    """The n-th derivative of digamma (n a non-negative integer, passed as a float)."""
    k = int(n)
    if k == 0:
        return digamma(x)
    if k == 1:
        return trigamma(x)
    sign = 1.0 if k % 2 == 1 else -1.0
    return sign * math.gamma(k + 1.0) * zeta(k + 1.0, x)


@njit
def _bessel_large(a, order):
    """e^a / sqrt(2 pi a) * sum_k prod_j ((2j-1)^2 - 4 order^2) / (j 8a): I_order(a) for a > 30."""
    term = 1.0
    total = 1.0
    k = 1.0
    nu = 4.0 * order * order
    while k < 60.0:
        term *= ((2.0 * k - 1.0) ** 2 - nu) / (8.0 * a * k)
        total += term
        if abs(term) < 1e-17 * abs(total):
            break
        k += 1.0
    half = math.exp(0.5 * a)  # split so e^a does not overflow before the division
    return half * (half / math.sqrt(2.0 * math.pi * a)) * total


@njit
def bessel_i0(x):
    """The modified Bessel function of the first kind, order zero."""
    a = abs(float(x))
    if not a <= 30.0:
        return _bessel_large(a, 0.0)  # nan stays nan
    # power series sum ((a/2)^k / k!)^2: positive terms, no cancellation
    q = 0.25 * a * a
    term = 1.0
    total = 1.0
    k = 1.0
    while term > 1e-17 * total:
        term *= q / (k * k)
        total += term
        k += 1.0
    return total


@njit
def bessel_i1(x):
    """The modified Bessel function of the first kind, order one (odd)."""
    x = float(x)
    a = abs(x)
    if not a <= 30.0:
        return math.copysign(_bessel_large(a, 1.0), x)
    # power series (a/2) sum (a^2/4)^k / (k! (k+1)!)
    q = 0.25 * a * a
    term = 0.5 * a
    total = term
    k = 1.0
    while term > 1e-17 * total:
        term *= q / (k * (k + 1.0))
        total += term
        k += 1.0
    return math.copysign(total, x)

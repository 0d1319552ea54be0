"""Complex functions on float parts, as NumPy's C code computes them (C99 Annex G, glibc's algorithms).

Each `_<name>_parts(x, y)` takes the real and imaginary parts of z as float64 and returns those of
the result; `_<name>_single` does the same on a complex64 value's float32 parts where NumPy's
complex64 loop rounds on the way (exp2, expm1, log1p, sinc, division, power). numba compiles them
into the generated kernels of complex programs, on the CPU (ops/complex_numbers/kernels.py) and as CUDA
device functions (ops/complex_numbers/cuda.py); they are cached by numba (cache=True), so a new kernel in a
new process does not compile them again. The inverse functions are numba's cmath, which follows
C99 except for the NaN cases fixed here.
"""
import cmath
import math

import numpy
from numba import njit


_DBL_MIN = 2.2250738585072014e-308
_DBL_MAX = 1.7976931348623157e308
_EXP_LIMIT = 709.0    # int((DBL_MAX_EXP - 1) * ln 2): e^x beyond it overflows
_TANH_LIMIT = 354.0   # half of it: sinh(x)^2 beyond it overflows
_LOG2E = 1.4426950408889634
_LOG10E = 0.4342944819032518
_LN2 = 0.6931471805599453


@njit(inline="always")
def _sin_cos(y):
    # sin and cos of y, exact for tiny y (glibc's: a subnormal y is its own sine)
    return (math.sin(y), math.cos(y)) if math.fabs(y) > _DBL_MIN else (y, 1.0)


@njit(cache=True, error_model="numpy")
def _exp_parts(x, y):
    if math.isfinite(x):
        if y == 0.0:
            return math.exp(x), y  # exact: the imaginary zero keeps its sign
        if not math.isfinite(y):
            return math.nan, math.nan
        e = math.exp(x)
        if math.isinf(e):  # e^x overflows but e^x cos(y) may not
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
            return 0.0, math.copysign(0.0, y)
        return math.copysign(0.0, math.cos(y)), math.copysign(0.0, math.sin(y))
    if y == 0.0:  # x is nan
        return x, y
    return math.nan, math.nan


@njit(inline="always")
def _exp2_parts(x, y):
    return _exp_parts(x * _LN2, y * _LN2)  # NumPy's: exp(z ln 2)


@njit(inline="always")
def _exp2_single(x, y):
    ln2 = numpy.float32(_LN2)  # z ln 2 rounded to float32 as in NumPy's complex64 loop (it moves sin(1e30 ln 2))
    return _exp_parts(numpy.float64(x * ln2), numpy.float64(y * ln2))


@njit(cache=True, error_model="numpy")
def _expm1_parts(x, y):
    # NumPy's: expm1(x) cos(y) - 2 sin(y/2)^2 + i e^x sin(y)
    a = math.sin(0.5 * y)
    return math.expm1(x) * math.cos(y) - 2.0 * a * a, math.exp(x) * math.sin(y)


@njit(cache=True, error_model="numpy")
def _expm1_single(x, y):
    # the same in float32, as NumPy's complex64 loop (exp(100) overflows there: 0 * inf is its nan)
    half, two = numpy.float32(0.5), numpy.float32(2.0)
    a = math.sin(y * half)
    return math.expm1(x) * math.cos(y) - two * a * a, math.exp(x) * math.sin(y)


_SPLIT = 134217729.0  # 2**27 + 1: Veltkamp's splitter for float64


@njit(inline="always")
def _square_parts(a):
    # a*a as hi + lo exactly (Dekker's product, no FMA needed)
    hi = a * a
    t = _SPLIT * a
    ah = t - (t - a)
    al = a - ah
    return hi, ((ah * ah - hi) + 2.0 * ah * al) + al * al


@njit(inline="always")
def _two_sum(a, b):
    s = a + b
    v = s - a
    return s, (a - (s - v)) + (b - v)


@njit(cache=True, error_model="numpy")
def _x2y2m1(x, y):
    # x^2 + y^2 - 1 with the cancellation near |z| = 1 done exactly (compensated sums of exact squares)
    x2, x2lo = _square_parts(x)
    y2, y2lo = _square_parts(y)
    s, e1 = _two_sum(-1.0, x2)
    s, e2 = _two_sum(s, y2)
    return s + (((e1 + e2) + x2lo) + y2lo)


@njit(cache=True, error_model="numpy")
def _log_parts(x, y):
    # glibc's clog: log|z| + i arg z, log|z| through log1p(|z|^2 - 1) where |z| is near 1
    ax, ay = math.fabs(x), math.fabs(y)
    if math.isinf(ax) or math.isinf(ay):
        re = math.inf
    elif math.isnan(ax) or math.isnan(ay):
        re = math.nan
    else:
        if ax < ay:
            ax, ay = ay, ax
        if ax == 1.0:
            re = 0.5 * math.log1p(ay * ay)
        elif 1.0 < ax < 2.0 and ay < 1.0:
            d = (ax - 1.0) * (ax + 1.0)
            re = 0.5 * math.log1p(d + ay * ay if ay >= 2.220446049250313e-16 else d)
        elif 0.5 <= ax < 1.0 and ay < 1.1102230246251565e-16:
            re = 0.5 * math.log1p((ax - 1.0) * (ax + 1.0))
        elif 0.5 <= ax < 1.0 and ax * ax + ay * ay >= 0.5:
            re = 0.5 * math.log1p(_x2y2m1(ax, ay))
        else:
            re = math.log(math.hypot(ax, ay))
    return re, math.atan2(y, x)


@njit(inline="always")
def _hypot(a, b):
    # C99's hypot: an infinite part wins over a nan one (numba's CPU hypot returns a for hypot(a, nan))
    if math.isinf(a) or math.isinf(b):
        return math.inf
    return math.hypot(a, b) if not (math.isnan(a) or math.isnan(b)) else math.nan


@njit(cache=True, error_model="numpy")
def _log1p_parts(x, y):
    # NumPy's: log|1 + z| + i arg(1 + z)
    a = x + 1.0
    return math.log(_hypot(a, y)), math.atan2(y, a)


@njit(cache=True, error_model="numpy")
def _log1p_single(x, y):
    a = x + numpy.float32(1.0)  # rounded to float32 first, as NumPy's complex64 loop
    return math.log(_hypot(numpy.float64(a), numpy.float64(y))), math.atan2(numpy.float64(y), numpy.float64(a))


@njit(inline="always")
def _log2_parts(x, y):
    re, im = _log_parts(x, y)
    return re * _LOG2E, im * _LOG2E


@njit(inline="always")
def _log10_parts(x, y):
    re, im = _log_parts(x, y)
    return re * _LOG10E, im * _LOG10E


@njit(cache=True, error_model="numpy")
def _sinh_parts(x, y):
    # glibc's csinh: C99 Annex G's special values, and no overflow before the result's
    negate = math.copysign(1.0, x) < 0.0
    ax = math.fabs(x)
    if math.isfinite(ax):
        if not math.isfinite(y):
            if ax == 0.0:
                return (-0.0 if negate else 0.0), y - y
            return math.nan, math.nan
        s, c = _sin_cos(y)
        if ax > _EXP_LIMIT:
            e = math.exp(_EXP_LIMIT)
            rx = ax - _EXP_LIMIT
            s *= 0.5 * e
            c *= 0.5 * e
            if rx > _EXP_LIMIT:
                rx -= _EXP_LIMIT
                s *= e
                c *= e
            if rx > _EXP_LIMIT:
                re, im = _DBL_MAX * c, _DBL_MAX * s
            else:
                ev = math.exp(rx)
                re, im = ev * c, ev * s
        else:
            re, im = math.sinh(ax) * c, math.cosh(ax) * s
        return (-re if negate else re), im
    if math.isinf(ax):
        if math.isfinite(y) and y != 0.0:
            s, c = _sin_cos(y)
            re = math.copysign(math.inf, c)
            return (-re if negate else re), math.copysign(math.inf, s)
        if y == 0.0:
            return (-math.inf if negate else math.inf), y
        return math.inf, y - y
    return math.nan, (y if y == 0.0 else math.nan)


@njit(cache=True, error_model="numpy")
def _cosh_parts(x, y):
    # glibc's ccosh
    if math.isfinite(x):
        if not math.isfinite(y):
            return y - y, (0.0 if x == 0.0 else math.nan)
        s, c = _sin_cos(y)
        ax = math.fabs(x)
        if ax > _EXP_LIMIT:
            e = math.exp(_EXP_LIMIT)
            if x < 0.0:
                s = -s
            rx = ax - _EXP_LIMIT
            s *= 0.5 * e
            c *= 0.5 * e
            if rx > _EXP_LIMIT:
                rx -= _EXP_LIMIT
                s *= e
                c *= e
            if rx > _EXP_LIMIT:
                return _DBL_MAX * c, _DBL_MAX * s
            ev = math.exp(rx)
            return ev * c, ev * s
        return math.cosh(x) * c, math.sinh(x) * s
    if math.isinf(x):
        if math.isfinite(y) and y != 0.0:
            s, c = _sin_cos(y)
            return math.copysign(math.inf, c), math.copysign(math.inf, s) * math.copysign(1.0, x)
        if y == 0.0:
            return math.inf, y * math.copysign(1.0, x)
        return math.inf, y - y
    return math.nan, (y if y == 0.0 else math.nan)


@njit(cache=True, error_model="numpy")
def _tanh_parts(x, y):
    # glibc's ctanh
    if not math.isfinite(x) or not math.isfinite(y):
        if x == 0.0:  # C99: tanh(+-0 + i inf) and tanh(+-0 + i nan) are +-0 + i nan
            return x, math.nan
        if math.isinf(x):
            if math.isfinite(y) and math.fabs(y) > 1.0:
                s, c = _sin_cos(y)
                return math.copysign(1.0, x), math.copysign(0.0, s * c)
            return math.copysign(1.0, x), math.copysign(0.0, y)
        if y == 0.0:
            return x, y
        return math.nan, math.nan
    s, c = _sin_cos(y)
    if math.fabs(x) > _TANH_LIMIT:
        # tanh is +-1 to double precision; the imaginary part 4 sin(y) cos(y) / e^(2|x|) without overflow
        e2 = math.exp(2.0 * _TANH_LIMIT)
        im = 4.0 * s * c / e2
        rx = math.fabs(x) - _TANH_LIMIT
        im = im / e2 if rx > _TANH_LIMIT else im / math.exp(2.0 * rx)
        return math.copysign(1.0, x), im
    if math.fabs(x) > _DBL_MIN:
        sh, ch = math.sinh(x), math.cosh(x)
    else:
        sh, ch = x, 1.0
    den = sh * sh + c * c if math.fabs(sh) > math.fabs(c) * 2.220446049250313e-16 else c * c
    return sh * ch / den, s * c / den


# sin, cos and tan through their hyperbolic twins: sin z = -i sinh(iz), cos z = cosh(iz), tan z = -i tanh(iz)
@njit(inline="always")
def _sin_parts(x, y):
    re, im = _sinh_parts(-y, x)
    return im, -re


@njit(inline="always")
def _cos_parts(x, y):
    return _cosh_parts(-y, x)


@njit(inline="always")
def _tan_parts(x, y):
    re, im = _tanh_parts(-y, x)
    return im, -re


@njit(cache=True, error_model="numpy")
def _sinc_parts(x, y):
    # NumPy's sinc: sin(pi z) / (pi z), with 1e-20 for z = 0; pi z is a complex product there
    # ((pi + 0j) z: an infinite part makes the other nan)
    if x == 0.0 and y == 0.0:
        x = 1.0e-20
    px, py = math.pi * x - 0.0 * y, math.pi * y + 0.0 * x
    sr, si = _sin_parts(px, py)
    return _divide_parts(sr, si, px, py)


@njit(cache=True, error_model="numpy")
def _sinc_single(x, y):
    # the same as NumPy's complex64 steps: pi z and the quotient in float32, sin rounded to float32
    zero = numpy.float32(0.0)
    if x == zero and y == zero:
        x = numpy.float32(1.0e-20)
    pi = numpy.float32(math.pi)
    px, py = pi * x - zero * y, pi * y + zero * x
    sr, si = _sin_parts(numpy.float64(px), numpy.float64(py))
    return _divide_single(numpy.float32(sr), numpy.float32(si), px, py)


@njit(cache=True, error_model="numpy")
def _divide_parts(ar, ai, br, bi):
    # NumPy's complex division (Smith's, with a reciprocal): inf/nan for a zero divisor
    abs_br, abs_bi = math.fabs(br), math.fabs(bi)
    if abs_br >= abs_bi:
        if abs_br == 0.0 and abs_bi == 0.0:
            return ar / abs_br, ai / abs_br
        rat = bi / br
        scl = 1.0 / (br + bi * rat)
        return (ar + ai * rat) * scl, (ai - ar * rat) * scl
    rat = br / bi
    scl = 1.0 / (bi + br * rat)
    return (ar * rat + ai) * scl, (ai * rat - ar) * scl


@njit(cache=True, error_model="numpy")
def _divide_single(ar, ai, br, bi):
    # the same in float32, as NumPy's complex64 loop computes it (each step rounded to float32)
    one, zero = numpy.float32(1.0), numpy.float32(0.0)
    ar, ai, br, bi = numpy.float32(ar), numpy.float32(ai), numpy.float32(br), numpy.float32(bi)
    abs_br, abs_bi = numpy.float32(math.fabs(br)), numpy.float32(math.fabs(bi))
    if abs_br >= abs_bi:
        if abs_br == zero and abs_bi == zero:
            return ar / abs_br, ai / abs_br
        rat = bi / br
        scl = one / (br + bi * rat)
        return (ar + ai * rat) * scl, (ai - ar * rat) * scl
    rat = br / bi
    scl = one / (bi + br * rat)
    return (ar * rat + ai) * scl, (ai * rat - ar) * scl


@njit(inline="always")
def _cmul(ar, ai, br, bi):
    return ar * br - ai * bi, ar * bi + ai * br  # (in the parts' own precision: no literals)


@njit(cache=True, error_model="numpy")
def _int_power(ar, ai, n, one):
    # NumPy's a**n for an integer 0 < |n| < 100: products (unrolled for n = 1, 2, 3, "to handle inf
    # better"), and 1 / a**|n| for a negative n; `one` is 1 in the parts' precision
    if n == 1:
        return ar, ai
    if n == 2:
        return _cmul(ar, ai, ar, ai)
    if n == 3:
        sr, si = _cmul(ar, ai, ar, ai)
        return _cmul(ar, ai, sr, si)
    m = abs(n)
    rr, ri = one, one - one
    pr, pi = ar, ai
    mask = 1
    while True:
        if m & mask:
            rr, ri = _cmul(rr, ri, pr, pi)
        mask <<= 1
        if m < mask:
            break
        pr, pi = _cmul(pr, pi, pr, pi)
    if n < 0:
        return _divide_parts(1.0, 0.0, numpy.float64(rr), numpy.float64(ri))
    return numpy.float64(rr), numpy.float64(ri)


@njit(cache=True, error_model="numpy")
def _c_multiply(a, b, c, d):
    # (a + bi)(c + di) as C99 Annex G's multiplication (gcc's __muldc3): a nan + nan j product of an
    # infinite operand is recomputed with the infinities boxed (glibc's cpow multiplies this way)
    ac, bd, ad, bc = a * c, b * d, a * d, b * c
    x, y = ac - bd, ad + bc
    if math.isnan(x) and math.isnan(y):
        recalc = False
        if math.isinf(a) or math.isinf(b):
            a = math.copysign(1.0 if math.isinf(a) else 0.0, a)
            b = math.copysign(1.0 if math.isinf(b) else 0.0, b)
            c = math.copysign(0.0, c) if math.isnan(c) else c
            d = math.copysign(0.0, d) if math.isnan(d) else d
            recalc = True
        if math.isinf(c) or math.isinf(d):
            c = math.copysign(1.0 if math.isinf(c) else 0.0, c)
            d = math.copysign(1.0 if math.isinf(d) else 0.0, d)
            a = math.copysign(0.0, a) if math.isnan(a) else a
            b = math.copysign(0.0, b) if math.isnan(b) else b
            recalc = True
        if not recalc and (math.isinf(ac) or math.isinf(bd) or math.isinf(ad) or math.isinf(bc)):
            a = math.copysign(0.0, a) if math.isnan(a) else a
            b = math.copysign(0.0, b) if math.isnan(b) else b
            c = math.copysign(0.0, c) if math.isnan(c) else c
            d = math.copysign(0.0, d) if math.isnan(d) else d
            recalc = True
        if recalc:
            x, y = math.inf * (a * c - b * d), math.inf * (a * d + b * c)
    return x, y


@njit(cache=True, error_model="numpy")
def _power_special(ar, ai, br, bi):
    # NumPy's cases before the general a**b: 1 for b = 0, 0 or nan for a = 0, products for an
    # integer b; (kind, n): kind 0 = general, 1 = one, 2 = zero, 3 = nan, 4 = integer n
    if br == 0.0 and bi == 0.0:
        return 1, 0
    if ar == 0.0 and ai == 0.0:
        return (2, 0) if br > 0.0 else (3, 0)
    if bi == 0.0 and math.fabs(br) < 100.0 and br == math.floor(br):
        return 4, int(br)
    return 0, 0


@njit(cache=True, error_model="numpy")
def _power_parts(ar, ai, br, bi):
    # NumPy's complex power; in general glibc's cpow: exp(b log a)
    kind, n = _power_special(ar, ai, br, bi)
    if kind == 1:
        return 1.0, 0.0
    if kind == 2:
        return 0.0, 0.0
    if kind == 3:
        return math.nan, math.nan
    if kind == 4:
        return _int_power(ar, ai, n, 1.0)
    lr, li = _log_parts(ar, ai)
    er, ei = _c_multiply(br, bi, lr, li)
    return _exp_parts(er, ei)


@njit(cache=True, error_model="numpy")
def _power_single(ar, ai, br, bi):
    # the same on float32 parts, rounding where NumPy's complex64 loop (cpowf) does
    kind, n = _power_special(ar, ai, br, bi)
    if kind == 1:
        return 1.0, 0.0
    if kind == 2:
        return 0.0, 0.0
    if kind == 3:
        return math.nan, math.nan
    if kind == 4:
        return _int_power(ar, ai, n, numpy.float32(1.0))
    lr, li = _log_parts(numpy.float64(ar), numpy.float64(ai))
    fr, fi = numpy.float32(lr), numpy.float32(li)
    er, ei = br * fr - bi * fi, br * fi + bi * fr  # float32 products, as cpowf's
    if math.isnan(er) and math.isnan(ei):
        er, ei = _c_multiply(numpy.float64(br), numpy.float64(bi), numpy.float64(fr), numpy.float64(fi))
    return _exp_parts(numpy.float64(er), numpy.float64(ei))


@njit(inline="always")
def _single(parts):
    return numpy.complex64(complex(parts[0], parts[1]))


@njit(inline="always")
def _double(parts):
    return complex(parts[0], parts[1])


# the inverse functions: numba's cmath (within an ulp or two of glibc on finite values), with C99's
# NaN cases where it differs (asinh(nan + 0j) is nan + 0j, atanh(nan + 1j) nan + nan j, ...)
@njit(cache=True, error_model="numpy")
def _asinh_parts(x, y):
    if math.isnan(x) and y == 0.0:
        return x, y
    r = cmath.asinh(complex(x, y))
    return r.real, r.imag


@njit(cache=True, error_model="numpy")
def _asin_parts(x, y):
    if math.isnan(y) and x == 0.0:
        return x, y
    r = cmath.asin(complex(x, y))
    return r.real, r.imag


@njit(cache=True, error_model="numpy")
def _acos_parts(x, y):
    if math.isnan(y) and x == 0.0:
        return 0.5 * math.pi, y
    r = cmath.acos(complex(x, y))
    return r.real, r.imag


@njit(cache=True, error_model="numpy")
def _acosh_parts(x, y):
    if math.isnan(y) and x == 0.0:
        return y, 0.5 * math.pi
    r = cmath.acosh(complex(x, y))
    return r.real, r.imag


@njit(cache=True, error_model="numpy")
def _atanh_parts(x, y):
    if math.isnan(y) and x == 0.0:
        return x, y
    if math.isnan(x) and math.isfinite(y):
        return math.nan, math.nan
    r = cmath.atanh(complex(x, y))
    return r.real, r.imag


@njit(cache=True, error_model="numpy")
def _atan_parts(x, y):
    # -i atanh(iz), as C99 defines it
    re, im = _atanh_parts(-y, x)
    return im, -re

"""torch's CPU samplers as transformations of mt19937 words: how many 32-bit words each op takes from the
generator (counted at dispatch, on the calling thread) and how the kernel turns them into values, bit for
bit as ATen's CPU kernels (ATen/core/TransformationHelper.h, DistributionsHelper.h,
native/cpu/DistributionTemplates.h, TensorFactories.cpp's randperm).

Exactness notes:
- ATen's distribution kernels are compiled with floating-point contraction (GCC, AVX2/AVX512 builds), so
  `x * w + b` is one fused multiply-add: `fma32`/`fma64` below round once, as the hardware FMA.
- float32 normal_ of >= 16 contiguous elements runs ATen's AVX2 Box-Muller (avx_mathfun.h's Cephes
  polynomials for log and sincos, with the same contractions): emulated here in float32.
- libm calls (log, log1p, sin, cos, tan, exp of doubles) go through Python's `math`, which calls the C
  library as ATen does (NumPy's SIMD versions round differently).
- Once numba has compiled ops/random/kernels.py the slow loops run there, to the same bits.
- Without AVX2 and FMA (an older x86 CPU, or ATEN_CPU_CAPABILITY=default, which torch honours too) ATen runs
  its DEFAULT kernels: no contraction (`FUSED` is False: two roundings) and the scalar float Box-Muller.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import math
import os
import sys

import numpy as np

from ...tensor import dtype as dt
from ...vm.codegen import kernel_module

_F32, _F64 = np.dtype(np.float32), np.dtype(np.float64)
_COMPILED_FROM = 2  # elements: a compiled call costs about a microsecond, a NumPy pass about as much
_NUMPY_S_PER_ELEMENT = 50e-9  # about what these NumPy paths cost (several passes, exact FMA emulation): their heat


def _compiled(n: int):
    """ops/random/kernels.py once compiled (and worth it for n elements), else None: the NumPy path. Its heat: a
    program drawing millions of values brings the compiled loops in, even before anything else loads numba."""
    if n < _COMPILED_FROM:
        return None
    return kernel_module('.kernels', __package__, spent=n * _NUMPY_S_PER_ELEMENT)


_LOW53 = np.uint64((1 << 53) - 1)
_TWO_PI = 2.0 * math.pi
_ROWS = 2048  # blocks of 16 the NumPy paths transform at a time: slices that stay in cache run 3-4x quicker


def _avx2_kernels() -> bool:
    """Whether torch runs its AVX2 (or AVX512) CPU kernels here: an x86 CPU with AVX2 and FMA, unless
    ATEN_CPU_CAPABILITY=default asks for the portable ones."""
    if os.environ.get("ATEN_CPU_CAPABILITY", "").lower() == "default":
        return False
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as info:
            for line in info:
                if line.startswith("flags"):
                    flags = line.split()
                    return "avx2" in flags and "fma" in flags
    except OSError:
        pass
    import platform
    return platform.machine().lower() in ("x86_64", "amd64")  # (no cpuinfo: assume a current x86 CPU)


FUSED = _avx2_kernels()  # ATen's vectorized builds contract x * y + z into one FMA; its DEFAULT build does not


# -- exact fused multiply-add -------------------------------------------------------------------------------
def fma32(a, b, c) -> np.ndarray:
    """a * b + c rounded once to float32 (a, b, c float32): the exact product fits a double, so only the double
    sum rounds before the float32 rounding; that double rounding can break a float32 tie the wrong way, and
    only a sum lying exactly on a float32 midpoint (or in the subnormal range) can be one: those few are
    decided by the sum's exact rounding error."""
    a, b, c = np.asarray(a), np.asarray(b), np.asarray(c)
    p = a.astype(_F64) * b.astype(_F64)
    s = p + c.astype(_F64) if c.ndim else p + float(c)
    r = s.astype(_F32)
    bits = s.view(np.int64) & 0x1FFFFFFF  # the 29 mantissa bits float32 drops: a midpoint leaves 1 << 28
    doubt = (bits == 0x10000000) | (np.abs(s) < 2.0 ** -125)
    if not doubt.any():
        return r
    idx = np.nonzero(doubt)
    ps, ss = np.broadcast_to(p, s.shape)[idx], s[idx]
    cs = np.broadcast_to(c.astype(_F64), s.shape)[idx]
    bp = ss - ps
    err = (ps - (ss - bp)) + (cs - bp)
    rs = r[idx]
    d = ss - rs.astype(_F64)
    other = np.nextafter(rs, np.where(d > 0, np.float32(np.inf), np.float32(-np.inf)))
    tie = (d != 0) & (ss == (rs.astype(_F64) + other.astype(_F64)) * 0.5)
    r = r.copy() if r.ndim else r
    r[idx] = np.where(tie & (err != 0) & ((err > 0) == (d > 0)), other, rs)
    return r


def _split(a):
    c = 134217729.0 * a  # Veltkamp: 2**27 + 1
    high = c - (c - a)
    return high, a - high


def _two_sum(a, b):
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def fma64(a, b, c) -> np.ndarray:
    """a * b + c rounded once to float64 (Boldo and Melquiond's emulation: exact product, exact sum, and
    the low parts added with rounding to odd)."""
    a, b, c = (np.asarray(v, _F64) for v in (a, b, c))
    with np.errstate(over="ignore", invalid="ignore"):
        uh = a * b
        ah, al = _split(a)
        bh, bl = _split(b)
        ul = ((ah * bh - uh) + ah * bl + al * bh) + al * bl
        th, tl = _two_sum(c, uh)
        v, e = _two_sum(tl, ul)
        even = (v.view(np.int64) & 1) == 0
        odd = np.where((e != 0) & even, np.nextafter(v, np.where(e > 0, np.inf, -np.inf)), v)
        result = th + odd
        plain = a * b + c  # overflow, infinities and NaN: the plain expression says what the FMA would
    return np.where(np.isfinite(result), result, plain)


def mul_add32(a, b, c) -> np.ndarray:
    """a * b + c in float32 as ATen's kernels compute it here: fused, or rounded twice without FMA."""
    if FUSED:
        return fma32(a, b, c)
    return np.asarray(np.asarray(a, _F32) * np.asarray(b, _F32), _F32) + np.asarray(c, _F32)


def mul_add64(a, b, c) -> np.ndarray:
    """a * b + c in double as ATen's kernels compute it here: fused, or rounded twice without FMA."""
    if FUSED:
        return fma64(a, b, c)
    return np.asarray(a, _F64) * np.asarray(b, _F64) + np.asarray(c, _F64)


# -- words -> uniform values -----------------------------------------------------------------------------------
def words64(words: np.ndarray) -> np.ndarray:
    """ATen's random64(): two consecutive words, the first the high half."""
    if sys.byteorder == "little":  # a pair read as one little-endian uint64 has the first word low: swap halves
        v = np.ascontiguousarray(words, np.uint32).view(np.uint64)
        return (v << np.uint64(32)) | (v >> np.uint64(32))
    pairs = words.reshape(-1, 2).astype(np.uint64)
    return (pairs[:, 0] << np.uint64(32)) | pairs[:, 1]


_UNIT_BITS = {np.dtype(np.float16): 11, np.dtype(np.float32): 24}


def unit_bits(dtype: np.dtype) -> int:
    """std::numeric_limits<T>::digits of a float dtype (bfloat16: 8)."""
    if dtype == _F64:
        return 53
    return _UNIT_BITS.get(np.dtype(dtype), 8)


def unit(words: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """uniform_real_distribution<T>(0, 1) per draw: the low `digits` bits times 2**-digits (float32 for the
    reduced float types and float32, float64 for double, which takes two words per value)."""
    if dtype == _F64:
        return (words64(words) & _LOW53).astype(_F64) * 2.0 ** -53
    bits = unit_bits(dtype)
    return (words & np.uint32((1 << bits) - 1)).astype(_F32) * np.float32(2.0 ** -bits)


def word_count(dtype: np.dtype, n: int) -> int:
    """Words for n uniform draws of `dtype`."""
    return 2 * n if dtype == _F64 else n


def to_dtype(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """static_cast<scalar_t> of a float value: to nearest even; a double reaches Half and BFloat16 through
    float, as c10's conversions do."""
    if values.dtype == _F64 and dtype.kind == "f" and dtype.itemsize == 2 or dtype == dt.bfloat16.np:
        values = values.astype(_F32)
    return values.astype(dtype)


# -- uniform_ --------------------------------------------------------------------------------------------------
def uniform(words: np.ndarray, dtype: np.dtype, low: float, high: float) -> np.ndarray:
    """uniform_(from, to): x * (to - from) + from, fused. The reduced float types draw a float uniform (24 bits)
    with float bounds and round the result, which lands on `to` at times: torch returns `from` there."""
    if dtype == _F64:
        return mul_add64(unit(words, _F64), high - low, low)
    lo, hi = np.float32(low), np.float32(high)
    compiled = _compiled(words.size) if (lo, hi) != (0, 1) and FUSED else None
    if compiled is not None:
        fused = np.empty(words.size, _F32)
        compiled.uniform_f32(np.ascontiguousarray(words), 24, lo, hi - lo, fused)
    else:
        x = unit(words, _F32)
        fused = x if (lo, hi) == (0, 1) else np.concatenate(  # (x * 1 + 0 is x; cache-sized slices otherwise)
            [mul_add32(x[i:i + 16 * _ROWS], hi - lo, lo) for i in range(0, x.size, 16 * _ROWS)] or [x])
    values = to_dtype(fused, dtype)
    top, bottom = np.asarray(hi).astype(dtype), np.asarray(lo).astype(dtype)
    return np.where(values == top, bottom, values) if dtype != _F32 else values


# -- normal_ ---------------------------------------------------------------------------------------------------
def _reduced(dtype: np.dtype) -> bool:
    return dtype.itemsize == 2


def normal_fill_words(dtype: np.dtype, n: int) -> int:
    """Words of ATen's normal_fill (contiguous, n >= 16): n uniforms (Half and BFloat16: only the whole blocks
    of 16), then 16 more for a ragged tail."""
    draws = (n // 16 * 16 if _reduced(dtype) else n) + (16 if n % 16 else 0)
    return word_count(dtype, draws)


def _log256(x: np.ndarray) -> np.ndarray:
    """avx_mathfun.h's log256_ps (Cephes logf), as GCC contracts it."""
    f = np.float32
    bits = np.maximum(x, np.float32(1.1754944e-38)).view(np.int32)
    exponent = (bits.view(np.uint32) >> 23).astype(np.int32)
    m = ((bits & ~0x7F800000) | np.int32(0x3F000000)).view(np.float32)
    e = (exponent - 0x7F).astype(np.float32) + f(1)
    small = m < f(0.707106781186547524)
    m = (m - f(1)) + np.where(small, m, f(0))
    e = e - np.where(small, f(1), f(0))
    z = m * m
    y = np.full_like(m, f(7.0376836292e-2))
    for p in (-1.1514610310e-1, 1.1676998740e-1, -1.2420140846e-1, 1.4249322787e-1, -1.6668057665e-1,
              2.0000714765e-1, -2.4999993993e-1, 3.3333331174e-1):
        y = fma32(y, m, f(p))
    y = fma32(y * m, z, e * f(-2.12194440e-4))
    y = fma32(z, f(-0.5), y)
    return fma32(e, f(0.693359375), m + y)


def _sincos256(x: np.ndarray) -> tuple:
    """avx_mathfun.h's sincos256_ps (Cephes sinf/cosf), as GCC contracts it; x >= 0 here."""
    f = np.float32
    j = ((x * f(1.27323954473516)).astype(np.int32) + 1) & ~1
    y = j.astype(np.float32)
    sign_sin = ((j & 4) << 29).astype(np.int32)
    sign_cos = ((~(j - 2) & 4) << 29).astype(np.int32)
    first = (j & 2) == 0
    x = fma32(y, f(-0.78515625), x)
    x = fma32(y, f(-2.4187564849853515625e-4), x)
    x = fma32(y, f(-3.77489497744594108e-8), x)
    z = x * x
    c = fma32(f(2.443315711809948e-5), z, f(-1.388731625493765e-3))
    c = fma32(c, z, f(4.166664568298827e-2)) * z
    c = fma32(c, z, -(z * f(0.5))) + f(1)
    s = fma32(f(-1.9515295891e-4), z, f(8.3321608736e-3))
    s = fma32(fma32(s, z, f(-1.6666654611e-1)) * z, x, x)
    sin = np.where(first, s, c)
    cos = np.where(first, c, s)
    return (sin.view(np.int32) ^ sign_sin).view(np.float32), (cos.view(np.int32) ^ sign_cos).view(np.float32)


def _fill16_avx2(u: np.ndarray, mean: float, std: float) -> np.ndarray:
    """normal_fill_16_AVX2 on rows of 16 float32 uniforms."""
    radius = np.sqrt(np.float32(-2) * _log256(np.float32(1) - u[:, :8]))
    sin, cos = _sincos256(np.float32(_TWO_PI) * u[:, 8:])
    m, s = np.float32(mean), np.float32(std)
    return np.concatenate([fma32(radius * cos, s, m), fma32(radius * sin, s, m)], axis=1).astype(_F32)


def _safe_log(v: float) -> float:
    return math.log(v) if v > 0 else (-math.inf if v == 0 else math.nan)


# by name: while an fx trace runs, math's functions are wrappers (fx/_patch.py), and kernels run on the worker then
_LIBM_KIND = {"log": 0, "log1p": 1, "tan": 2, "exp": 3}  # (random_kernels.libm's numbering)
_PY = {fn.__name__: np.frompyfunc(_safe_log if fn is math.log else fn, 1, 1)
       for fn in (math.log, math.log1p, math.tan, math.exp, math.cos, math.sin)}


def libm(fn, values: np.ndarray) -> np.ndarray:
    """The C library's `fn` (math.log, log1p, tan, exp, cos or sin) per element of a float64 array."""
    values = np.ascontiguousarray(values, _F64)
    name = fn.__name__
    kind = _LIBM_KIND.get(name)
    compiled = _compiled(values.size) if kind is not None else None
    if compiled is None:
        return _PY[name](values).astype(_F64) if values.size else values
    out = np.empty_like(values)
    compiled.libm(kind, values.reshape(-1), out.reshape(-1))
    return out


def c_function(name: str, ctype, fallback):
    """The C library's function `name` of one `ctype` argument (Python's math lacks the float ones, and its
    lgamma is CPython's own), or `fallback` where the library can't be loaded."""
    try:
        fn = getattr(ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6"), name)
    except (OSError, AttributeError):
        return fallback
    fn.restype, fn.argtypes = ctype, [ctype]
    return fn


def _fill16_double(u: np.ndarray, mean: float, std: float) -> np.ndarray:
    """normal_fill_16<double> on rows of 16 uniforms (libm log, cos, sin)."""
    radius = np.sqrt(-2.0 * libm(math.log, 1.0 - u[:, :8]))
    theta = float(np.float32(2.0)) * math.pi * u[:, 8:]
    first, second = radius * libm(math.cos, theta), radius * libm(math.sin, theta)
    # (fused in every build: torch's DEFAULT kernels give these the same single rounding)
    return np.concatenate([fma64(first, std, mean), fma64(second, std, mean)], axis=1)


def _libm_float(name: str):
    """The C library's float function `name` (logf, cosf, sinf) per element, for ATen's DEFAULT float kernels."""
    vector = np.frompyfunc(c_function(name, ctypes.c_float, getattr(math, name[:-1])), 1, 1)
    return lambda x: vector(x).astype(_F32) if x.size else x.astype(_F32)


_FLOAT_LIBM: dict = {}


def _fill16_float(u: np.ndarray, mean: float, std: float) -> np.ndarray:
    """normal_fill_16<float> (ATen's DEFAULT kernel): float logf, sqrtf, cosf, sinf; the scaling by std and
    mean fused, as there."""
    if not _FLOAT_LIBM:
        _FLOAT_LIBM.update((name, _libm_float(name)) for name in ("logf", "cosf", "sinf"))
    radius = np.sqrt(np.float32(-2) * _FLOAT_LIBM["logf"](np.float32(1) - u[:, :8]))
    theta = (float(np.float32(2.0)) * math.pi * u[:, 8:].astype(_F64)).astype(_F32)
    m, s = np.float32(mean), np.float32(std)
    first = fma32(radius * _FLOAT_LIBM["cosf"](theta), s, m)
    second = fma32(radius * _FLOAT_LIBM["sinf"](theta), s, m)
    return np.concatenate([first, second], axis=1).astype(_F32)


def normal_fill(words: np.ndarray, dtype: np.dtype, n: int, mean: float, std: float) -> np.ndarray:
    """ATen's normal_fill: uniforms in place, Box-Muller per block of 16 (8 pairs), and for a ragged tail 16
    fresh uniforms transformed into the last 16 slots. Float and the reduced types (rounded at the end) run
    the AVX2 kernel on float uniforms; double the scalar one."""
    double = dtype == _F64
    u = unit(words, _F64 if double else _F32)
    out = np.empty(n, _F64 if double else _F32)
    full = n // 16 * 16

    compiled = _compiled(n) if FUSED else None

    def fill(block):
        if not FUSED and not double:  # ATen's DEFAULT build: the scalar float kernel (the reduced types too)
            return _fill16_float(block, mean, std)
        if compiled is not None:
            result = np.empty_like(block)
            if double:
                compiled.fill16_f64(block, result, float(mean), float(std))
            else:
                compiled.fill16_f32(block, result, np.float32(mean), np.float32(std))
            return result
        return _fill16_double(block, mean, std) if double else _fill16_avx2(block, mean, std)

    blocks = u[:full].reshape(-1, 16)
    step = len(blocks) if compiled is not None else _ROWS  # (NumPy: a cache-sized slice at a time, 3-4x quicker)
    for start in range(0, len(blocks), max(step, 1)):
        chunk = blocks[start:start + step]
        out[start * 16:(start + len(chunk)) * 16] = fill(chunk).reshape(-1)
    if n % 16:  # (the tail's 16 fresh uniforms overwrite the last slots, part of the last full block too)
        start = full if _reduced(dtype) else n
        out[n - 16:] = fill(u[start:start + 16].reshape(1, 16)).reshape(-1)
    return to_dtype(out, dtype)


def normal_pairs(count: int, cached: bool) -> int:
    """Fresh Box-Muller pairs normal_distribution<double> draws for `count` values, given a cached one."""
    return max(0, (count - (1 if cached else 0) + 1) // 2)


def normal_scalar(words: np.ndarray, count: int, cached: float | None, mean: float, std: float) -> tuple:
    """`count` values of normal_distribution<double>(mean, std) (4 words per fresh pair: u1, u2 doubles), the
    generator's cached second value used first and the last pair's second value left cached.
    Returns (values before the final transformation to mean/std, the new cached value)."""
    u = unit(words, _F64).reshape(-1, 2)
    compiled = _compiled(count)
    if compiled is not None:
        pairs = np.empty_like(u)
        compiled.box_muller_pairs(u, pairs)
        pairs = pairs.reshape(-1)
    else:
        radius = np.sqrt(-2.0 * libm(math.log1p, -u[:, 1]))
        theta = _TWO_PI * u[:, 0]
        pairs = np.stack([radius * libm(math.cos, theta), radius * libm(math.sin, theta)], axis=1).reshape(-1)
    values = pairs if cached is None else np.concatenate([[cached], pairs])
    left = float(values[count]) if len(values) > count else None
    return mul_add64(values[:count], std, mean), left


def normal_scalar_next_cache(words: np.ndarray, count: int, cached: float | None) -> float | None:
    """The cached normal after `count` draws (computed at dispatch: the generator keeps it)."""
    if count == 0:
        return cached
    fresh = count - (1 if cached is not None else 0)
    if fresh % 2 == 0:
        return None
    u1, u2 = unit(words[-4:], _F64)
    return math.sqrt(-2.0 * math.log1p(-u2)) * math.sin(_TWO_PI * u1)


# -- the other continuous distributions (all drawn as doubles) --------------------------------------------------
def exponential(words: np.ndarray, lambd: float) -> np.ndarray:
    """(-1 / lambda) * log1p(-u)."""
    return (-1.0 / lambd) * libm(math.log1p, -unit(words, _F64))


def cauchy(words: np.ndarray, median: float, sigma: float) -> np.ndarray:
    """median + sigma * tan(pi * (u - 0.5)), fused."""
    return mul_add64(sigma, libm(math.tan, math.pi * (unit(words, _F64) - 0.5)), median)


def log_normal(values: np.ndarray) -> np.ndarray:
    """exp of normal_distribution<double> values (already scaled)."""
    return libm(math.exp, values)


def geometric(words: np.ndarray, p: float) -> np.ndarray:
    """ceil(log(u) / log(1 - p)); u == 0 gives inf (its cast to an integer is undefined in ATen)."""
    with np.errstate(divide="ignore"):
        return np.ceil(libm(math.log, unit(words, _F64)) / math.log(1.0 - p))


def bernoulli_scalar(words: np.ndarray, p: float) -> np.ndarray:
    """bernoulli_distribution<double>(p): u53 < p, compared as integers: u53 * 2**-53 < p exactly when
    u53 < ceil(p * 2**53), u53 being the first word's low 21 bits then the second word."""
    threshold = math.ceil(p * 2.0 ** 53)
    compiled = _compiled(words.size)
    if compiled is not None:
        out = np.empty(words.size // 2, np.bool_)
        compiled.below53(np.ascontiguousarray(words), np.uint64(threshold), out)
        return out
    high, low = np.uint32(threshold >> 32), np.uint32(threshold & 0xFFFFFFFF)
    first = words[0::2] & np.uint32(0x1FFFFF)
    result = first < high
    tie = first == high
    tie &= words[1::2] < low
    result |= tie
    return result


def rrelu_noise(words: np.ndarray, below: np.ndarray, lower: float, upper: float) -> np.ndarray:
    """rrelu_with_noise's slopes: uniform_real_distribution<double>(lower, upper) where `below` (ATen's Activation.cpp
    is built without contraction: x * (upper - lower) + lower rounds twice), 1 elsewhere."""
    noise = np.ones(below.shape, _F64)
    noise[below] = unit(words, _F64) * (upper - lower) + lower
    return noise


def bernoulli_tensor(words: np.ndarray, p: np.ndarray) -> np.ndarray:
    """bernoulli_distribution<float or double>(p) per element: the p tensor's precision picks the draw."""
    if p.dtype == _F64:
        return unit(words, _F64) < p
    return unit(words, _F32) < p.astype(_F32)


# -- integers ---------------------------------------------------------------------------------------------------
_WIDE_SPAN = 1 << 28  # torch 2.x draws random64 for a range this wide or wider (its modulo bias stays small)


def random_words(dtype: np.dtype, low: int, high_inclusive: int, bare: bool = False) -> int:
    """Words per value of random_: random_(from, to) takes random64 for a range of 2**28 or more; random_()
    without bounds (uniform_int_distribution) takes random64 for double and int64 only."""
    if bare:
        return 2 if dtype in (_F64, np.dtype(np.int64)) else 1
    return 2 if high_inclusive - low + 1 >= _WIDE_SPAN else 1


def random_ints(words: np.ndarray, dtype: np.dtype, low: int, high_inclusive: int, bare: bool = False) -> np.ndarray:
    """(v % range) + base as int64, as ATen's uniform_int_from_to; the full int64 range takes v as is."""
    span = high_inclusive - low + 1
    per = random_words(dtype, low, high_inclusive, bare)
    v = words64(words) if per == 2 else words.astype(np.uint64)
    if span >= 1 << 64:
        return v.view(np.int64)
    return ((v % np.uint64(span)).astype(np.int64) + np.int64(low)) if low < 0 else \
        (v % np.uint64(span) + np.uint64(low)).view(np.int64)


_PERMUTE_SMALL = 0xFFFFFFFF // 20  # torch keeps its old 32-bit shuffle below this n


def randperm_words(n: int) -> int:
    """Words randperm(n) draws."""
    return max(n - 1, 0) if n < _PERMUTE_SMALL else 2 * n


def randperm(words: np.ndarray, n: int) -> np.ndarray:
    """torch's CPU randperm: a forward Fisher-Yates with random() % (n - i) below the threshold, the inside-out
    shuffle with random64() % (i + 1) above it."""
    compiled = _compiled(n)
    if n < _PERMUTE_SMALL and compiled is not None:
        result = np.empty(n, np.int64)
        compiled.shuffle(words, result)
        return result
    if n < _PERMUTE_SMALL:
        result = list(range(n))
        for i, w in enumerate(words.tolist()):
            z = i + w % (n - i)
            result[i], result[z] = result[z], result[i]
        return np.array(result, np.int64)
    result = np.empty(n, np.int64)
    for i, v in enumerate(words64(words).tolist()):
        z = v % (i + 1)
        result[i] = result[z]
        result[z] = i
    return result


def iteration_axes(out: np.ndarray) -> list:
    """`out`'s axes in TensorIterator's order for one output, largest stride outermost: its row-major order
    through them is the order ATen's serial kernels draw for its elements (memory order for a dense view)."""
    return sorted(range(out.ndim), key=lambda axis: -abs(out.strides[axis]))


def iteration_view(out: np.ndarray) -> np.ndarray:
    """`out` seen through `iteration_axes`."""
    return out.transpose(iteration_axes(out))

"""Compiled (numba) loops for random_transforms.py's slow paths: the AVX2 Box-Muller of float32 normal_
(ATen's avx_mathfun.h log and sincos, with GCC's contractions), the double Box-Muller, the C library
calls per element, and randperm's shuffle.

Loaded through vm.codegen.kernel_module (`import tidal` never imports numba); until it is compiled
random_transforms.py runs its NumPy versions, and both give the same bits: every fused multiply-add rounds once
(LLVM's fma here, an exact emulation there), and numba calls the same C library functions Python's `math` calls
(tests/test_rng_torch_streams.py compares the two paths).
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from ..elementwise.scalar_kernels import _fma

_F32 = np.float32


@njit(inline="always")
def _fma32(a, b, c):
    """a * b + c rounded once to float32: the hardware's fused multiply-add (LLVM's fma; libm's fmaf without one)."""
    return _fma(np.float32(a), np.float32(b), np.float32(c))


@njit(inline="always")
def _fma64(a, b, c):
    """a * b + c rounded once: as _fma32, in double."""
    return _fma(np.float64(a), np.float64(b), np.float64(c))


@njit(cache=True, nogil=True)
def _log256(x):
    m, e_int = math.frexp(np.float64(x))  # (x is a normal positive float: exact mantissa in [0.5, 1), exponent)
    m = np.float32(m)
    e = np.float32(e_int)
    if m < np.float32(0.707106781186547524):
        m = (m - np.float32(1)) + m
        e = e - np.float32(1)
    else:
        m = m - np.float32(1)
    z = m * m
    y = np.float32(7.0376836292e-2)
    y = _fma32(y, m, np.float32(-1.1514610310e-1))
    y = _fma32(y, m, np.float32(1.1676998740e-1))
    y = _fma32(y, m, np.float32(-1.2420140846e-1))
    y = _fma32(y, m, np.float32(1.4249322787e-1))
    y = _fma32(y, m, np.float32(-1.6668057665e-1))
    y = _fma32(y, m, np.float32(2.0000714765e-1))
    y = _fma32(y, m, np.float32(-2.4999993993e-1))
    y = _fma32(y, m, np.float32(3.3333331174e-1))
    y = _fma32(y * m, z, e * np.float32(-2.12194440e-4))
    y = _fma32(z, np.float32(-0.5), y)
    return _fma32(e, np.float32(0.693359375), m + y)


@njit(cache=True, nogil=True)
def _sincos256(x):
    j = (np.int32(x * np.float32(1.27323954473516)) + np.int32(1)) & np.int32(-2)
    y = np.float32(j)
    x = _fma32(y, np.float32(-0.78515625), x)
    x = _fma32(y, np.float32(-2.4187564849853515625e-4), x)
    x = _fma32(y, np.float32(-3.77489497744594108e-8), x)
    z = x * x
    c = _fma32(np.float32(2.443315711809948e-5), z, np.float32(-1.388731625493765e-3))
    c = _fma32(c, z, np.float32(4.166664568298827e-2)) * z
    c = _fma32(c, z, -(z * np.float32(0.5))) + np.float32(1)
    s = _fma32(np.float32(-1.9515295891e-4), z, np.float32(8.3321608736e-3))
    s = _fma32(_fma32(s, z, np.float32(-1.6666654611e-1)) * z, x, x)
    if (j & 2) == 0:
        sin, cos = s, c
    else:
        sin, cos = c, s
    if j & 4:
        sin = -sin
    if (~(j - 2)) & 4:
        cos = -cos
    return sin, cos


@njit(cache=True, nogil=True)
def uniform_f32(words, bits, low, width, out):
    """uniform_real_distribution<float>(from, to): (low `bits` bits) * 2**-bits * width + low, fused."""
    scale = np.float32(2.0 ** -bits)
    mask = np.uint32((1 << bits) - 1)
    for i in range(words.size):
        out[i] = _fma32(np.float32(words[i] & mask) * scale, width, low)


@njit(cache=True, nogil=True)
def below53(words, threshold, out):
    """ATen's random64() & (2**53 - 1) < threshold per pair of words (bernoulli_ with a number p)."""
    mask = np.uint64((1 << 53) - 1)
    for i in range(out.size):
        v = (np.uint64(words[2 * i]) << np.uint64(32)) | np.uint64(words[2 * i + 1])
        out[i] = (v & mask) < threshold


@njit(cache=True, nogil=True)
def fill16_f32(u, out, mean, std):
    """ATen's normal_fill_16_AVX2 on rows of 16 float32 uniforms (u, out: (blocks, 16))."""
    two_pi = np.float32(2.0 * math.pi)
    for row in range(u.shape[0]):
        for j in range(8):
            radius = np.float32(math.sqrt(np.float32(-2) * _log256(np.float32(1) - u[row, j])))
            sin, cos = _sincos256(two_pi * u[row, j + 8])
            out[row, j] = _fma32(radius * cos, std, mean)
            out[row, j + 8] = _fma32(radius * sin, std, mean)


@njit(cache=True, nogil=True)
def fill16_f64(u, out, mean, std):
    """ATen's normal_fill_16<double> on rows of 16 double uniforms."""
    two_pi = np.float64(np.float32(2.0)) * math.pi
    for row in range(u.shape[0]):
        for j in range(8):
            radius = math.sqrt(-2.0 * math.log(1.0 - u[row, j]))
            theta = two_pi * u[row, j + 8]
            out[row, j] = _fma64(radius * math.cos(theta), std, mean)
            out[row, j + 8] = _fma64(radius * math.sin(theta), std, mean)


@njit(cache=True, nogil=True)
def box_muller_pairs(u, out):
    """normal_distribution<double>'s pairs: u (pairs, 2) of (u1, u2) -> out (pairs, 2) of (r cos, r sin)."""
    two_pi = 2.0 * math.pi
    for i in range(u.shape[0]):
        radius = math.sqrt(-2.0 * math.log1p(-u[i, 1]))
        theta = two_pi * u[i, 0]
        out[i, 0] = radius * math.cos(theta)
        out[i, 1] = radius * math.sin(theta)


@njit(cache=True, nogil=True)
def libm(kind, x, out):
    """The C library per element: 0 log, 1 log1p, 2 tan, 3 exp."""
    for i in range(x.size):
        v = x[i]
        if kind == 0:
            out[i] = math.log(v) if v > 0 else (-np.inf if v == 0 else np.nan)
        elif kind == 1:
            out[i] = math.log1p(v) if v > -1 else (-np.inf if v == -1 else np.nan)
        elif kind == 2:
            out[i] = math.tan(v)
        else:
            out[i] = math.exp(v)


@njit(cache=True, nogil=True)
def shuffle(words, out):
    """randperm's forward Fisher-Yates: out = 0..n-1, swapped with i + words[i] % (n - i)."""
    n = out.size
    for i in range(n):
        out[i] = i
    for i in range(words.size):
        z = i + np.int64(words[i]) % np.int64(n - i)
        t = out[i]
        out[i] = out[z]
        out[z] = t


def warm() -> None:
    """Compile (or load from numba's cache) each loop for the arrays random_transforms.py passes."""
    uniform_f32(np.ones(2, np.uint32), 24, np.float32(-1), np.float32(2), np.empty(2, np.float32))
    u32 = np.full((1, 16), 0.5, np.float32)
    fill16_f32(u32, np.empty_like(u32), np.float32(0), np.float32(1))
    u64 = np.full((1, 16), 0.5)
    fill16_f64(u64, np.empty_like(u64), 0.0, 1.0)
    pairs = np.full((1, 2), 0.5)
    box_muller_pairs(pairs, np.empty_like(pairs))
    libm(0, np.ones(2), np.empty(2))
    below53(np.ones(4, np.uint32), np.uint64(5), np.empty(2, np.bool_))
    shuffle(np.ones(3, np.uint32), np.empty(4, np.int64))

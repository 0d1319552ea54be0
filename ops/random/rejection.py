"""torch's rejection samplers on a CPU generator: poisson (ATen's sample_poisson), the standard gamma
(sample_gamma, behind Gamma, Chi2, StudentT, Wishart) and binomial (sample_binomial: BTRS or inversion).
How many draws each value takes depends on the draws themselves, so they run at dispatch, on the calling
thread, one double uniform at a time from the generator's mt19937 engine (and its cached Box-Muller normal,
as ATen's normal_distribution<double>); the kernel only stores the values. ATen compiles these
(native/Distributions.cpp) without FMA contraction: plain double arithmetic, as Python's floats, and the C
library's log/exp/pow/lgamma.
"""
from __future__ import annotations

import ctypes
import math

import numpy as np

from . import transforms as rt

_BLOCK = 512  # words taken from the engine at a time; the unused ones are given back when done


_lgamma = rt.c_function("lgamma", ctypes.c_double, math.lgamma)
_log1pf = rt.c_function("log1pf", ctypes.c_float, lambda x: float(np.float32(math.log1p(x))))


class Draws:
    """Double uniforms and normals one at a time from an engine, as ATen's uniform_real_distribution<double>
    and normal_distribution<double> take them; `close()` leaves the engine just after the words used."""

    def __init__(self, engine):
        self.engine = engine
        self.saved = engine.snapshot()
        self.buffer: list = []
        self.at = 0
        self.used = 0

    def uniform(self) -> float:
        if self.at >= len(self.buffer):
            self.buffer = rt.unit(self.engine.words(_BLOCK), np.dtype(np.float64)).tolist()
            self.at = 0
        self.at += 1
        self.used += 1
        return self.buffer[self.at - 1]

    def normal(self) -> float:
        cached = self.engine.next_double_normal
        if cached is not None:
            self.engine.next_double_normal = None
            return cached
        u1, u2 = self.uniform(), self.uniform()
        radius = math.sqrt(-2.0 * math.log1p(-u2))
        theta = 2.0 * math.pi * u1
        self.engine.next_double_normal = radius * math.sin(theta)
        return radius * math.cos(theta)

    def close(self) -> None:
        self.engine.restore(self.saved)
        self.engine.words(2 * self.used)


def poisson_one(lam: float, draws: Draws) -> int:
    """ATen's sample_poisson: Hoermann's transformed rejection for rates of 10 or more, else multiplication."""
    if lam >= 10:
        slam, loglam = math.sqrt(lam), math.log(lam)
        b = 0.931 + 2.53 * slam
        a = -0.059 + 0.02483 * b
        invalpha = 1.1239 + 1.1328 / (b - 3.4)
        vr = 0.9277 - 3.6224 / (b - 2)
        while True:
            u = draws.uniform() - 0.5
            v = draws.uniform()
            us = 0.5 - abs(u)
            k = math.floor((2 * a / us + b) * u + lam + 0.43)
            if us >= 0.07 and v <= vr:
                return k
            if k < 0 or (us < 0.013 and v > us):
                continue
            if (math.log(v) + math.log(invalpha) - math.log(a / (us * us) + b)) <= \
                    (-lam + k * loglam - _lgamma(float(k) + 1)):
                return k
    if lam == 0:
        return 0
    enlam, count, prod = math.exp(-lam), 0, 1.0
    while True:
        prod *= draws.uniform()
        if prod > enlam:
            count += 1
        else:
            return count


def gamma_one(alpha: float, single: bool, draws: Draws) -> float:
    """ATen's sample_gamma (Marsaglia and Tsang, alpha < 1 boosted), accumulating in double; `single`: the
    tensor is float, whose alpha arithmetic (alpha + 1, alpha - 1/3, 1/alpha) ATen does in float."""
    f32 = np.float32 if single else float
    third = float(np.float32(1.0) / np.float32(3.0))
    scale = 1.0
    if alpha < 1.0:
        if alpha == 0:
            return 0.0
        scale *= math.pow(1 - draws.uniform(), float(f32(1.0) / f32(alpha)))
        alpha = float(f32(alpha) + f32(1.0))
    d = float(f32(alpha) - f32(third)) if single else alpha - third
    c = 1.0 / math.sqrt(9.0 * d)
    small = float(np.float32(0.0331))
    while True:
        while True:
            x = draws.normal()
            y = 1.0 + c * x
            if not y <= 0:
                break
        v = y * y * y
        u = 1 - draws.uniform()
        xx = x * x
        if u < 1.0 - small * xx * xx:
            return scale * d * v
        if math.log(u) < 0.5 * xx + d * (1.0 - v + math.log(v)):
            return scale * d * v


_TAIL = (0.0810614667953272, 0.0413406959554092, 0.0276779256849983, 0.02079067210376509, 0.0166446911898211,
         0.0138761288230707, 0.0118967099458917, 0.0104112652619720, 0.00925546218271273, 0.00833056343336287)


def _stirling_tail(k: float) -> float:
    if k <= 9:
        return _TAIL[int(k)]
    kp1sq = (k + 1) * (k + 1)
    return (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / (k + 1)


def _btrs(count, prob, t, draws: Draws):
    """ATen's btrs (transformed rejection); `t` rounds to the tensor's dtype where ATen holds a scalar_t."""
    stddev = float(t(math.sqrt(t(t(count * prob) * t(1 - prob)))))
    b = 1.15 + 2.53 * stddev
    a = -0.0873 + 0.0248 * b + 0.01 * prob
    c = float(t(count * prob)) + 0.5
    v_r = 0.92 - 4.2 / b
    r = float(t(prob / t(1 - prob)))
    alpha = (2.83 + 5.1 / b) * stddev
    m = float(math.floor(t(t(count + 1) * prob)))
    while True:
        u = draws.uniform() - 0.5
        v = draws.uniform()
        us = 0.5 - abs(u)
        k = float(t(math.floor((2 * a / us + b) * u + c)))
        if k < 0 or k > count:
            continue
        if us >= 0.07 and v <= v_r:
            return k
        v = math.log(v * alpha / (a / (us * us) + b))
        bound = ((m + 0.5) * math.log((m + 1) / (r * (count - m + 1)))
                 + float(t(count + 1)) * math.log((count - m + 1) / float(t(t(count - k) + 1)))
                 + (k + 0.5) * math.log(r * float(t(t(count - k) + 1)) / float(t(k + 1)))
                 + _stirling_tail(m) + _stirling_tail(count - m) - _stirling_tail(k) - _stirling_tail(count - k))
        if v <= bound:
            return k


def _inversion(count, prob, single: bool, draws: Draws):
    """ATen's binomial_inversion: geometric gaps until they pass `count`."""
    logprob = float(_log1pf(-prob)) if single else math.log1p(-prob)
    total, found = 0.0, 0
    while True:
        total += math.ceil(math.log(draws.uniform()) / logprob)
        if total > count:
            return found
        found += 1


def binomial_one(count: float, prob: float, single: bool, draws: Draws) -> float:
    """ATen's sample_binomial (count and prob held in the tensor's dtype)."""
    t = np.float32 if single else float
    if count <= 0.0 or prob <= 0.0:
        return 0.0
    if prob >= 1.0:
        return count
    if prob <= 0.5:
        if t(count * prob) >= 10.0:
            return _btrs(count, prob, t, draws)
        return float(_inversion(count, prob, single, draws))
    if prob > 0.5:
        qprob = float(t(1.0 - prob))
        if t(count * qprob) >= 10.0:
            return float(t(count - _btrs(count, qprob, t, draws)))
        return float(t(count - _inversion(count, qprob, single, draws)))
    return math.nan


def binomial(count: np.ndarray, prob: np.ndarray, engine) -> np.ndarray:
    """Binomial samples for `count` and `prob` (already of one shape), in row-major order."""
    single = count.dtype != np.float64
    draws = Draws(engine)
    try:
        values = [binomial_one(n, p, single, draws)
                  for n, p in zip(count.reshape(-1).tolist(), prob.reshape(-1).tolist())]
    finally:
        draws.close()
    return np.array(values, np.float64).reshape(count.shape)


def poisson(rates: np.ndarray, engine) -> np.ndarray:
    """Poisson samples for `rates` (row-major: ATen's serial order over a fresh contiguous output)."""
    draws = Draws(engine)
    try:
        return np.array([poisson_one(lam, draws) for lam in rates.astype(np.float64).reshape(-1).tolist()],
                        np.float64).reshape(rates.shape)
    finally:
        draws.close()


def standard_gamma(alpha: np.ndarray, engine) -> np.ndarray:
    """Standard gamma samples for `alpha`, at least the dtype's smallest normal number (as ATen clamps them)."""
    single = alpha.dtype != np.float64
    draws = Draws(engine)
    try:
        values = [gamma_one(a, single, draws) for a in alpha.astype(np.float64).reshape(-1).tolist()]
    finally:
        draws.close()
    out = np.array(values, np.float64).astype(alpha.dtype if alpha.dtype.kind == "f" else np.float64)
    return np.maximum(out, np.finfo(out.dtype).tiny).reshape(alpha.shape)

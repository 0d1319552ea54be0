"""NumPy kernels (float64 in, float64 out) for the torch.special functions that have no tidal composite.

Bessel J/Y: power series up to |x| = 12, Hankel's asymptotic expansion beyond (both ~1e-11 absolute).
Bessel K and Airy Ai (x > 0): K_nu(z) = integral_0^inf exp(-z cosh t) cosh(nu t) dt by the trapezoid rule,
which converges geometrically for this analytic, doubly-exponentially decaying integrand. Orthogonal
polynomials: their three-term recurrences. Incomplete gamma: series below a + 1, continued fraction above.
"""
from __future__ import annotations

import math

import numpy as np

from .special import NUMPY_FUNCS, LazyUfunc

_EULER = 0.5772156649015329
_SERIES_LIMIT = 12.0
_zeta = LazyUfunc("zeta", 2)


def _series_j(x: np.ndarray, order: int) -> np.ndarray:
    """J_order(x) = sum_k (-1)^k (x/2)^(2k+order) / (k! (k+order)!)."""
    q = -0.25 * x * x
    term = (0.5 * x) ** order / math.factorial(order)
    total = term.copy()
    for k in range(1, 60):
        term = term * q / (k * (k + order))
        total += term
    return total


def _series_y(x: np.ndarray, order: int) -> np.ndarray:
    """Y0 and Y1 from their series in log(x/2), J and harmonic numbers."""
    q = -0.25 * x * x
    log_term = (2 / math.pi) * (np.log(0.5 * x) + _EULER) * _series_j(x, order)
    if order == 0:
        total, term, harmonic = np.zeros_like(x), np.ones_like(x), 0.0
        for k in range(1, 60):
            term = term * q / (k * k)
            harmonic += 1.0 / k
            total -= harmonic * term
        return log_term + (2 / math.pi) * total
    # Y1 = -2/(pi x) + (2/pi) log(x/2) J1 - (1/pi) sum (-1)^k (psi(k+1) + psi(k+2)) (x/2)^(2k+1) / (k!(k+1)!)
    term = 0.5 * x
    h_k, total = 0.0, np.zeros_like(x)
    for k in range(0, 60):
        if k:
            term = term * q / (k * (k + 1))
            h_k += 1.0 / k
        total += (2 * h_k + 1.0 / (k + 1)) * term  # psi(k+1) + psi(k+2) + 2 gamma
    return -2 / (math.pi * x) + log_term - total / math.pi


def _hankel(x: np.ndarray, order: int) -> tuple:
    """(J, Y) of order 0 or 1 for large x from the asymptotic P, Q series."""
    mu = 4.0 * order * order
    p, q = np.ones_like(x), np.zeros_like(x)
    term = np.ones_like(x)
    for k in range(1, 30):
        term = term * (mu - (2 * k - 1) ** 2) / (k * 8.0 * x)
        if k % 2:
            q += term * (-1) ** ((k - 1) // 2)
        else:
            p += term * (-1) ** (k // 2)
    chi = x - (0.5 * order + 0.25) * math.pi
    scale = np.sqrt(2 / (math.pi * x))
    return scale * (p * np.cos(chi) - q * np.sin(chi)), scale * (p * np.sin(chi) + q * np.cos(chi))


def _bessel(x: np.ndarray, order: int, kind: str) -> np.ndarray:
    a = np.abs(x)
    small = a <= _SERIES_LIMIT
    out = np.empty_like(a)
    if kind == "j":
        out[small] = _series_j(a[small], order)
    else:
        with np.errstate(all="ignore"):
            out[small] = _series_y(a[small], order)
    if (~small).any():
        big = a[~small]
        finite = np.isfinite(big)
        j, y = _hankel(np.where(finite, big, 100.0), order)
        out[~small] = np.where(finite, j if kind == "j" else y, np.nan)  # PyTorch: NaN at infinity
    if kind == "j":
        return np.where(x < 0, -out, out) if order == 1 else out
    out = np.where(x == 0, -np.inf, out)
    out = np.where(x < 0, np.nan, out)
    return np.where(np.isnan(x), np.nan, out)


def bessel_j0(x):
    """J0."""
    return _bessel(x, 0, "j")


def bessel_j1(x):
    """J1."""
    return _bessel(x, 1, "j")


def bessel_y0(x):
    """Y0."""
    return _bessel(x, 0, "y")


def bessel_y1(x):
    """Y1."""
    return _bessel(x, 1, "y")


def modified_bessel_i0(x):
    """I0."""
    return NUMPY_FUNCS["bessel_i0"](x)


def modified_bessel_i1(x):
    """I1."""
    return NUMPY_FUNCS["bessel_i1"](x)


def _scaled_k_large(z: np.ndarray, nu: float) -> np.ndarray:
    """exp(z) K_nu(z) for z > 50: the asymptotic series sqrt(pi / 2z) sum_k prod_j (4nu^2 - (2j-1)^2) / (k! (8z)^k)."""
    term, total = np.ones_like(z), np.ones_like(z)
    for k in range(1, 30):
        term = term * (4 * nu * nu - (2 * k - 1) ** 2) / (k * 8.0 * z)
        total += term
    return np.sqrt(math.pi / (2 * z)) * total


def _scaled_k(z: np.ndarray, nu: float) -> np.ndarray:
    """exp(z) K_nu(z) for z > 0 (other z give NaN here; callers mask them)."""
    flat = z.ravel()
    large = flat > 50
    good = (flat > 0) & ~large
    out = np.full(flat.shape, np.nan)
    if good.any():
        zz = flat[good][:, None]
        top = math.acosh(1 + 800 / float(zz.min()))
        h = 0.02
        t = np.arange(0.0, top + h, h)[None, :]
        weights = np.full(t.shape, h)
        weights[0, 0] = h / 2
        f = np.exp(-zz * (np.cosh(t) - 1)) * np.cosh(nu * t)
        out[good] = (f * weights).sum(axis=1)
    out[large] = _scaled_k_large(flat[large], nu)
    return out.reshape(z.shape)


def _k(x: np.ndarray, order: int, scaled: bool) -> np.ndarray:
    with np.errstate(all="ignore"):
        value = _scaled_k(np.where(np.isfinite(x), x, 1.0), order)
        if not scaled:
            value = value * np.exp(-x)
    value = np.where(x == np.inf, 0.0, value)
    value = np.where(x == 0, np.inf, value)
    return np.where((x < 0) | np.isnan(x), np.nan, value)


def modified_bessel_k0(x):
    """K0."""
    return _k(x, 0, False)


def modified_bessel_k1(x):
    """K1."""
    return _k(x, 1, False)


def scaled_modified_bessel_k0(x):
    """exp(x) K0(x)."""
    return _k(x, 0, True)


def scaled_modified_bessel_k1(x):
    """exp(x) K1(x)."""
    return _k(x, 1, True)


def spherical_bessel_j0(x):
    """sin(x) / x, by its series near 0."""
    with np.errstate(all="ignore"):
        x2 = x * x
        near = 1 - x2 / 6 * (1 - x2 / 20 * (1 - x2 / 42))
        return np.where(np.abs(x) < 0.5, near, np.where(np.isinf(x), 0.0, np.sin(x) / x))


_AI0, _AI1 = 0.3550280538878172, 0.2588194037928068  # Ai(0), -Ai'(0)


def airy_ai(x):
    """Ai(x): the K_1/3 integral for x > 0, the Maclaurin series for -8 <= x <= 0, the asymptotic series below."""
    out = np.full(x.shape, np.nan)
    pos = x > 0
    with np.errstate(all="ignore"):
        zeta = (2 / 3) * np.abs(x) ** 1.5
        out[pos] = (np.sqrt(x[pos] / 3) / math.pi) * _scaled_k(zeta[pos], 1 / 3) * np.exp(-zeta[pos])
        mid = (x <= 0) & (x >= -8)
        z = x[mid]
        f, g = np.ones_like(z), z.copy()
        tf, tg = np.ones_like(z), z.copy()
        z3 = z ** 3
        for k in range(1, 60):
            tf = tf * z3 / ((3 * k - 1) * (3 * k))
            tg = tg * z3 / ((3 * k) * (3 * k + 1))
            f += tf
            g += tg
        out[mid] = _AI0 * f - _AI1 * g
        low = x < -8
        r, ze = -x[low], zeta[low]
        u, p, q = 1.0, np.ones_like(ze), np.zeros_like(ze)
        for k in range(1, 25):
            u = u * (6 * k - 5) * (6 * k - 3) * (6 * k - 1) / ((2 * k - 1) * 216 * k)
            term = u / ze ** k
            if k % 2:
                q += term * (-1) ** ((k - 1) // 2)
            else:
                p += term * (-1) ** (k // 2)
        phase = ze + math.pi / 4
        out[low] = (np.sin(phase) * p - np.cos(phase) * q) / (math.sqrt(math.pi) * r ** 0.25)
    out[np.isinf(x)] = np.nan  # as PyTorch
    return out


# -- orthogonal polynomials: (p0, p1, step(k, x, p_k, p_k-1) -> p_k+1) --------------------------
def _chebyshev(first):
    return (lambda x: np.ones_like(x), first, lambda k, x, a, b: 2 * x * a - b)


_RECURRENCES = {
    "chebyshev_polynomial_t": _chebyshev(lambda x: x),
    "chebyshev_polynomial_u": _chebyshev(lambda x: 2 * x),
    "chebyshev_polynomial_v": _chebyshev(lambda x: 2 * x - 1),
    "chebyshev_polynomial_w": _chebyshev(lambda x: 2 * x + 1),
    "hermite_polynomial_h": (lambda x: np.ones_like(x), lambda x: 2 * x, lambda k, x, a, b: 2 * x * a - 2 * k * b),
    "hermite_polynomial_he": (lambda x: np.ones_like(x), lambda x: x, lambda k, x, a, b: x * a - k * b),
    "laguerre_polynomial_l": (lambda x: np.ones_like(x), lambda x: 1 - x,
                              lambda k, x, a, b: ((2 * k + 1 - x) * a - k * b) / (k + 1)),
    "legendre_polynomial_p": (lambda x: np.ones_like(x), lambda x: x,
                              lambda k, x, a, b: ((2 * k + 1) * x * a - k * b) / (k + 1)),
}
POLYNOMIALS = [*_RECURRENCES, *(f"shifted_chebyshev_polynomial_{c}" for c in "tuvw")]


def _polynomial(name: str):
    shifted = name.startswith("shifted_")
    p0, p1, step = _RECURRENCES[name[len("shifted_"):] if shifted else name]

    def fn(x, n):
        x, n = np.broadcast_arrays(x, n)
        x = 2 * x - 1 if shifted else x
        degree = np.where(np.isnan(n), -1, np.trunc(n)).astype(np.int64)
        prev, cur = p0(x), p1(x)
        out = np.where(degree == 0, prev, cur)
        for k in range(1, int(degree.max(initial=0))):
            prev, cur = cur, step(k, x, cur, prev)
            out = np.where(degree == k + 1, cur, out)
        return np.where(degree < 0, 0.0, out)
    fn.__name__ = name
    return fn


for _name in POLYNOMIALS:
    globals()[_name] = _polynomial(_name)


# -- incomplete gamma and zeta ----------------------------------------------------------------
# the one incomplete gamma of tidal: torch.special.gammainc/gammaincc, torch.igamma/igammac and the Gamma cdf
_EPS = np.finfo(np.float64).eps
_TINY = 1e-300
_MAX_TERMS = 5000  # enough for a up to ~1e5; both loops stop once every element has converged


def _prefactor(a, x):
    """x^a e^-x / Gamma(a), through logs."""
    return np.exp(a * np.log(x) - x - _lgamma(a))


def _lower_series(a, x):
    """P(a, x) = x^a e^-x / Gamma(a) * sum_k x^k / (a (a + 1) ... (a + k)); converges fast for x < a + 1."""
    term = 1.0 / a
    total = term.copy()
    for k in range(1, _MAX_TERMS):
        term = term * x / (a + k)
        total += term
        if (np.abs(term) <= np.abs(total) * _EPS).all():
            break
    return total * _prefactor(a, x)


def _upper_fraction(a, x):
    """Q(a, x) = x^a e^-x / Gamma(a) / (x + 1 - a - 1 (1 - a) / (x + 3 - a - ...)), by Lentz's method
    (x >= a + 1)."""
    b = x + 1 - a
    c = np.full_like(x, 1 / _TINY)
    d = 1 / b
    h = d.copy()
    for i in range(1, _MAX_TERMS):
        an = -i * (i - a)
        b = b + 2
        d = an * d + b
        d = np.where(np.abs(d) < _TINY, _TINY, d)
        c = b + an / c
        c = np.where(np.abs(c) < _TINY, _TINY, c)
        d = 1 / d
        delta = d * c
        h = h * delta
        if (np.abs(delta - 1) <= _EPS).all():
            break
    return _prefactor(a, x) * h


def _lgamma(a):
    return NUMPY_FUNCS["lgamma"](a)


def _gamma_pq(a, x, upper: bool):
    """P(a, x) or, with `upper`, Q(a, x) = 1 - P(a, x) in float64, with PyTorch's values at the edges
    (the series gives P below x = a + 1, the continued fraction Q above)."""
    a, x = np.broadcast_arrays(a, x)
    a, x = a.astype(np.float64), x.astype(np.float64)
    out = np.full(a.shape, np.nan)
    ok = (a >= 0) & (x >= 0) & ~np.isnan(a) & ~np.isnan(x)
    with np.errstate(all="ignore"):
        regular = ok & (a > 0) & (x > 0) & np.isfinite(x) & np.isfinite(a)
        series = regular & (x < a + 1)
        frac = regular & ~series
        if series.any():
            p = _lower_series(a[series], x[series])
            out[series] = 1 - p if upper else p
        if frac.any():
            q = _upper_fraction(a[frac], x[frac])
            out[frac] = q if upper else 1 - q
    # the edges as PyTorch defines them
    zero_x = ok & (x == 0) & (a > 0)
    out[zero_x] = 1.0 if upper else 0.0
    zero_a = ok & (a == 0) & (x > 0)
    out[zero_a] = 0.0 if upper else 1.0
    inf_x = ok & np.isinf(x) & np.isfinite(a)
    out[inf_x] = 0.0 if upper else 1.0
    inf_a = ok & np.isinf(a) & np.isfinite(x)
    out[inf_a] = 1.0 if upper else 0.0
    return out


def igamma(a, x):
    """P(a, x)."""
    return _gamma_pq(a, x, upper=False)


def igammac(a, x):
    """Q(a, x)."""
    return _gamma_pq(a, x, upper=True)


def zeta(s, q):
    """The Hurwitz zeta function."""
    s, q = np.broadcast_arrays(s, q)
    out = _zeta(np.ascontiguousarray(s, dtype=np.float64), np.ascontiguousarray(q, dtype=np.float64))
    # PyTorch's edges: s = inf gives 1 at q = 1, inf below 1, NaN above; q = inf gives NaN
    out = np.where(s == np.inf, np.where(q == 1, 1.0, np.where(q < 1, np.inf, np.nan)), out)
    return np.where(q == np.inf, np.nan, out)

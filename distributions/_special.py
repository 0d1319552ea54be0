"""The regularized lower incomplete gamma function (torch.special.gammainc) the Gamma cdf needs: a series below
x = a + 1 and a continued fraction for the upper tail above it, in float64 NumPy."""
from __future__ import annotations

import math

import numpy as np

import tidal

from ..autograd import Function
from ..ops.dispatch import launch, register_kernel
from ..tensor import Tensor

__all__ = ["gammainc"]

_lgamma = np.vectorize(math.lgamma, otypes=[np.float64])
_EPS = np.finfo(np.float64).eps
_TINY = 1e-300
_MAX_TERMS = 5000


def _lower_series(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """P(a, x) = x^a e^-x / Gamma(a + 1) * sum_n x^n / ((a + 1) ... (a + n)); converges fast for x < a + 1."""
    term = np.ones_like(x)
    total = np.ones_like(x)
    for n in range(1, _MAX_TERMS):
        term = term * x / (a + n)
        total = total + term
        if (np.abs(term) <= np.abs(total) * _EPS).all():
            break
    return np.exp(a * np.log(x) - x - _lgamma(a + 1)) * total


def _upper_fraction(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Q(a, x) = x^a e^-x / Gamma(a) * 1 / (x + 1 - a - 1 (1 - a) / (x + 3 - a - ...)), by Lentz's method."""
    b = x + 1 - a
    c = np.full_like(x, 1 / _TINY)
    d = 1 / b
    h = d
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
    return np.exp(a * np.log(x) - x - _lgamma(a)) * h


def gammainc_array(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """P(a, x) elementwise (NaN where a <= 0 or x < 0, as torch)."""
    a, x = np.broadcast_arrays(np.asarray(a, np.float64), np.asarray(x, np.float64))
    out = np.full(a.shape, np.nan)
    ok = (a > 0) & (x >= 0) & np.isfinite(a)
    out[ok & (x == 0)] = 0.0
    out[ok & np.isinf(x)] = 1.0
    lower = ok & (x > 0) & np.isfinite(x) & (x < a + 1)
    upper = ok & (x > 0) & np.isfinite(x) & (x >= a + 1)
    if lower.any():
        out[lower] = _lower_series(a[lower], x[lower])
    if upper.any():
        out[upper] = 1 - _upper_fraction(a[upper], x[upper])
    return out


@register_kernel("gammainc", "cpu")
def _gammainc_kernel(ins, outs, attrs) -> None:
    np.copyto(outs[0], gammainc_array(*ins), casting="unsafe")


class _GammaInc(Function):
    """P(a, x), differentiable in x (d/dx is the Gamma(a, 1) density); like torch, not in a."""

    @staticmethod
    def forward(ctx, a: Tensor, x: Tensor) -> Tensor:
        shape = tuple(tidal.broadcast_shapes(tuple(a.shape), tuple(x.shape)))
        (out,) = launch("gammainc", (a.expand(shape).contiguous(), x.expand(shape).contiguous()),
                        [(shape, tidal.promote_types(a.dtype, x.dtype))])
        ctx.save_for_backward(a, x)
        return out

    @staticmethod
    def backward(ctx, grad: Tensor):
        a, x = ctx.saved_tensors
        if ctx.needs_input_grad[0]:
            raise NotImplementedError("the derivative for 'igamma: input' is not implemented.")
        density = tidal.exp((a - 1) * tidal.log(x) - x - tidal.lgamma(a))
        return None, _unbroadcast(grad * density, tuple(x.shape))


def _unbroadcast(grad: Tensor, shape: tuple) -> Tensor:
    """Sum a gradient back down to `shape`."""
    extra = grad.dim() - len(shape)
    if extra:
        grad = grad.sum(tuple(range(extra)))
    dims = tuple(i for i, n in enumerate(shape) if n == 1 and grad.shape[i] != 1)
    return grad.sum(dims, keepdim=True) if dims else grad


def gammainc(a: Tensor, x: Tensor) -> Tensor:
    """The regularized lower incomplete gamma function P(a, x)."""
    return _GammaInc.apply(a, x)

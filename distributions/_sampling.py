"""The samplers the distributions need beyond ops/random/sampling.py: standard gamma (with its implicit
reparameterization gradient) and binomial. They join random.py's sampler table, so they draw from
tidal's generators exactly as the other random ops do."""
from __future__ import annotations

import math

import numpy as np

from ..ops import broadcast_tensors
from ..ops.random import samplers
from ..ops.dispatch.primitive import Primitive
from ..ops.elementwise.plans import torch_name
from ..tensor import Tensor

__all__ = ["standard_gamma", "binomial"]

_lgamma = np.vectorize(math.lgamma, otypes=[np.float64])


def _gamma_sampler(rng, shape, dtype, ins):
    alpha = np.asarray(ins[0], np.float64)
    return rng.standard_gamma(np.broadcast_to(alpha, shape))


def _binomial_sampler(rng, shape, dtype, ins):
    count, prob = (np.broadcast_to(np.asarray(t, np.float64), shape) for t in ins)
    if not ((prob >= 0) & (prob <= 1)).all():
        raise RuntimeError("binomial: probabilities must lie in [0, 1]")
    return rng.binomial(count.astype(np.int64), prob)


for _name, _fn in (("_standard_gamma", _gamma_sampler), ("binomial", _binomial_sampler)):
    samplers.SAMPLERS[_name] = _fn
    samplers.RECORDS[_name] = samplers.declare(_name)


def _digamma(a: np.ndarray) -> np.ndarray:
    """digamma for positive arrays: recurrence up to 6, then the asymptotic series."""
    a = a.copy()
    result = np.zeros_like(a)
    for _ in range(7):
        small = a < 6
        result -= np.where(small, 1 / a, 0)
        a += small
    inv2 = 1 / (a * a)
    series = inv2 * (1 / 12 - inv2 * (1 / 120 - inv2 * (1 / 252 - inv2 * (1 / 240 - inv2 * 5 / 660))))
    return result + np.log(a) - 0.5 / a - series


def gamma_sample_grad(alpha: np.ndarray, x: np.ndarray) -> np.ndarray:
    """d x / d alpha for x ~ Gamma(alpha, 1) held at a fixed CDF value: -(dP/dalpha) / pdf, where
    P(alpha, x) = sum_n x^(alpha+n) e^-x / Gamma(alpha+n+1) is summed as a series (exact, not torch's fit)."""
    alpha, x = np.broadcast_arrays(np.asarray(alpha, np.float64), np.asarray(x, np.float64))
    x = np.maximum(x, np.finfo(np.float64).tiny)
    far = x > 20000  # the series would need too many terms: Wilson-Hilferty's normal approximation
    xs, al = np.where(far, 1.0, x), np.where(far, 1.0, alpha)
    log_x = np.log(xs)
    term, acc, rescaled = np.ones_like(xs), np.zeros_like(xs), np.zeros_like(xs)
    psi = _digamma(al + 1)
    steps = int(np.max(xs + 12 * np.sqrt(xs))) + 40 if xs.size else 0
    for n in range(steps):  # terms are kept relative to the first (which may underflow), rescaled when large
        acc += term * (log_x - psi)
        psi += 1 / (al + n + 1)
        term *= xs / (al + n + 1)
        big = term > 1e200
        if big.any():
            term, acc = np.where(big, term * 1e-200, term), np.where(big, acc * 1e-200, acc)
            rescaled += big
    # dP/dalpha / pdf = acc * first term / pdf, and first term / pdf = x / alpha
    with np.errstate(over="ignore"):
        grad = -acc * (xs / al) * np.power(1e200, rescaled)
    cube = np.cbrt(x / alpha)
    z = (cube - 1 + 1 / (9 * alpha)) * 3 * np.sqrt(alpha)
    base = 1 - 1 / (9 * alpha) + z / (3 * np.sqrt(alpha))
    approx = base ** 3 + 3 * alpha * base ** 2 * (1 / (9 * alpha ** 2) - z / (6 * alpha ** 1.5))
    return np.where(far, approx, grad)


def _gamma_grad_kernel(ins, outs, attrs) -> None:
    alpha, x = ins
    np.copyto(outs[0], gamma_sample_grad(alpha, x), casting="unsafe")


def _gamma_grad_shapes(inputs: tuple, attrs) -> list:
    return [(inputs[1]._v.shape, inputs[1].dtype)]


# d sample / d alpha (the gamma sample's reparameterization gradient); no node: standard_gamma's backward runs it
STANDARD_GAMMA_GRAD = Primitive("_standard_gamma_grad", _gamma_grad_shapes, cpu=_gamma_grad_kernel, cuda=None)


def _standard_gamma_backward(node, grad: Tensor) -> tuple:
    alpha, x = node.saved_tensors
    return (grad * STANDARD_GAMMA_GRAD((alpha, x)),)


# torch's StandardGammaBackward0, on the sample its sampler record drew: the implicit reparameterization gradient
STANDARD_GAMMA = Primitive("standard_gamma", None, cpu=None, backward=_standard_gamma_backward,
                           saved=("input0", "output0"))


def standard_gamma(alpha: Tensor) -> Tensor:
    """Samples of Gamma(alpha, 1), differentiable in alpha."""
    if not alpha.dtype.is_floating_point:
        raise RuntimeError(f"\"standard_gamma\" not implemented for '{alpha.dtype}'")
    alpha = alpha.contiguous()
    x = samplers._fresh("_standard_gamma", "_standard_gamma", (), Tensor._empty(tuple(alpha.shape), alpha.dtype,
                        alpha.device), False, None, (alpha,))
    STANDARD_GAMMA.attach((alpha,), (x,))
    return x


def binomial(count: Tensor, prob: Tensor, generator=None) -> Tensor:
    """Binomial(count, prob) samples, elementwise over the broadcast shape (torch.binomial)."""
    if not count.dtype.is_floating_point:
        raise ValueError(f"binomial only supports floating-point dtypes for count, got: {torch_name(count.dtype)}")
    if prob.dtype is not count.dtype:
        raise RuntimeError(f"Found dtype {torch_name(prob.dtype)} but expected {torch_name(count.dtype)}")
    if tuple(count.shape) != tuple(prob.shape):
        count, prob = (t.contiguous() for t in broadcast_tensors(count, prob))
    out = Tensor._empty(tuple(count.shape), count.dtype, count.device)
    return samplers._fresh("binomial", "binomial", (), out, False, generator, (count, prob))

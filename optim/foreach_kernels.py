"""Compiled (numba) loops of the common optimizer updates, one pass over each parameter (optim/foreach.py).

Loaded through vm.codegen.kernel_module. On NumPy an Adam step is about fourteen passes over each parameter with six
temporaries, and SGD with momentum four passes and one temporary; these loops do each element's update in one pass.
They compute in the arrays' dtype with scalars of that dtype, operation by operation as the list-wide update
functions (`adam`, `sgd`) do on HostArrays, so the bits are the same (numba contracts no multiply-add; lerp's one
rounding is spelled out in float64, as its float32 template). The
`_parallel` variants split the elements over numba's threads (elementwise: the same bits on any count).
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange


@njit(cache=True, nogil=True, inline="always")
def _adam_element(p, g, m, v, j, decay, decoupled, w, lerp_low, one, b2, c2, bc2, eps, neg_step):
    x = p[j]
    if decoupled:
        x = x * decay
    grad = g[j]
    # exp_avg.lerp_(grad, 1 - beta1) as torch's kernel: fmadd(w, grad - m, m), or fmadd(w - 1, grad - m, grad) for
    # a weight past one half; one rounding of an exact float64 product and sum for float32 (ops/elementwise's lerp)
    d = np.float64(grad - m[j])
    if lerp_low:
        m[j] = np.float64(m[j]) + np.float64(w) * d
    else:
        m[j] = np.float64(grad) + (np.float64(w) - 1.0) * d
    v[j] = v[j] * b2 + (grad * c2) * grad  # exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
    denom = np.sqrt(v[j]) / bc2 + eps
    p[j] = x + (m[j] * neg_step) / denom  # param.addcdiv_(exp_avg, denom, value=-step_size)


@njit(cache=True, nogil=True)
def adam(p, g, m, v, decay, decoupled, w, lerp_low, one, b2, c2, bc2, eps, neg_step):
    """One parameter's Adam (AdamW when `decoupled`) step in place: parameter, first and second moments."""
    for j in range(p.size):
        _adam_element(p, g, m, v, j, decay, decoupled, w, lerp_low, one, b2, c2, bc2, eps, neg_step)


@njit(cache=True, nogil=True, parallel=True)
def adam_parallel(p, g, m, v, decay, decoupled, w, lerp_low, one, b2, c2, bc2, eps, neg_step):
    """`adam` over numba's threads."""
    for j in prange(p.size):
        _adam_element(p, g, m, v, j, decay, decoupled, w, lerp_low, one, b2, c2, bc2, eps, neg_step)


@njit(cache=True, nogil=True)
def sgd_momentum(p, g, b, momentum, neg_lr):
    """One parameter's SGD step with momentum (no dampening, weight decay or Nesterov) in place."""
    for j in range(p.size):
        b[j] = b[j] * momentum + g[j]
        p[j] = p[j] + b[j] * neg_lr


@njit(cache=True, nogil=True, parallel=True)
def sgd_momentum_parallel(p, g, b, momentum, neg_lr):
    """`sgd_momentum` over numba's threads."""
    for j in prange(p.size):
        b[j] = b[j] * momentum + g[j]
        p[j] = p[j] + b[j] * neg_lr


def warm() -> None:
    """Compile each loop for float32 and float64 (three elements) and check it against NumPy's passes."""
    for real in (np.float32, np.float64):
        t = real
        for adam_fn, sgd_fn in ((adam, sgd_momentum), (adam_parallel, sgd_momentum_parallel)):
            p, g, m, v = (np.array([0.5, -1.0, 2.0], real) + k for k in range(4))
            want_m = (m.astype(np.float64) + np.float64(t(0.1)) * (g - m).astype(np.float64)).astype(real)
            want_v = v * t(0.999) + (g * t(0.001)) * g
            want_p = p * t(0.99) + (want_m * t(-0.01)) / (np.sqrt(want_v) / t(0.5) + t(1e-8))
            adam_fn(p, g, m, v, t(0.99), True, t(0.1), True, t(1), t(0.999), t(0.001), t(0.5), t(1e-8), t(-0.01))
            b = np.array([1.0, 2.0, 3.0], real)
            q = np.array([0.5, 0.25, -1.0], real)
            want_b = b * t(0.9) + g
            want_q = q + want_b * t(-0.1)
            sgd_fn(q, g, b, t(0.9), t(-0.1))
            if not (np.array_equal(p, want_p) and np.array_equal(m, want_m) and np.array_equal(v, want_v)
                    and np.array_equal(b, want_b) and np.array_equal(q, want_q)):
                raise RuntimeError("foreach_kernels: a warm-up update came out wrong")

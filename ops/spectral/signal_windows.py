"""Window functions: torch.signal.windows (M, sym) and the top-level *_window creators (window_length, periodic).

Every window is a few tidal ops over a linspace or arange, as PyTorch builds them, so values match its
rounding and `requires_grad=True` gives a tensor in the graph as PyTorch's does.
"""
from __future__ import annotations

import math
from collections.abc import Iterable

from ...tensor import Tensor
from ...tensor import dtype as dt
from ..elementwise import arithmetic as mt, copies
from ..factories.creation import empty, ones
from ..factories.ranges import arange, linspace
from ..movement.shape_ops import cat

__all__ = ["bartlett_window", "blackman_window", "hamming_window", "hann_window", "kaiser_window"]
METHODS: dict = {}
WINDOWS = ["bartlett", "blackman", "cosine", "exponential", "gaussian", "general_cosine", "general_hamming",
           "hamming", "hann", "kaiser", "nuttall"]


# -- torch.signal.windows --------------------------------------------------------------------------
def _check(name: str, M_: int, dtype, layout) -> dt.dtype:
    dtype = dt.get_default_dtype() if dtype is None else dtype
    if M_ < 0:
        raise ValueError(f"{name} requires non-negative window length, got M={M_}")
    if layout is not None and str(layout) != "torch.strided":
        raise ValueError(f"{name} is implemented for strided tensors only, got: {layout}")
    if dtype not in (dt.float32, dt.float64):
        raise ValueError(f"{name} expects float32 or float64 dtypes, got: {dtype}")
    return dtype


def _trivial(M_: int, dtype, device, requires_grad: bool):
    """The empty window for M = 0 and ones for M = 1; None otherwise."""
    if M_ == 0:
        return empty((0,), dtype=dtype, device=device, requires_grad=requires_grad)
    if M_ == 1:
        return ones((1,), dtype=dtype, device=device, requires_grad=requires_grad)
    return None


def _span(M_: int, start: float, constant: float, dtype, device, requires_grad: bool) -> Tensor:
    return linspace(start * constant, (start + (M_ - 1)) * constant, M_, dtype=dtype, device=device,
                    requires_grad=requires_grad)


def exponential(M: int, *, center: float | None = None, tau: float = 1.0, sym: bool = True, dtype=None,
                layout=None, device=None, requires_grad: bool = False) -> Tensor:
    """exp(-|n - center| / tau)."""
    dtype = _check("exponential", M, dtype, layout)
    if tau <= 0:
        raise ValueError(f"Tau must be positive, got: {tau} instead.")
    if sym and center is not None:
        raise ValueError("Center must be None for symmetric windows")
    if M == 0:
        return _trivial(M, dtype, device, requires_grad)
    if center is None:
        center = (M if not sym and M > 1 else M - 1) / 2.0
    k = linspace(-center / tau, (-center + (M - 1)) / tau, M, dtype=dtype, device=device, requires_grad=requires_grad)
    return _exp_neg(mt.abs(k))


def _exp_neg(x: Tensor) -> Tensor:
    """exp(-x)."""
    return mt.exp(mt.neg(x))


def cosine(M: int, *, sym: bool = True, dtype=None, layout=None, device=None, requires_grad: bool = False) -> Tensor:
    """sin(pi (n + 1/2) / M): the sine window."""
    dtype = _check("cosine", M, dtype, layout)
    if M == 0:
        return _trivial(M, dtype, device, requires_grad)
    return mt.sin(_span(M, 0.5, math.pi / (M + 1 if not sym and M > 1 else M), dtype, device, requires_grad))


def gaussian(M: int, *, std: float = 1.0, sym: bool = True, dtype=None, layout=None, device=None,
             requires_grad: bool = False) -> Tensor:
    """exp(-((n - center) / std)^2 / 2)."""
    dtype = _check("gaussian", M, dtype, layout)
    if std <= 0:
        raise ValueError(f"Standard deviation must be positive, got: {std} instead.")
    if M == 0:
        return _trivial(M, dtype, device, requires_grad)
    start = -(M if not sym and M > 1 else M - 1) / 2.0
    k = _span(M, start, 1 / (std * math.sqrt(2)), dtype, device, requires_grad)
    return _exp_neg(mt.mul(k, k))


def kaiser(M: int, *, beta: float = 12.0, sym: bool = True, dtype=None, layout=None, device=None,
           requires_grad: bool = False) -> Tensor:
    """I0(beta sqrt(1 - (2n / (M - 1) - 1)^2)) / I0(beta)."""
    dtype = _check("kaiser", M, dtype, layout)
    if beta < 0:
        raise ValueError(f"beta must be non-negative, got: {beta} instead.")
    trivial = _trivial(M, dtype, device, requires_grad)
    if trivial is not None:
        return trivial
    constant = 2.0 * beta / (M if not sym else M - 1)
    k = linspace(-beta, min(beta, -beta + (M - 1) * constant), M, dtype=dtype, device=device,
                 requires_grad=requires_grad)
    b = copies.convert(mt._number_tensor(float(beta)), dtype)  # beta in the window's dtype, as PyTorch (no NaN)
    return mt.div(mt.i0(mt.sqrt(mt.clamp_min(mt.sub(mt.mul(b, b), mt.mul(k, k)), 0.0))), mt.i0(b))


def general_cosine(M: int, *, a: Iterable, sym: bool = True, dtype=None, layout=None, device=None,
                   requires_grad: bool = False) -> Tensor:
    """sum_i (-1)^i a_i cos(2 pi i n / (M - 1))."""
    dtype = _check("general_cosine", M, dtype, layout)
    trivial = _trivial(M, dtype, device, requires_grad)
    if trivial is not None:
        return trivial
    if not isinstance(a, Iterable):
        raise TypeError("Coefficients must be a list/tuple")
    if not a:
        raise ValueError("Coefficients cannot be empty")
    k = linspace(0, (M - 1) * 2 * math.pi / (M if not sym else M - 1), M, dtype=dtype, device=device,
                 requires_grad=requires_grad)
    total = None
    for i, w in enumerate(a):
        term = mt.mul(mt.cos(mt.mul(k, float(i))), (-1) ** i * w)
        total = term if total is None else mt.add(total, term)
    return total


def general_hamming(M: int, *, alpha: float = 0.54, sym: bool = True, dtype=None, layout=None, device=None,
                    requires_grad: bool = False) -> Tensor:
    """alpha - (1 - alpha) cos(2 pi n / (M - 1))."""
    return general_cosine(M, a=[alpha, 1.0 - alpha], sym=sym, dtype=dtype, layout=layout, device=device,
                          requires_grad=requires_grad)


def hamming(M: int, *, sym: bool = True, dtype=None, layout=None, device=None, requires_grad: bool = False) -> Tensor:
    """The Hamming window (general_hamming with alpha 0.54)."""
    return general_hamming(M, sym=sym, dtype=dtype, layout=layout, device=device, requires_grad=requires_grad)


def hann(M: int, *, sym: bool = True, dtype=None, layout=None, device=None, requires_grad: bool = False) -> Tensor:
    """The Hann window (general_hamming with alpha 0.5)."""
    return general_hamming(M, alpha=0.5, sym=sym, dtype=dtype, layout=layout, device=device,
                           requires_grad=requires_grad)


def blackman(M: int, *, sym: bool = True, dtype=None, layout=None, device=None, requires_grad: bool = False) -> Tensor:
    """The Blackman window: general_cosine with a = (0.42, 0.5, 0.08)."""
    dtype = _check("blackman", M, dtype, layout)
    return general_cosine(M, a=[0.42, 0.5, 0.08], sym=sym, dtype=dtype, layout=layout, device=device,
                          requires_grad=requires_grad)


def nuttall(M: int, *, sym: bool = True, dtype=None, layout=None, device=None, requires_grad: bool = False) -> Tensor:
    """Nuttall's minimum 4-term Blackman-Harris window."""
    return general_cosine(M, a=[0.3635819, 0.4891775, 0.1365995, 0.0106411], sym=sym, dtype=dtype, layout=layout,
                          device=device, requires_grad=requires_grad)


def bartlett(M: int, *, sym: bool = True, dtype=None, layout=None, device=None, requires_grad: bool = False) -> Tensor:
    """The triangular window 1 - |2n / (M - 1) - 1|."""
    dtype = _check("bartlett", M, dtype, layout)
    trivial = _trivial(M, dtype, device, requires_grad)
    if trivial is not None:
        return trivial
    constant = 2 / (M if not sym else M - 1)
    k = linspace(-1, -1 + (M - 1) * constant, M, dtype=dtype, device=device, requires_grad=requires_grad)
    return mt.sub(1, mt.abs(k))


# -- torch.*_window (ATen's formulas) --------------------------------------------------------------
def _window_start(name: str, window_length: int, periodic: bool, dtype, device, requires_grad: bool):
    """(length to compute, dtype, or a finished trivial window)."""
    dtype = dt.get_default_dtype() if dtype is None else dtype
    if window_length < 0:
        raise RuntimeError(f"{name} requires non-negative window_length, got window_length={window_length}")
    if not dtype.is_floating_point:
        raise RuntimeError(f"{name} expects floating point dtypes, got: {dtype}")
    if window_length == 0:
        return None, dtype, empty((0,), dtype=dtype, device=device, requires_grad=requires_grad)
    if window_length == 1:
        return None, dtype, ones((1,), dtype=dtype, device=device, requires_grad=requires_grad)
    return window_length + 1 if periodic else window_length, dtype, None


def _finish_window(window: Tensor, periodic: bool, requires_grad: bool) -> Tensor:
    window = window[:-1] if periodic else window
    if requires_grad:
        window = window.detach().requires_grad_(True)  # PyTorch's factory result is a leaf
    return window


def _hamming(name: str, window_length: int, periodic: bool, alpha: float, beta: float, dtype, device,
             requires_grad: bool) -> Tensor:
    n, dtype, done = _window_start(name, window_length, periodic, dtype, device, requires_grad)
    if done is not None:
        return done
    w = mt.mul(arange(n, dtype=dtype, device=device), 2 * math.pi / (n - 1))
    return _finish_window(mt.add(mt.mul(mt.cos(w), -beta), alpha), periodic, requires_grad)


def hamming_window(window_length: int, periodic: bool = True, alpha: float = 0.54, beta: float = 0.46, *,
                   dtype=None, layout=None, device=None, pin_memory: bool = False,
                   requires_grad: bool = False) -> Tensor:
    """alpha - beta cos(2 pi n / (N - 1)); periodic drops the last point of an N + 1 window."""
    return _hamming("hamming_window", window_length, periodic, alpha, beta, dtype, device, requires_grad)


def hann_window(window_length: int, periodic: bool = True, *, dtype=None, layout=None, device=None,
                pin_memory: bool = False, requires_grad: bool = False) -> Tensor:
    """0.5 - 0.5 cos(2 pi n / (N - 1))."""
    return _hamming("hann_window", window_length, periodic, 0.5, 0.5, dtype, device, requires_grad)


def bartlett_window(window_length: int, periodic: bool = True, *, dtype=None, layout=None, device=None,
                    pin_memory: bool = False, requires_grad: bool = False) -> Tensor:
    """1 - |2n / (N - 1) - 1|."""
    n, dtype, done = _window_start("bartlett_window", window_length, periodic, dtype, device, requires_grad)
    if done is not None:
        return done
    w = mt.mul(arange(n, dtype=dtype, device=device), 2.0 / (n - 1))
    first_half = ((n - 1) >> 1) + 1
    w = cat([w[:first_half], mt.add(mt.neg(w[first_half:]), 2.0)])
    return _finish_window(w, periodic, requires_grad)


def blackman_window(window_length: int, periodic: bool = True, *, dtype=None, layout=None, device=None,
                    pin_memory: bool = False, requires_grad: bool = False) -> Tensor:
    """0.42 - 0.5 cos(2 pi n / (N - 1)) + 0.08 cos(4 pi n / (N - 1))."""
    n, dtype, done = _window_start("blackman_window", window_length, periodic, dtype, device, requires_grad)
    if done is not None:
        return done
    w = mt.mul(arange(n, dtype=dtype, device=device), math.pi / (n - 1))
    value = mt.add(mt.sub(mt.mul(mt.cos(mt.mul(w, 4.0)), 0.08), mt.mul(mt.cos(mt.mul(w, 2.0)), 0.5)), 0.42)
    return _finish_window(value, periodic, requires_grad)


def kaiser_window(window_length: int, periodic: bool = True, beta: float = 12.0, *, dtype=None, layout=None,
                  device=None, pin_memory: bool = False, requires_grad: bool = False) -> Tensor:
    """I0(beta sqrt(1 - ((n - alpha) / alpha)^2)) / I0(beta), alpha = (N - 1) / 2."""
    n, dtype, done = _window_start("kaiser_window", window_length, periodic, dtype, device, requires_grad)
    if done is not None:
        return done
    alpha = (n - 1) / 2.0
    ratio = mt.div(mt.sub(arange(n, dtype=dtype, device=device), alpha), alpha)
    inside = mt.clamp_min(mt.sub(1.0, mt.mul(ratio, ratio)), 0.0)
    b = copies.convert(mt._number_tensor(float(beta)), dtype)
    return _finish_window(mt.div(mt.i0(mt.mul(mt.sqrt(inside), b)), mt.i0(b)), periodic, requires_grad)

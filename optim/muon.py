"""Muon: momentum whose update matrix is orthogonalized by a Newton-Schulz iteration (2-D parameters only)."""
from __future__ import annotations

import math

from ..ops.factories import creation
from ..ops.linalg.products import addmm
from ..tensor import Tensor
from .optimizer import Optimizer

__all__ = ["Muon", "muon"]

EPS = 1e-7
DEFAULT_A, DEFAULT_B, DEFAULT_C = 3.4445, -4.7750, 2.0315
DEFAULT_NS_STEPS = 5


def _zeropower_via_newtonschulz(grad: Tensor, ns_coefficients: tuple[float, float, float], ns_steps: int,
                                eps: float) -> Tensor:
    """An approximate orthogonalization of `grad` (U S' V^T with S' near 1) by a quintic Newton-Schulz
    iteration in bfloat16."""
    if ns_steps >= 100:
        raise ValueError("Number of steps must be less than 100 for computational efficiency")
    if len(grad.shape) != 2:
        raise ValueError("Input tensor gradient must be a 2D matrix")
    if len(ns_coefficients) != 3:
        raise ValueError("Coefficients must be a tuple of exactly 3 values")
    a, b, c = ns_coefficients
    tall = grad.size(0) > grad.size(1)
    ortho = grad.bfloat16()
    if tall:  # iterate on the wide orientation: the Gram matrix is the smaller one
        ortho = ortho.T
    ortho.div_(ortho.norm().clamp(min=eps))
    for _ in range(ns_steps):
        gram = ortho @ ortho.T
        ortho = addmm(ortho, addmm(gram, gram, gram, beta=b, alpha=c), ortho, beta=a)
    return ortho.T if tall else ortho


def _adjust_lr(lr: float, adjust_lr_fn: str | None, shape) -> float:
    """The learning rate scaled so that the update's RMS is consistent across matrix shapes."""
    rows, cols = shape[:2]
    if adjust_lr_fn is None or adjust_lr_fn == "original":
        return lr * math.sqrt(max(1, rows / cols))
    if adjust_lr_fn == "match_rms_adamw":
        return lr * (0.2 * math.sqrt(max(rows, cols)))
    return lr


def muon(params: list[Tensor], grads: list[Tensor], momentum_buffers: list[Tensor], *, lr: float,
         weight_decay: float, momentum: float, nesterov: bool, ns_coefficients: tuple[float, float, float],
         eps: float, ns_steps: int, adjust_lr_fn: str | None) -> None:
    """The Muon update of every parameter and momentum buffer, in place."""
    for param, grad, buf in zip(params, grads, momentum_buffers):
        if grad.dim() != 2:
            raise ValueError("Param gradient must be a 2D matrix")
        buf.lerp_(grad, 1 - momentum)
        update = grad.lerp(buf, momentum) if nesterov else buf
        update = _zeropower_via_newtonschulz(update, ns_coefficients, ns_steps, eps)
        param.mul_(1 - lr * weight_decay)
        # in the parameter's dtype, as type promotion gives (the bfloat16 update converts exactly)
        param.add_(update.to(param.dtype), alpha=-_adjust_lr(lr, adjust_lr_fn, param.shape))


class Muon(Optimizer):
    """Muon, as torch.optim.Muon; biases, embeddings and other non-matrix parameters belong to another
    optimizer (AdamW, say)."""

    _update = staticmethod(muon)
    _refuses_complex = True
    _state_keys = ("momentum_buffer",)

    def __init__(self, params, lr: float = 1e-3, weight_decay: float = 0.1, momentum: float = 0.95,
                 nesterov: bool = True, ns_coefficients: tuple[float, float, float] = (DEFAULT_A, DEFAULT_B, DEFAULT_C),
                 eps: float = EPS, ns_steps: int = DEFAULT_NS_STEPS, adjust_lr_fn: str | None = None) -> None:
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 <= momentum:
            raise ValueError(f"momentum should be >= 0 but is: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight decay should be >= 0 but is: {weight_decay}")
        if adjust_lr_fn is not None and adjust_lr_fn not in ["original", "match_rms_adamw"]:
            raise ValueError(f"Adjust learning rate function {adjust_lr_fn} is not supported")
        defaults = dict(lr=lr, weight_decay=weight_decay, momentum=momentum, nesterov=nesterov,
                        ns_coefficients=ns_coefficients, eps=eps, ns_steps=ns_steps, adjust_lr_fn=adjust_lr_fn)
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                if p.dim() != 2:
                    raise ValueError(f"Muon only supports 2D parameters whereas we found a parameter with size: "
                                     f"{p.size()}")

    @staticmethod
    def _init_state(p: Tensor, group: dict) -> dict:
        return {"momentum_buffer": creation.zeros_like(p.grad)}

    def _advance(self, group: dict, states: list) -> None:
        pass  # no step count

    def _multi_tensor(self, group: dict) -> bool:
        return False  # matrix products in bfloat16: the update runs as ops on the tensors, not as one host kernel

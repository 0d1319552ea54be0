"""Adadelta: updates scaled by the ratio of running RMS of past updates and of gradients."""
from __future__ import annotations

from ..ops.factories import creation
from ..tensor import Tensor
from .optimizer import Optimizer, check, descent_grad
from .hyperparams import STEP_FLAGS, check_lr

__all__ = ["Adadelta", "adadelta"]


def adadelta(params: list[Tensor], grads: list[Tensor], square_avgs: list[Tensor], acc_deltas: list[Tensor], *,
             lr: float, rho: float, eps: float, weight_decay: float, maximize: bool) -> None:
    """The Adadelta update of every parameter, in place."""
    for param, grad, square_avg, acc_delta in zip(params, grads, square_avgs, acc_deltas):
        grad = descent_grad(param, grad, maximize, weight_decay)
        square_avg.mul_(rho).addcmul_(grad, grad, value=1 - rho)
        std = square_avg.add(eps).sqrt_()
        delta = acc_delta.add(eps).sqrt_().div_(std).mul_(grad)
        acc_delta.mul_(rho).addcmul_(delta, delta, value=1 - rho)
        param.add_(delta, alpha=-lr)


class Adadelta(Optimizer):
    """Adadelta, as torch.optim.Adadelta."""

    _update = staticmethod(adadelta)
    _state_keys = ("square_avg", "acc_delta")
    _step_tensors = True
    _group_flags = STEP_FLAGS

    def __init__(self, params, lr: float = 1.0, rho: float = 0.9, eps: float = 1e-6, weight_decay: float = 0,
                 foreach: bool | None = None, *, capturable: bool = False, maximize: bool = False,
                 differentiable: bool = False) -> None:
        check_lr(lr)
        check(0.0 <= rho <= 1.0, "rho value", rho)
        check(0.0 <= eps, "epsilon value", eps)
        check(0.0 <= weight_decay, "weight_decay value", weight_decay)
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize,
                        capturable=capturable, foreach=foreach, differentiable=differentiable)
        super().__init__(params, defaults)

    @staticmethod
    def _init_state(p: Tensor, group: dict) -> dict:
        return {"step": 0.0, "square_avg": creation.zeros_like(p), "acc_delta": creation.zeros_like(p)}

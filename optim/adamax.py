"""Adamax: Adam with the infinity norm in place of the second moment."""
from __future__ import annotations

from ..ops.factories import creation
from ..tensor import Tensor
from .hyperparams import STEP_FLAGS, check_adam_hyperparameters
from .optimizer import Optimizer, descent_grad

__all__ = ["Adamax", "adamax"]


def adamax(params: list[Tensor], grads: list[Tensor], exp_avgs: list[Tensor], exp_infs: list[Tensor],
           steps: list[float], *, eps: float, beta1: float, beta2: float, lr: float, weight_decay: float,
           maximize: bool) -> None:
    """The Adamax update of every parameter, in place; `steps` are the counts including this step."""
    for i, param in enumerate(params):
        grad = descent_grad(param, grads[i], maximize, weight_decay)
        exp_avg, exp_inf = exp_avgs[i], exp_infs[i]
        exp_avg.lerp_(grad, 1 - beta1)
        exp_inf.mul_(beta2).maximum_(grad.abs().add_(eps))  # the exponentially weighted infinity norm
        clr = lr / (1 - beta1 ** steps[i])
        param.addcdiv_(exp_avg, exp_inf, value=-clr)


class Adamax(Optimizer):
    """Adamax, as torch.optim.Adamax."""

    _update = staticmethod(adamax)
    _state_keys = ("exp_avg", "exp_inf", "step")
    _step_tensors = True
    _pairs = {"betas": ("beta1", "beta2")}
    _group_flags = STEP_FLAGS
    _host_state = ("step",)

    def __init__(self, params, lr: float = 2e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, foreach: bool | None = None, *, maximize: bool = False,
                 differentiable: bool = False, capturable: bool = False) -> None:
        check_adam_hyperparameters(lr, eps, betas, weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    @staticmethod
    def _init_state(p: Tensor, group: dict) -> dict:
        return {"step": 0.0, "exp_avg": creation.zeros_like(p), "exp_inf": creation.zeros_like(p)}

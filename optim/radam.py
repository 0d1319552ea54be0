"""RAdam: Adam whose adaptive step is switched on once the variance estimate is reliable (rectified)."""
from __future__ import annotations

from ..ops.factories import creation
from ..tensor import Tensor
from .adam import adam_moments
from .hyperparams import check_adam_hyperparameters
from .optimizer import Optimizer

__all__ = ["RAdam", "radam"]


def radam(params: list[Tensor], grads: list[Tensor], exp_avgs: list[Tensor], exp_avg_sqs: list[Tensor],
          steps: list[float], *, beta1: float, beta2: float, lr: float, weight_decay: float, eps: float,
          maximize: bool, decoupled_weight_decay: bool) -> None:
    """The RAdam update of every parameter, in place; `steps` are the counts including this step."""
    for i, param in enumerate(params):
        exp_avg, exp_avg_sq, step = exp_avgs[i], exp_avg_sqs[i], steps[i]
        adam_moments(param, grads[i], exp_avg, exp_avg_sq, beta1=beta1, beta2=beta2, lr=lr,
                     weight_decay=weight_decay, decoupled_weight_decay=decoupled_weight_decay, maximize=maximize)
        bias_correction1 = 1 - beta1 ** step
        bias_correction2 = 1 - beta2 ** step
        bias_corrected_exp_avg = exp_avg / bias_correction1
        # the length of the approximated simple moving average, and its limit
        rho_inf = 2 / (1 - beta2) - 1
        rho_t = rho_inf - 2 * step * (beta2 ** step) / bias_correction2
        if rho_t > 5.0:  # the variance is tractable: rectified adaptive step
            rect = ((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
            adaptive_lr = (bias_correction2 ** 0.5) / exp_avg_sq.sqrt().add_(eps)
            param.add_(bias_corrected_exp_avg * lr * adaptive_lr * rect, alpha=-1.0)
        else:  # plain momentum SGD
            param.add_(bias_corrected_exp_avg * lr, alpha=-1.0)


class RAdam(Optimizer):
    """RAdam (RAdamW with `decoupled_weight_decay`), as torch.optim.RAdam."""

    _update = staticmethod(radam)
    _state_keys = ("exp_avg", "exp_avg_sq", "step")
    _step_tensors = True
    _pairs = {"betas": ("beta1", "beta2")}
    _group_flags = (("foreach", None), ("maximize", False), ("differentiable", False), ("decoupled_weight_decay", False),
                    ("capturable", False))
    _host_state = ("step",)

    def __init__(self, params, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, decoupled_weight_decay: bool = False, *, foreach: bool | None = None,
                 maximize: bool = False, capturable: bool = False, differentiable: bool = False) -> None:
        check_adam_hyperparameters(lr, eps, betas, weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, maximize=maximize, foreach=foreach,
                        capturable=capturable, decoupled_weight_decay=decoupled_weight_decay,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    @staticmethod
    def _init_state(p: Tensor, group: dict) -> dict:
        return {"step": 0.0, "exp_avg": creation.zeros_like(p), "exp_avg_sq": creation.zeros_like(p)}

"""Adam and AdamW: moment estimates with bias correction, optional AMSGrad and weight decay."""
from __future__ import annotations

from ..ops import math_api as M
from ..ops import creation
from ..tensor import Tensor
from .foreach import foreach
from .hyperparams import check_adam_hyperparameters
from .optimizer import Optimizer

__all__ = ["Adam", "AdamW", "adam", "adam_moments"]


class Adam(Optimizer):
    """Adam (with `decoupled_weight_decay`, AdamW), as torch.optim.Adam."""

    def __init__(self, params, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, amsgrad: bool = False, *, foreach: bool | None = None,
                 maximize: bool = False, capturable: bool = False, differentiable: bool = False,
                 fused: bool | None = None, decoupled_weight_decay: bool = False) -> None:
        check_adam_hyperparameters(lr, eps, betas, weight_decay)
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                        maximize=maximize, foreach=foreach, capturable=capturable, differentiable=differentiable,
                        fused=fused, decoupled_weight_decay=decoupled_weight_decay)
        super().__init__(params, defaults)

    @staticmethod
    def _init_state(p: Tensor, group: dict) -> dict:
        state = {"step": 0.0, "exp_avg": creation.zeros_like(p), "exp_avg_sq": creation.zeros_like(p)}
        if group["amsgrad"]:
            state["max_exp_avg_sq"] = creation.zeros_like(p)
        return state

    def step(self, closure=None):
        """Perform one optimization step; `closure` re-evaluates the loss and returns it."""
        loss = self._evaluate(closure)
        for group in self.param_groups:
            params, grads, states = self._with_grads(group, self._init_state)
            for state in states:
                state["step"] += 1
            beta1, beta2 = group["betas"]
            # one multi-tensor instruction (AMSGrad's running maximum runs per parameter)
            foreach(adam, (params, grads, [s["exp_avg"] for s in states], [s["exp_avg_sq"] for s in states],
                           [s.get("max_exp_avg_sq") for s in states], [s["step"] for s in states]),
                    written=(0, 2, 3, 4), enabled=not group["amsgrad"],
                    amsgrad=group["amsgrad"], beta1=beta1, beta2=beta2, lr=group["lr"],
                    weight_decay=group["weight_decay"], eps=group["eps"], maximize=group["maximize"],
                    decoupled_weight_decay=group["decoupled_weight_decay"])
        return loss


class AdamW(Adam):
    """Adam with decoupled weight decay, as torch.optim.AdamW."""

    def __init__(self, params, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 1e-2, amsgrad: bool = False, *, maximize: bool = False,
                 foreach: bool | None = None, capturable: bool = False, differentiable: bool = False,
                 fused: bool | None = None) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach, maximize=maximize,
                         capturable=capturable, differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)

    def __setstate__(self, state: dict) -> None:
        super().__setstate__(state)
        for group in self.param_groups:
            group["decoupled_weight_decay"] = True


def adam(params: list[Tensor], grads: list[Tensor], exp_avgs: list[Tensor], exp_avg_sqs: list[Tensor],
         max_exp_avg_sqs: list[Tensor | None], steps: list[float], *, amsgrad: bool, beta1: float, beta2: float,
         lr: float, weight_decay: float, eps: float, maximize: bool, decoupled_weight_decay: bool) -> None:
    """The Adam update of every parameter, in place; `steps` are the counts including this step.

    Bias corrections are Python floats computed from the counts, so the step never waits for the device."""
    for i, param in enumerate(params):
        grad = -grads[i] if maximize else grads[i]
        exp_avg, exp_avg_sq, step = exp_avgs[i], exp_avg_sqs[i], steps[i]
        grad = adam_moments(param, grad, exp_avg, exp_avg_sq, beta1=beta1, beta2=beta2, lr=lr,
                            weight_decay=weight_decay, decoupled_weight_decay=decoupled_weight_decay)
        step_size = lr / (1 - beta1 ** step)
        bias_correction2_sqrt = (1 - beta2 ** step) ** 0.5
        second_moment = exp_avg_sq
        if amsgrad:
            second_moment = M.maximum(max_exp_avg_sqs[i], exp_avg_sq, out=max_exp_avg_sqs[i])
        denom = (second_moment.sqrt() / bias_correction2_sqrt).add_(eps)
        param.addcdiv_(exp_avg, denom, value=-step_size)


def adam_moments(param: Tensor, grad: Tensor, exp_avg: Tensor, exp_avg_sq: Tensor, *, beta1: float, beta2: float,
                 lr: float, weight_decay: float, decoupled_weight_decay: bool) -> Tensor:
    """Adam's weight decay (decoupled: on the parameter, else into the gradient) and its two moment
    updates, in place, as Adam, NAdam and RAdam share them; returns the gradient after weight decay."""
    if weight_decay != 0:
        if decoupled_weight_decay:
            param.mul_(1 - lr * weight_decay)
        else:
            grad = grad.add(param, alpha=weight_decay)
    exp_avg.lerp_(grad, 1 - beta1)
    exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
    return grad

"""NAdam: Adam with Nesterov momentum and a momentum schedule (optionally decoupled weight decay)."""
from __future__ import annotations

from ..ops.factories import creation
from ..tensor import Tensor
from .adam import adam_moments
from .hyperparams import check_adam_hyperparameters
from .optimizer import Optimizer, check
from .scalar_state import product
from .step_counts import next_counts, store, values

__all__ = ["NAdam", "nadam"]


def _mu(beta1: float, step: float, momentum_decay: float) -> float:
    """The momentum coefficient of step `step` (the schedule warms it up)."""
    return beta1 * (1.0 - 0.5 * (0.96 ** (step * momentum_decay)))


def nadam(params: list[Tensor], grads: list[Tensor], exp_avgs: list[Tensor], exp_avg_sqs: list[Tensor],
          mu_products: list[float], steps: list[float], *, beta1: float, beta2: float, lr: float,
          weight_decay: float, momentum_decay: float, eps: float, maximize: bool,
          decoupled_weight_decay: bool) -> None:
    """The NAdam update of every parameter, in place; `steps` and `mu_products` include this step."""
    for i, param in enumerate(params):
        exp_avg, exp_avg_sq, step, mu_product = exp_avgs[i], exp_avg_sqs[i], steps[i], mu_products[i]
        bias_correction2 = 1 - beta2 ** step
        grad = adam_moments(param, grads[i], exp_avg, exp_avg_sq, beta1=beta1, beta2=beta2, lr=lr,
                            weight_decay=weight_decay, decoupled_weight_decay=decoupled_weight_decay,
                            maximize=maximize)
        mu, mu_next = _mu(beta1, step, momentum_decay), _mu(beta1, step + 1, momentum_decay)
        denom = (exp_avg_sq / bias_correction2).sqrt().add_(eps)
        param.addcdiv_(grad, denom, value=-lr * (1.0 - mu) / (1.0 - mu_product))
        param.addcdiv_(exp_avg, denom, value=(-lr * mu_next) / (1.0 - mu_product * mu_next))


class NAdam(Optimizer):
    """NAdam (NAdamW with `decoupled_weight_decay`), as torch.optim.NAdam."""

    _update = staticmethod(nadam)
    _state_keys = ("exp_avg", "exp_avg_sq", "mu_product", "step")
    _pairs = {"betas": ("beta1", "beta2")}
    _group_flags = (("maximize", False), ("foreach", None), ("capturable", False), ("differentiable", False),
                    ("decoupled_weight_decay", False))
    _host_state = ("step", "mu_product")
    _step_tensors = True

    def __init__(self, params, lr: float = 2e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, momentum_decay: float = 4e-3, decoupled_weight_decay: bool = False, *,
                 foreach: bool | None = None, maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False) -> None:
        check_adam_hyperparameters(lr, eps, betas, weight_decay)
        check(0.0 <= momentum_decay, "momentum_decay value", momentum_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, momentum_decay=momentum_decay,
                        decoupled_weight_decay=decoupled_weight_decay, maximize=maximize, foreach=foreach,
                        capturable=capturable, differentiable=differentiable)
        super().__init__(params, defaults)

    @staticmethod
    def _init_state(p: Tensor, group: dict) -> dict:
        return {"step": 0.0, "mu_product": 1.0, "exp_avg": creation.zeros_like(p),
                "exp_avg_sq": creation.zeros_like(p)}

    def _advance(self, group: dict, states: list) -> None:
        beta1, decay = group["betas"][0], group["momentum_decay"]
        steps = next_counts(self, states)  # the count and the product of the momentum coefficients so far
        products = [product(m, _mu(beta1, step, decay)) for m, step in zip(values(self, states, "mu_product"), steps)]
        store(self, states, {"step": steps, "mu_product": products})

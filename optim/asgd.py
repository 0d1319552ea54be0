"""ASGD: averaged stochastic gradient descent (a decaying step size and a running average of the iterates)."""
from __future__ import annotations

from ..ops.factories import creation
from ..tensor import Tensor
from .hyperparams import STEP_FLAGS, check_lr
from .optimizer import Optimizer, check, descent_grad
from .scalar_state import assign, rounded
from .step_counts import store, written

__all__ = ["ASGD", "asgd"]


def asgd(params: list[Tensor], grads: list[Tensor], axs: list[Tensor], etas: list[float], mus: list[float], *,
         lambd: float, weight_decay: float, maximize: bool) -> None:
    """The ASGD update of every parameter and of its average `ax`, in place, with this step's eta and mu."""
    for i, param in enumerate(params):
        grad = descent_grad(param, grads[i], maximize, weight_decay)
        eta, mu, ax = etas[i], mus[i], axs[i]
        param.mul_(1 - lambd * eta)  # decay term
        param.add_(grad, alpha=-eta)
        if mu != 1:
            ax.add_(param.sub(ax).mul_(mu))
        else:
            ax.copy_(param)


class ASGD(Optimizer):
    """Averaged SGD, as torch.optim.ASGD; the average of the iterates is `state[p]['ax']`."""

    _update = staticmethod(asgd)
    _state_keys = ("ax", "eta", "mu")
    _group_flags = STEP_FLAGS
    _host_state = ("step", "eta", "mu")
    _step_tensors = True

    def __init__(self, params, lr: float = 1e-2, lambd: float = 1e-4, alpha: float = 0.75, t0: float = 1e6,
                 weight_decay: float = 0, foreach: bool | None = None, maximize: bool = False,
                 differentiable: bool = False, capturable: bool = False) -> None:
        check_lr(lr)
        check(0.0 <= weight_decay, "weight_decay value", weight_decay)
        defaults = dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    @staticmethod
    def _init_state(p: Tensor, group: dict) -> dict:
        return {"step": 0.0, "eta": rounded(group["lr"]), "mu": 1.0, "ax": creation.zeros_like(p)}

    def _apply(self, group: dict, params: list, grads: list, states: list, *extra: list) -> None:
        super()._apply(group, params, grads, states, *extra)  # with the eta and mu the last step left
        lr, lambd, alpha, t0 = group["lr"], group["lambd"], group["alpha"], group["t0"]
        steps = written(self, states)  # the step size decays; averaging starts after t0 steps
        etas = [assign(eta, lr / ((1 + lambd * lr * step) ** alpha))
                for eta, step in zip(written(self, states, "eta"), steps)]
        mus = [assign(mu, 1 / max(1, step - t0)) for mu, step in zip(written(self, states, "mu"), steps)]
        store(self, states, {"eta": etas, "mu": mus})

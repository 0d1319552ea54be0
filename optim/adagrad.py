"""Adagrad: per-element learning rates from the running sum of squared gradients."""
from __future__ import annotations

from ..ops.factories import creation
from ..ops.elementwise import arithmetic as M
from ..tensor import Tensor
from .optimizer import Optimizer, check, descent_grad
from .hyperparams import check_fused, check_lr
from .step_counts import written

__all__ = ["Adagrad", "adagrad"]


def adagrad(params: list[Tensor], grads: list[Tensor], state_sums: list[Tensor], steps: list[float], *, lr: float,
            weight_decay: float, lr_decay: float, eps: float, maximize: bool) -> None:
    """The Adagrad update of every parameter, in place; `steps` are the counts including this step."""
    for param, grad, state_sum, step in zip(params, grads, state_sums, steps):
        grad = descent_grad(param, grad, maximize, weight_decay)
        decayed_lr = lr / (1 + (step - 1) * lr_decay)
        state_sum.addcmul_(grad, grad, value=1)
        std = state_sum.sqrt().add_(eps)
        param.addcdiv_(grad, std, value=-decayed_lr)


def sparse_adagrad(param: Tensor, grad, state_sum: Tensor, step: float, *, lr: float, lr_decay: float, eps: float,
                   maximize: bool) -> None:
    """torch's Adagrad step for a sparse gradient: only the entries the (coalesced) gradient holds change."""
    held = grad.coalesce().entry_mask()
    grad = grad.to_dense()
    if maximize:
        grad = -grad
    state_sum.addcmul_(grad, grad, value=1)
    std = state_sum.sqrt().add_(eps)
    param.add_(M.where(held, grad / std, 0.0), alpha=-lr / (1 + (step - 1) * lr_decay))


class Adagrad(Optimizer):
    """Adagrad, as torch.optim.Adagrad (state is created for every parameter at construction)."""

    _update = staticmethod(adagrad)
    _state_keys = ("sum", "step")
    _step_tensors = True
    _group_flags = (("foreach", None), ("maximize", False), ("differentiable", False), ("fused", None))
    _sparse_refusal = None  # sparse gradients take torch's sparse update (sparse_adagrad)

    def _apply(self, group: dict, params: list, grads: list, states: list, *extra: list) -> None:
        if not any(g.is_sparse for g in grads):
            return super()._apply(group, params, grads, states, *extra)
        if group["weight_decay"] != 0:
            raise RuntimeError("weight_decay option is not compatible with sparse gradients")
        kwargs = self._hyperparameters(group)
        for p, g, state, step in zip(params, grads, states, written(self, states)):
            if g.is_sparse:
                sparse_adagrad(p, g, state["sum"], step, lr=kwargs["lr"], lr_decay=kwargs["lr_decay"],
                               eps=kwargs["eps"], maximize=kwargs["maximize"])
            else:
                adagrad([p], [g], [state["sum"]], [step], **kwargs)

    def __init__(self, params, lr: float = 1e-2, lr_decay: float = 0, weight_decay: float = 0,
                 initial_accumulator_value: float = 0, eps: float = 1e-10, foreach: bool | None = None, *,
                 maximize: bool = False, differentiable: bool = False, fused: bool | None = None) -> None:
        check_lr(lr)
        check(0.0 <= lr_decay, "lr_decay value", lr_decay)
        check(0.0 <= weight_decay, "weight_decay value", weight_decay)
        check(0.0 <= initial_accumulator_value, "initial_accumulator_value value", initial_accumulator_value)
        check(0.0 <= eps, "epsilon value", eps)
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)
        check_fused(fused, foreach, differentiable)
        for group in self.param_groups:
            for p in group["params"]:
                self.state[p].update(self._init_state(p, group))

    def _init_state(self, p: Tensor, group: dict) -> dict:
        # PyTorch fills the accumulator from the defaults, whatever the group says (both parts of a complex one)
        value = self.defaults["initial_accumulator_value"]
        return {"step": 0.0, "sum": creation.full_like(p, complex(value, value) if p.dtype.is_complex else value)}

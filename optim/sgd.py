"""Stochastic gradient descent, with momentum, dampening, Nesterov momentum and weight decay."""
from __future__ import annotations

from ..tensor import Tensor
from ..vm import intra_op
from .foreach import compiled_loops, contiguous, one_pass
from .optimizer import Optimizer, check, descent_grad
from .hyperparams import check_fused, check_lr

__all__ = ["SGD", "sgd"]


def sgd(params: list[Tensor], grads: list[Tensor], momentum_buffers: list[Tensor | None], *, lr: float,
        weight_decay: float, momentum: float, dampening: float, nesterov: bool, maximize: bool) -> None:
    """The SGD update of every parameter, in place; None momentum buffers are created (in the list)."""
    for i, (param, grad) in enumerate(zip(params, grads)):
        grad = descent_grad(param, grad, maximize, weight_decay)
        if momentum != 0:
            buf = momentum_buffers[i]
            if buf is None:
                buf = momentum_buffers[i] = grad.detach().clone()
            else:
                buf.mul_(momentum).add_(grad, alpha=1 - dampening)
            grad = grad.add(buf, alpha=momentum) if nesterov else buf
        param.add_(grad, alpha=-lr)


def _sgd_one_pass(lists: list, kwargs: dict) -> bool:
    """`sgd` with momentum as one compiled pass over each parameter (optim/foreach_kernels.py), the same bits:
    without dampening, Nesterov, weight decay or maximize, for number hyperparameters; whether it ran."""
    params, grads, buffers = lists
    momentum, lr = kwargs["momentum"], kwargs["lr"]
    if (momentum == 0 or kwargs["dampening"] != 0 or kwargs["nesterov"] or kwargs["weight_decay"] != 0
            or kwargs["maximize"] or not all(isinstance(x, (int, float)) for x in (momentum, lr))):
        return False
    loops = compiled_loops()
    if loops is None or not contiguous(params, grads, buffers):
        return False
    for p, g, b in zip(params, grads, buffers):
        t = p.dtype.type
        intra_op.pick(p.size, loops.sgd_momentum, loops.sgd_momentum_parallel)(p.reshape(-1), g.reshape(-1),
                                                                                b.reshape(-1), t(momentum), t(-lr))
    return True


one_pass(sgd, _sgd_one_pass)


def _no_state(p: Tensor, group: dict) -> dict:
    return {}  # the momentum buffer is the first step's gradient, made by the update


class SGD(Optimizer):
    """Stochastic gradient descent (optionally with momentum), as torch.optim.SGD."""

    _update = staticmethod(sgd)
    _state_keys = ("momentum_buffer",)
    _group_flags = (("nesterov", False), ("maximize", False), ("foreach", None), ("differentiable", False),
                    ("fused", False))
    _sparse_refusal = None  # sparse gradients update the parameter as their dense equal (momentum too)

    def __init__(self, params, lr: float = 1e-3, momentum: float = 0, dampening: float = 0,
                 weight_decay: float = 0, nesterov: bool = False, *, maximize: bool = False,
                 foreach: bool | None = None, differentiable: bool = False, fused: bool | None = None) -> None:
        check_lr(lr)
        check(momentum >= 0.0, "momentum value", momentum)
        check(weight_decay >= 0.0, "weight_decay value", weight_decay)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                        nesterov=nesterov, maximize=maximize, foreach=foreach, differentiable=differentiable,
                        fused=fused)
        super().__init__(params, defaults)
        check_fused(fused, foreach, differentiable)

    def _step_group(self, group: dict) -> None:
        # parameters have state (a momentum buffer) only with momentum, and no step count
        params, grads, states = self._with_grads(group, _no_state if group["momentum"] != 0 else None)
        if group["weight_decay"] != 0 and any(g.is_sparse for g in grads):  # torch's grad.add(param) refuses
            raise RuntimeError("add(sparse, dense) is not supported. Use add(dense, sparse) instead.")
        buffers = [s.get("momentum_buffer") for s in states]
        # one multi-tensor instruction, once the buffers exist (the first step creates them)
        self._run(group, (params, grads, buffers), all(b is not None for b in buffers))
        for state, buf in zip(states, buffers):
            state["momentum_buffer"] = buf

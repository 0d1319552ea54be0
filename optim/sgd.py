"""Stochastic gradient descent, with momentum, dampening, Nesterov momentum and weight decay."""
from __future__ import annotations

from ..tensor import Tensor
from .foreach import foreach
from .optimizer import Optimizer, check

__all__ = ["SGD", "sgd"]


class SGD(Optimizer):
    """Stochastic gradient descent (optionally with momentum), as torch.optim.SGD."""

    def __init__(self, params, lr: float = 1e-3, momentum: float = 0, dampening: float = 0,
                 weight_decay: float = 0, nesterov: bool = False, *, maximize: bool = False,
                 foreach: bool | None = None, differentiable: bool = False, fused: bool | None = None) -> None:
        check(lr >= 0.0, "learning rate", lr)
        check(momentum >= 0.0, "momentum value", momentum)
        check(weight_decay >= 0.0, "weight_decay value", weight_decay)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                        nesterov=nesterov, maximize=maximize, foreach=foreach, differentiable=differentiable,
                        fused=fused)
        super().__init__(params, defaults)

    def step(self, closure=None):
        """Perform one optimization step; `closure` re-evaluates the loss and returns it."""
        loss = self._evaluate(closure)
        for group in self.param_groups:
            use_momentum = group["momentum"] != 0
            params, grads, states = self._with_grads(group, (lambda p, g: {}) if use_momentum else None)
            buffers = [s.get("momentum_buffer") for s in states]
            # one multi-tensor instruction, once the buffers exist (the first step creates them)
            foreach(sgd, (params, grads, buffers), written=(0, 2) if use_momentum else (0,),
                    enabled=not (use_momentum and any(b is None for b in buffers)), lr=group["lr"],
                    weight_decay=group["weight_decay"], momentum=group["momentum"],
                    dampening=group["dampening"], nesterov=group["nesterov"], maximize=group["maximize"])
            for state, buf in zip(states, buffers):
                state["momentum_buffer"] = buf
        return loss


def sgd(params: list[Tensor], grads: list[Tensor], momentum_buffers: list[Tensor | None], *, lr: float,
        weight_decay: float, momentum: float, dampening: float, nesterov: bool, maximize: bool) -> None:
    """The SGD update of every parameter, in place; None momentum buffers are created (in the list)."""
    for i, (param, grad) in enumerate(zip(params, grads)):
        if maximize:
            grad = -grad
        if weight_decay != 0:
            grad = grad.add(param, alpha=weight_decay)
        if momentum != 0:
            buf = momentum_buffers[i]
            if buf is None:
                buf = momentum_buffers[i] = grad.detach().clone()
            else:
                buf.mul_(momentum).add_(grad, alpha=1 - dampening)
            grad = grad.add(buf, alpha=momentum) if nesterov else buf
        param.add_(grad, alpha=-lr)

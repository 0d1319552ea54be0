"""RMSprop: gradients scaled by a running root mean square, optionally centered and with momentum."""
from __future__ import annotations

from ..ops.factories import creation
from ..tensor import Tensor
from .optimizer import Optimizer, check, descent_grad
from .hyperparams import check_lr

__all__ = ["RMSprop", "rmsprop"]


def rmsprop(params: list[Tensor], grads: list[Tensor], square_avgs: list[Tensor], grad_avgs: list[Tensor | None],
            momentum_buffers: list[Tensor | None], *, lr: float, alpha: float, eps: float, weight_decay: float,
            momentum: float, centered: bool, maximize: bool) -> None:
    """The RMSprop update of every parameter, in place."""
    for i, param in enumerate(params):
        grad = descent_grad(param, grads[i], maximize, weight_decay)
        square_avg = square_avgs[i]
        square_avg.mul_(alpha).addcmul_(grad, grad, value=1 - alpha)
        if centered:
            grad_avg = grad_avgs[i].lerp_(grad, 1 - alpha)
            avg = square_avg.addcmul(grad_avg, grad_avg, value=-1).sqrt_()
        else:
            avg = square_avg.sqrt()
        avg = avg.add_(eps)
        if momentum > 0:
            buf = momentum_buffers[i].mul_(momentum).addcdiv_(grad, avg)
            param.add_(buf, alpha=-lr)
        else:
            param.addcdiv_(grad, avg, value=-lr)


class RMSprop(Optimizer):
    """RMSprop, as torch.optim.RMSprop."""

    _update = staticmethod(rmsprop)
    _state_keys = ("square_avg", "grad_avg", "momentum_buffer")
    _step_tensors = True
    _group_flags = (("momentum", 0), ("centered", False), ("foreach", None), ("maximize", False),
                    ("differentiable", False), ("capturable", False))

    def __init__(self, params, lr: float = 1e-2, alpha: float = 0.99, eps: float = 1e-8, weight_decay: float = 0,
                 momentum: float = 0, centered: bool = False, capturable: bool = False,
                 foreach: bool | None = None, maximize: bool = False, differentiable: bool = False) -> None:
        check_lr(lr)
        check(0.0 <= eps, "epsilon value", eps)
        check(0.0 <= momentum, "momentum value", momentum)
        check(0.0 <= weight_decay, "weight_decay value", weight_decay)
        check(0.0 <= alpha, "alpha value", alpha)
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered,
                        weight_decay=weight_decay, capturable=capturable, foreach=foreach, maximize=maximize,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    @staticmethod
    def _init_state(p: Tensor, group: dict) -> dict:
        state = {"step": 0.0, "square_avg": creation.zeros_like(p)}
        if group["momentum"] > 0:
            state["momentum_buffer"] = creation.zeros_like(p)
        if group["centered"]:
            state["grad_avg"] = creation.zeros_like(p)
        return state

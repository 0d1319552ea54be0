"""Rprop: resilient backpropagation (per-element step sizes driven by the signs of the gradients)."""
from __future__ import annotations

from ..ops.factories import creation
from ..tensor import Tensor
from .hyperparams import STEP_FLAGS, check_lr
from .optimizer import Optimizer, descent_grad

__all__ = ["Rprop", "rprop"]


def rprop(params: list[Tensor], grads: list[Tensor], prevs: list[Tensor], step_sizes: list[Tensor], *,
          step_size_min: float, step_size_max: float, etaminus: float, etaplus: float, maximize: bool) -> None:
    """The Rprop update of every parameter, its step sizes and its previous gradient, in place."""
    for i, param in enumerate(params):
        grad = descent_grad(param, grads[i], maximize)
        prev, step_size = prevs[i], step_sizes[i]
        # the sign of grad * prev chooses each element's factor: etaplus (same sign), etaminus (flipped), 1 (zero)
        factor = (grad * prev).sign()
        factor.masked_fill_(factor.gt(0), etaplus).masked_fill_(factor.lt(0), etaminus)
        factor.masked_fill_(factor.eq(0), 1)
        step_size.mul_(factor).clamp_(step_size_min, step_size_max)
        grad = grad.masked_fill(factor.eq(etaminus), 0)  # after a sign flip: no step, and no flip next time
        param.addcmul_(grad.sign(), step_size, value=-1)
        prev.copy_(grad)


class Rprop(Optimizer):
    """Rprop, as torch.optim.Rprop."""

    _update = staticmethod(rprop)
    _state_keys = ("prev", "step_size")
    _step_tensors = True
    _pairs = {"etas": ("etaminus", "etaplus"), "step_sizes": ("step_size_min", "step_size_max")}
    _group_flags = STEP_FLAGS
    _host_state = ("step",)

    def __init__(self, params, lr: float = 1e-2, etas: tuple[float, float] = (0.5, 1.2),
                 step_sizes: tuple[float, float] = (1e-6, 50), *, capturable: bool = False,
                 foreach: bool | None = None, maximize: bool = False, differentiable: bool = False) -> None:
        check_lr(lr)
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        defaults = dict(lr=lr, etas=etas, step_sizes=step_sizes, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    @staticmethod
    def _init_state(p: Tensor, group: dict) -> dict:
        # a complex parameter's parts are two real ones: the imaginary part's step size starts at lr too (PyTorch's)
        lr = complex(group["lr"], group["lr"]) if p.dtype.is_complex else group["lr"]
        return {"step": 0.0, "prev": creation.zeros_like(p), "step_size": creation.full_like(p.grad, lr)}

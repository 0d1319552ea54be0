"""Adafactor: Adam-like steps with a factored (row and column) second moment and relative step sizes."""
from __future__ import annotations

from ..ops.factories import creation
from ..tensor import Tensor
from .optimizer import Optimizer, descent_grad
from .scalar_state import finfo_eps

__all__ = ["Adafactor", "adafactor"]


def adafactor(params: list[Tensor], grads: list[Tensor], row_vars: list[Tensor | None],
              col_vars: list[Tensor | None], variances: list[Tensor | None], steps: list[float],
              eps1s: list[float], *, d: float, lr: float, beta2_decay: float, weight_decay: float, eps2: float,
              maximize: bool) -> None:
    """The Adafactor update of every parameter, in place; `steps` are the counts including this step.

    The relative step size and the update clipping stay 0-d tensors, so the step never waits for the device."""
    for i, param in enumerate(params):
        grad = descent_grad(param, grads[i], maximize)
        step, eps1 = steps[i], eps1s[i]
        one_minus_beta2_t = step ** beta2_decay
        rho_t = min(lr, 1 / (step ** 0.5))
        alpha = param.norm(2).div_(param.numel() ** 0.5).clamp_(min=eps2).mul_(rho_t)
        if weight_decay != 0:
            param.mul_(1 - lr * weight_decay)
        if grad.dim() > 1:
            row_var, col_var = row_vars[i], col_vars[i]
            # the mean of grad**2 along the last (then the next-to-last) dim, without materializing grad**2
            row_var.lerp_(grad.norm(2, dim=-1, keepdim=True).square_().div_(grad.size(-1)), one_minus_beta2_t)
            col_var.lerp_(grad.norm(2, dim=-2, keepdim=True).square_().div_(grad.size(-2)), one_minus_beta2_t)
            var_estimate = row_var @ col_var
            var_estimate.div_(row_var.mean(dim=-2, keepdim=True).clamp_(min=eps1))
        else:
            var_estimate = variances[i].lerp_(grad * grad, one_minus_beta2_t).clone()
        update = var_estimate.clamp_(min=eps1 * eps1).rsqrt_().mul_(grad)
        denom = update.norm(2).div_((update.numel() ** 0.5) * d).clamp_(min=1.0)
        param.sub_(update.mul_(alpha.div_(denom)))


class Adafactor(Optimizer):
    """Adafactor, as torch.optim.Adafactor: matrices (and stacks of them) keep row and column variances,
    other parameters a full one."""

    _update = staticmethod(adafactor)
    _refuses_complex = True
    _state_keys = ("row_var", "col_var", "variance", "step")
    _step_tensors = True
    _pairs = {"eps": ("eps1", "eps2")}  # eps2 by keyword; eps1 (per dtype when None) as a list, see _apply
    _group_flags = (("foreach", None),)
    _host_state = ("step",)

    def __init__(self, params, lr: float = 1e-2, beta2_decay: float = -0.8,
                 eps: tuple[float | None, float] = (None, 1e-3), d: float = 1.0, weight_decay: float = 0.0, *,
                 foreach: bool | None = None, maximize: bool = False) -> None:
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 >= beta2_decay:
            raise ValueError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
        if eps[0] is not None and not 0.0 <= eps[0]:
            raise ValueError(f"epsilon1 should be >= 0 but is: {eps[0]}")
        if not 0.0 <= eps[1]:
            raise ValueError(f"epsilon2 should be >= 0 but is: {eps[1]}")
        if not 1.0 <= d:
            raise ValueError(f"Clipping threshold d should be >= 1 but is: {d}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight_decay should be >= 0 but is: {weight_decay}")
        defaults = dict(lr=lr, beta2_decay=beta2_decay, eps=eps, d=d, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize)
        super().__init__(params, defaults)

    @staticmethod
    def _init_state(p: Tensor, group: dict) -> dict:
        grad = p.grad
        if grad.dim() > 1:  # factored: row variances (last dim reduced) and column variances (next-to-last)
            return {"step": 0.0, "row_var": creation.zeros(*grad.shape[:-1], 1, dtype=grad.dtype, device=grad.device),
                    "col_var": creation.zeros(*grad.shape[:-2], 1, grad.shape[-1], dtype=grad.dtype,
                                              device=grad.device)}
        return {"step": 0.0, "variance": creation.zeros_like(grad)}

    def _apply(self, group: dict, params: list, grads: list, states: list, *extra: list) -> None:
        eps1 = group["eps"][0]
        # one instruction for the factored parameters, one for the rest (their state differs)
        for factored in (True, False):
            chosen = [i for i, g in enumerate(grads) if (g.dim() > 1) == factored]
            if chosen:
                ps = [params[i] for i in chosen]
                super()._apply(group, ps, [grads[i] for i in chosen], [states[i] for i in chosen],
                               [finfo_eps(p.dtype) if eps1 is None else eps1 for p in ps])

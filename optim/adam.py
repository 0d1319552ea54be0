"""Adam and AdamW: moment estimates with bias correction, optional AMSGrad and weight decay."""
from __future__ import annotations

from ..ops.elementwise import arithmetic as M
from ..ops.factories import creation
from ..tensor import Tensor
from ..vm import intra_op
from .foreach import compiled_loops, contiguous, one_pass
from .hyperparams import check_adam_hyperparameters, check_fused
from .optimizer import Optimizer, descent_grad

__all__ = ["Adam", "AdamW", "adam", "adam_moments"]


def adam(params: list[Tensor], grads: list[Tensor], exp_avgs: list[Tensor], exp_avg_sqs: list[Tensor],
         max_exp_avg_sqs: list[Tensor | None], steps: list[float], *, amsgrad: bool, beta1: float, beta2: float,
         lr: float, weight_decay: float, eps: float, maximize: bool, decoupled_weight_decay: bool) -> None:
    """The Adam update of every parameter, in place; `steps` are the counts including this step.

    Bias corrections are Python floats computed from the counts, so the step never waits for the device."""
    for i, param in enumerate(params):
        exp_avg, exp_avg_sq, step = exp_avgs[i], exp_avg_sqs[i], steps[i]
        adam_moments(param, grads[i], exp_avg, exp_avg_sq, beta1=beta1, beta2=beta2, lr=lr,
                     weight_decay=weight_decay, decoupled_weight_decay=decoupled_weight_decay, maximize=maximize)
        step_size = lr / (1 - beta1 ** step)
        bias_correction2_sqrt = (1 - beta2 ** step) ** 0.5
        second_moment = exp_avg_sq
        if amsgrad:
            second_moment = M.maximum(max_exp_avg_sqs[i], exp_avg_sq, out=max_exp_avg_sqs[i])
        denom = (second_moment.sqrt() / bias_correction2_sqrt).add_(eps)
        param.addcdiv_(exp_avg, denom, value=-step_size)


def adam_moments(param: Tensor, grad: Tensor, exp_avg: Tensor, exp_avg_sq: Tensor, *, beta1: float, beta2: float,
                 lr: float, weight_decay: float, decoupled_weight_decay: bool, maximize: bool) -> Tensor:
    """Adam's gradient (negated to maximize; weight decay decoupled: on the parameter, else into the gradient)
    and its two moment updates, in place, as Adam, NAdam and RAdam share them; returns that gradient."""
    grad = descent_grad(param, grad, maximize, 0 if decoupled_weight_decay else weight_decay)
    if decoupled_weight_decay and weight_decay != 0:
        param.mul_(1 - lr * weight_decay)
    exp_avg.lerp_(grad, 1 - beta1)
    exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
    return grad


def _adam_one_pass(lists: list, kwargs: dict) -> bool:
    """`adam` as one compiled pass over each parameter (optim/foreach_kernels.py), the same bits: without amsgrad,
    maximize or L2 weight decay, for number hyperparameters; whether it ran."""
    params, grads, exp_avgs, exp_avg_sqs, _, steps = lists
    beta1, beta2, lr, weight_decay, eps = (kwargs[k] for k in ("beta1", "beta2", "lr", "weight_decay", "eps"))
    decoupled = kwargs["decoupled_weight_decay"]
    if (kwargs["amsgrad"] or kwargs["maximize"] or weight_decay != 0 and not decoupled
            or not all(isinstance(x, (int, float)) for x in (beta1, beta2, lr, weight_decay, eps))):
        return False
    loops = compiled_loops()
    if loops is None or not contiguous(params, grads, exp_avgs, exp_avg_sqs):
        return False
    for p, g, m, v, step in zip(params, grads, exp_avgs, exp_avg_sqs, steps):
        t = p.dtype.type  # every scalar as the update's ops cast it (adam_moments, then adam's own lines)
        w = t(1 - beta1)
        run = intra_op.pick(p.size, loops.adam, loops.adam_parallel)
        run(p.reshape(-1), g.reshape(-1), m.reshape(-1), v.reshape(-1), t(1 - lr * weight_decay),
            decoupled and weight_decay != 0, w, bool(abs(w) < 0.5), t(1), t(beta2), t(1 - beta2),
            t((1 - beta2 ** step) ** 0.5), t(eps), t(-(lr / (1 - beta1 ** step))))
    return True


one_pass(adam, _adam_one_pass)


class Adam(Optimizer):
    """Adam (with `decoupled_weight_decay`, AdamW), as torch.optim.Adam."""

    _update = staticmethod(adam)
    _state_keys = ("exp_avg", "exp_avg_sq", "max_exp_avg_sq", "step")
    _step_tensors = True
    _pairs = {"betas": ("beta1", "beta2")}
    _sparse_refusal = "Adam does not support sparse gradients, please consider SparseAdam instead"  # AdamW's too
    _group_flags = (("amsgrad", False), ("maximize", False), ("foreach", None), ("capturable", False),
                    ("differentiable", False), ("decoupled_weight_decay", False), ("fused", None))

    def __init__(self, params, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, amsgrad: bool = False, *, foreach: bool | None = None,
                 maximize: bool = False, capturable: bool = False, differentiable: bool = False,
                 fused: bool | None = None, decoupled_weight_decay: bool = False) -> None:
        if isinstance(lr, Tensor) and foreach and not capturable:  # torch's first check
            raise ValueError("lr as a Tensor is not supported for capturable=False and foreach=True")
        check_adam_hyperparameters(lr, eps, betas, weight_decay)
        if not (all(isinstance(b, float) for b in betas[:2]) or all(isinstance(b, Tensor) for b in betas[:2])):
            raise ValueError("betas must be either both floats or both Tensors")  # (ints too, as torch's Adam)
        for k, beta in enumerate(betas[:2]):
            if isinstance(beta, Tensor):
                if not capturable and foreach:
                    raise ValueError(f"betas[{k}] as a Tensor is not supported for capturable=False and foreach=True")
                if beta.numel() != 1:
                    raise ValueError(f"Tensor betas[{k}] must be 1-element")
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                        maximize=maximize, foreach=foreach, capturable=capturable, differentiable=differentiable,
                        fused=fused, decoupled_weight_decay=decoupled_weight_decay)
        super().__init__(params, defaults)
        check_fused(fused, foreach, differentiable)

    @staticmethod
    def _init_state(p: Tensor, group: dict) -> dict:
        state = {"step": 0.0, "exp_avg": creation.zeros_like(p), "exp_avg_sq": creation.zeros_like(p)}
        if group["amsgrad"]:
            state["max_exp_avg_sq"] = creation.zeros_like(p)
        return state

    def _multi_tensor(self, group: dict) -> bool:
        return not group["amsgrad"]  # AMSGrad's running maximum runs per parameter


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

"""Hyperparameter checks and parameter-group flags shared by several optimizers."""
from __future__ import annotations

from ..tensor import Tensor
from .optimizer import check

__all__ = ["check_adam_hyperparameters", "check_lr", "STEP_FLAGS"]

# the flags most optimizers gained after their first release, with the values older pickles mean
STEP_FLAGS = (("foreach", None), ("maximize", False), ("differentiable", False), ("capturable", False))


def check_lr(lr, positive: bool = False) -> None:
    """PyTorch's checks of a learning rate: a tensor one must hold one element, the value must not be negative
    (with `positive`, must be above 0)."""
    if isinstance(lr, Tensor) and lr.numel() != 1:
        raise ValueError("Tensor lr must be 1-element")
    check(0.0 < lr if positive else 0.0 <= lr, "learning rate", lr)


def check_adam_hyperparameters(lr: float, eps: float, betas: tuple[float, float], weight_decay: float) -> None:
    """PyTorch's ValueErrors for the hyperparameters of Adam and its variants (Adamax, NAdam, RAdam)."""
    check_lr(lr)
    check(0.0 <= eps, "epsilon value", eps)
    check(0.0 <= betas[0] < 1.0, "beta parameter at index 0", betas[0])
    check(0.0 <= betas[1] < 1.0, "beta parameter at index 1", betas[1])
    check(0.0 <= weight_decay, "weight_decay value", weight_decay)


def check_fused(fused: bool | None, foreach: bool | None, differentiable: bool) -> None:
    """PyTorch's refusals of fused=True with differentiable=True, then with foreach=True (checked after the
    parameter groups are built, as torch's constructors do)."""
    if fused:
        if differentiable:
            raise RuntimeError("`fused` does not support `differentiable`")
        if foreach:
            raise RuntimeError("`fused` and `foreach` cannot be `True` together.")

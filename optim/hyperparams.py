"""Hyperparameter checks and parameter-group flags shared by several optimizers."""
from __future__ import annotations

from .optimizer import check

__all__ = ["check_adam_hyperparameters", "STEP_FLAGS"]

# the flags most optimizers gained after their first release, with the values older pickles mean
STEP_FLAGS = (("foreach", None), ("maximize", False), ("differentiable", False), ("capturable", False))


def check_adam_hyperparameters(lr: float, eps: float, betas: tuple[float, float], weight_decay: float) -> None:
    """PyTorch's ValueErrors for the hyperparameters of Adam and its variants (Adamax, NAdam, RAdam)."""
    check(0.0 <= lr, "learning rate", lr)
    check(0.0 <= eps, "epsilon value", eps)
    check(0.0 <= betas[0] < 1.0, "beta parameter at index 0", betas[0])
    check(0.0 <= betas[1] < 1.0, "beta parameter at index 1", betas[1])
    check(0.0 <= weight_decay, "weight_decay value", weight_decay)


"""Optimizers and learning-rate schedulers with PyTorch's API (`tidal.optim`)."""
from __future__ import annotations

from . import lr_scheduler
from .adadelta import Adadelta
from .adagrad import Adagrad
from .adam import Adam, AdamW
from .lbfgs import LBFGS
from .optimizer import Optimizer, register_optimizer_step_post_hook, register_optimizer_step_pre_hook
from .rmsprop import RMSprop
from .sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "LBFGS", "lr_scheduler",
           "register_optimizer_step_pre_hook", "register_optimizer_step_post_hook"]

"""Optimizers and learning-rate schedulers with PyTorch's API (`tidal.optim`)."""
from __future__ import annotations

from . import lr_scheduler
from .adadelta import Adadelta
from .adafactor import Adafactor
from .adagrad import Adagrad
from .adam import Adam, AdamW
from .adamax import Adamax
from .asgd import ASGD
from .lbfgs import LBFGS
from .muon import Muon
from .nadam import NAdam
from .optimizer import Optimizer, register_optimizer_step_post_hook, register_optimizer_step_pre_hook
from .radam import RAdam
from .rmsprop import RMSprop
from .rprop import Rprop
from .sgd import SGD
from .sparse_adam import SparseAdam
from .stateless import swap_in_optimizer_params_and_state

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "LBFGS", "lr_scheduler",
           "register_optimizer_step_pre_hook", "register_optimizer_step_post_hook",
           "NAdam", "RAdam", "Adamax", "ASGD", "Rprop", "Adafactor", "SparseAdam", "Muon", "swa_utils",
           "swap_in_optimizer_params_and_state"]


def __getattr__(name: str):
    # swa_utils needs nn; it loads on first use, as `import tidal` loads the library lazily
    if name == "swa_utils":
        import importlib
        return importlib.import_module(".swa_utils", __name__)  # swa_utils (it needs nn) on first use
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

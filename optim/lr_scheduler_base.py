"""The scheduler base class, LRScheduler, and the helpers every schedule shares (lr_scheduler.py and
cyclic_lr.py build on it)."""
from __future__ import annotations

import contextlib
import functools
import warnings
import weakref
from typing import Any

from ..tensor import Tensor
from .optimizer import Optimizer

EPOCH_DEPRECATION_WARNING = (
    "The epoch parameter in `scheduler.step()` was not necessary and is being deprecated where possible. "
    "Please use `scheduler.step()` to step the scheduler. During the deprecation, if epoch is different from "
    "None, the closed form is used instead of the new chainable form, where available. Please open an issue "
    "if you are unable to replicate your use case: https://github.com/pytorch/pytorch/issues/new/choose.")


def _group_values(optimizer: Optimizer, key: str) -> list:
    # (a tensor value is cloned: the group's own tensor is updated in place later)
    return [group[key].clone() if isinstance(group[key], Tensor) else group[key] for group in optimizer.param_groups]


def _set_group_value(group: dict, key: str, value) -> None:
    """Set `group[key]`, as torch does: a tensor already there (a tensor lr) is filled in place, not replaced."""
    if isinstance(group[key], Tensor):
        group[key].fill_(value)
    else:
        group[key] = value


def _per_group(name: str, optimizer: Optimizer, value) -> list:
    """`value` repeated for every parameter group, or checked to have one entry per group."""
    if isinstance(value, (list, tuple)):
        if len(value) != len(optimizer.param_groups):
            raise ValueError(f"{name} must have the same length as optimizer.param_groups. {name} has "
                             f"{len(value)} values, param_groups has {len(optimizer.param_groups)}.")
        return list(value)
    return [value] * len(optimizer.param_groups)


_PACKAGE = __name__.split(".")[0]
_GET_LR_OUTSIDE_STEP = "To get the last learning rate computed by the scheduler, please use `get_last_lr()`."


def _warns_outside_step(get_lr):
    """torch's own `get_lr` methods warn when a program calls them instead of `get_last_lr()`."""
    @functools.wraps(get_lr)
    def checked(self) -> list:
        if not self.__dict__.get("_get_lr_called_within_step", False):
            warnings.warn(_GET_LR_OUTSIDE_STEP, UserWarning, stacklevel=2)
        return get_lr(self)
    return checked


_STEP_OVERRIDDEN = (
    "Seems like `optimizer.step()` has been overridden after learning rate scheduler initialization. Please, make "
    "sure to call `optimizer.step()` before `lr_scheduler.step()`. See more details at "
    "https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate")
_STEP_ORDER = (
    "Detected call of `lr_scheduler.step()` before `optimizer.step()`. In PyTorch 1.1.0 and later, you should call "
    "them in the opposite order: `optimizer.step()` before `lr_scheduler.step()`.  Failure to do this will result in "
    "PyTorch skipping the first value of the learning rate schedule. See more details at "
    "https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate")


def _track_step_called(optimizer: Optimizer) -> None:
    """torch's patch of `optimizer.step` (on the instance, once) recording that it ran, so that a scheduler's first
    step can warn when the program stepped the scheduler first."""
    if hasattr(optimizer.step, "_wrapped_by_lr_sched"):
        return
    opt_ref = weakref.ref(optimizer)  # (no reference cycle through the instance attribute)
    func = optimizer.step.__func__

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        opt = opt_ref()
        opt._opt_called = True
        return func.__get__(opt, opt.__class__)(*args, **kwargs)

    wrapper._wrapped_by_lr_sched = True
    optimizer.step = wrapper


@contextlib.contextmanager
def within_step(scheduler):
    """Mark `get_lr` calls as the scheduler's own (torch's `_enable_get_lr_call`; saved in the state dict)."""
    scheduler._get_lr_called_within_step = True
    try:
        yield
    finally:
        scheduler._get_lr_called_within_step = False


_enable_get_lr_call = within_step  # (torch's name: user schedulers copied from torch's code use it)


def _warn_get_lr_called_within_step(scheduler) -> None:
    """torch's warning when `get_lr` is called from outside the scheduler's own step."""
    if not getattr(scheduler, "_get_lr_called_within_step", False):
        warnings.warn(_GET_LR_OUTSIDE_STEP, UserWarning, stacklevel=2)


class LRScheduler:
    """Base class: subclasses implement `get_lr` (and `_get_closed_form_lr` where one exists)."""

    _is_initial: bool = False

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        get_lr = cls.__dict__.get("get_lr")
        if get_lr is not None and cls.__module__.split(".")[0] == _PACKAGE:  # a program's own scheduler: silent
            cls.get_lr = _warns_outside_step(get_lr)

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", group["lr"])
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(
                        f"param 'initial_lr' is not specified in param_groups[{i}] when resuming scheduler with "
                        "last_epoch >= 0.\nThis typically happens when:\n1. You're trying to resume training from "
                        "a checkpoint but haven't properly loaded the optimizer state\n2. You're using last_epoch "
                        ">= 0 for a fresh training run (not recommended)")
        self.base_lrs: list = _group_values(optimizer, "initial_lr")
        self.last_epoch = last_epoch
        _track_step_called(optimizer)
        self._initial_step()

    def _initial_step(self) -> None:
        """Reset the step count and take the initial step (which sets `last_epoch` to 0)."""
        self._step_count = 0
        self._is_initial = True
        try:
            self.step()
        finally:
            self._is_initial = False

    def state_dict(self) -> dict[str, Any]:
        """Every attribute except the optimizer."""
        return {key: value for key, value in self.__dict__.items() if key != "optimizer"}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore the attributes saved by `state_dict`."""
        self.__dict__.update(state_dict)

    def get_last_lr(self) -> list:
        """The learning rates set by the last step, one per parameter group."""
        return self._last_lr

    def get_lr(self) -> list:
        """The next learning rates (called by `step`)."""
        raise NotImplementedError

    def step(self, epoch: int | None = None) -> None:
        """Advance one epoch (or, deprecated, jump to `epoch`) and set the new learning rates."""
        if self._step_count == 1:
            if not hasattr(self.optimizer.step, "_wrapped_by_lr_sched"):
                warnings.warn(_STEP_OVERRIDDEN, UserWarning, stacklevel=2)
            elif not getattr(self.optimizer, "_opt_called", False):
                warnings.warn(_STEP_ORDER, UserWarning, stacklevel=2)
        self._step_count += 1
        if epoch is not None:
            warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=2)
        self._update_lr(epoch)

    def _update_lr(self, epoch: int | None = None) -> None:
        with within_step(self):
            if epoch is None:
                self.last_epoch += 1
                values = self.get_lr()
            else:
                self.last_epoch = epoch
                closed_form = getattr(self, "_get_closed_form_lr", None)
                values = closed_form() if closed_form is not None else self.get_lr()
        for group, lr in zip(self.optimizer.param_groups, values):
            _set_group_value(group, "lr", lr)
        self._last_lr = _group_values(self.optimizer, "lr")

    def _current(self) -> list:
        return _group_values(self.optimizer, "lr")

    def _scaled(self, factor: float) -> list:
        return [group["lr"] * factor for group in self.optimizer.param_groups]


_LRScheduler = LRScheduler  # the old name

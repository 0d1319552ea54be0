"""Learning-rate schedulers with PyTorch's step semantics.

A scheduler writes `group["lr"]` of its optimizer's parameter groups. Construction performs
the initial step (`last_epoch` becomes 0); each `step()` advances `last_epoch` by one and sets
the new rates. Most schedules are chainable: `get_lr` derives the next rate from the current
one, exactly as PyTorch does, so several schedulers can drive one optimizer and the values
match PyTorch's to the last bit. `step(epoch)` (deprecated) jumps with the closed form.
"""
from __future__ import annotations

import math
import types
import warnings
from bisect import bisect_right
from collections import Counter
from typing import Any, Iterable, Sequence

from .cyclic_lr import CosineAnnealingWarmRestarts, CyclicLR, OneCycleLR  # noqa: F401 - torch's lr_scheduler holds them
from .lr_scheduler_base import (EPOCH_DEPRECATION_WARNING, LRScheduler, _LRScheduler, _enable_get_lr_call,  # noqa: F401 - torch's
                                _group_values, _set_group_value, _warn_get_lr_called_within_step)
from .optimizer import Optimizer

__all__ = ["LRScheduler", "LambdaLR", "MultiplicativeLR", "StepLR", "MultiStepLR", "ConstantLR", "LinearLR",
           "ExponentialLR", "PolynomialLR", "CosineAnnealingLR", "SequentialLR", "ChainedScheduler",
           "ReduceLROnPlateau", "OneCycleLR", "CyclicLR", "CosineAnnealingWarmRestarts"]


class _LambdaScheduler(LRScheduler):
    """Shared by LambdaLR and MultiplicativeLR: one function of the epoch per parameter group."""

    def __init__(self, optimizer: Optimizer, lr_lambda, last_epoch: int = -1) -> None:
        self.optimizer = optimizer
        if isinstance(lr_lambda, (list, tuple)):
            if len(lr_lambda) != len(optimizer.param_groups):
                raise ValueError(f"Expected {len(optimizer.param_groups)} lr_lambdas, but got {len(lr_lambda)}")
            self.lr_lambdas = list(lr_lambda)
        else:
            self.lr_lambdas = [lr_lambda] * len(optimizer.param_groups)
        super().__init__(optimizer, last_epoch)

    def state_dict(self) -> dict[str, Any]:
        """The attributes; for each lambda, its __dict__ when it is a callable object (None for functions)."""
        state = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "lr_lambdas")}
        state["lr_lambdas"] = [None if isinstance(fn, types.FunctionType) else fn.__dict__.copy()
                               for fn in self.lr_lambdas]
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore the attributes and the callable objects' __dict__."""
        state_dict = dict(state_dict)
        saved = state_dict.pop("lr_lambdas")
        self.__dict__.update(state_dict)
        for fn, attrs in zip(self.lr_lambdas, saved):
            if attrs is not None:
                fn.__dict__.update(attrs)


class LambdaLR(_LambdaScheduler):
    """lr = initial lr * lr_lambda(epoch)."""

    def get_lr(self) -> list:
        """Each group's initial lr times its lambda of the epoch."""
        return [base * fn(self.last_epoch) for fn, base in zip(self.lr_lambdas, self.base_lrs)]


class MultiplicativeLR(_LambdaScheduler):
    """lr = previous lr * lr_lambda(epoch), from the first step on."""

    def __init__(self, optimizer: Optimizer, lr_lambda, last_epoch: int = -1) -> None:
        for fn in lr_lambda if isinstance(lr_lambda, (list, tuple)) else [lr_lambda]:
            if not callable(fn):
                raise TypeError(f"lr_lambda should be a function, but got {type(fn).__name__}")
        super().__init__(optimizer, lr_lambda, last_epoch)

    def get_lr(self) -> list:
        """Each group's current lr times its lambda of the epoch."""
        if self._is_initial:
            return self._current()
        return [group["lr"] * fn(self.last_epoch) for fn, group in zip(self.lr_lambdas, self.optimizer.param_groups)]


class StepLR(LRScheduler):
    """Multiply the lr by `gamma` every `step_size` epochs."""

    def __init__(self, optimizer: Optimizer, step_size: int, gamma: float = 0.1, last_epoch: int = -1) -> None:
        self.step_size = step_size
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        """Decay at multiples of step_size."""
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return self._current()
        return self._scaled(self.gamma)

    def _get_closed_form_lr(self) -> list:
        return [base * self.gamma ** (self.last_epoch // self.step_size) for base in self.base_lrs]


class MultiStepLR(LRScheduler):
    """Multiply the lr by `gamma` at each milestone (twice for a milestone listed twice)."""

    def __init__(self, optimizer: Optimizer, milestones: Iterable[int], gamma: float = 0.1,
                 last_epoch: int = -1) -> None:
        self.milestones = Counter(milestones)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        """Decay at the milestones."""
        if self.last_epoch not in self.milestones:
            return self._current()
        return self._scaled(self.gamma ** self.milestones[self.last_epoch])

    def _get_closed_form_lr(self) -> list:
        milestones = sorted(self.milestones.elements())
        return [base * self.gamma ** bisect_right(milestones, self.last_epoch) for base in self.base_lrs]


class ConstantLR(LRScheduler):
    """Multiply the lr by `factor` until epoch `total_iters`."""

    def __init__(self, optimizer: Optimizer, factor: float = 1.0 / 3, total_iters: int = 5,
                 last_epoch: int = -1) -> None:
        if factor > 1.0 or factor < 0:
            raise ValueError("Constant multiplicative factor expected to be between 0 and 1.")
        self.factor = factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        """Scale down at epoch 0, back up at total_iters."""
        if self.last_epoch == 0:
            return self._scaled(self.factor)
        if self.last_epoch != self.total_iters:
            return self._current()
        return self._scaled(1.0 / self.factor)

    def _get_closed_form_lr(self) -> list:
        return [base * (self.factor + (self.last_epoch >= self.total_iters) * (1 - self.factor))
                for base in self.base_lrs]


class LinearLR(LRScheduler):
    """Change the lr factor linearly from `start_factor` to `end_factor` over `total_iters` epochs."""

    def __init__(self, optimizer: Optimizer, start_factor: float = 1.0 / 3, end_factor: float = 1.0,
                 total_iters: int = 5, last_epoch: int = -1) -> None:
        if start_factor > 1.0 or start_factor <= 0:
            raise ValueError("Starting multiplicative factor expected to be greater than 0 and less or equal to 1.")
        if end_factor > 1.0 or end_factor < 0:
            raise ValueError("Ending multiplicative factor expected to be between 0 and 1.")
        self.start_factor = start_factor
        self.end_factor = end_factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        """The ratio of consecutive factors times the current lr."""
        if self.last_epoch == 0:
            return self._scaled(self.start_factor)
        if self._is_initial or self.last_epoch > self.total_iters:
            return self._current()
        span = self.end_factor - self.start_factor
        return self._scaled(1.0 + span / (self.total_iters * self.start_factor + (self.last_epoch - 1) * span))

    def _get_closed_form_lr(self) -> list:
        span = self.end_factor - self.start_factor
        return [base * (self.start_factor + span * min(self.total_iters, self.last_epoch) / self.total_iters)
                for base in self.base_lrs]


class ExponentialLR(LRScheduler):
    """Multiply the lr by `gamma` every epoch."""

    def __init__(self, optimizer: Optimizer, gamma: float, last_epoch: int = -1) -> None:
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        """gamma times the current lr."""
        return self._current() if self._is_initial else self._scaled(self.gamma)

    def _get_closed_form_lr(self) -> list:
        return [base * self.gamma ** self.last_epoch for base in self.base_lrs]


class PolynomialLR(LRScheduler):
    """Decay the lr by a polynomial of `power` to zero at `total_iters`."""

    def __init__(self, optimizer: Optimizer, total_iters: int = 5, power: float = 1.0, last_epoch: int = -1) -> None:
        self.total_iters = total_iters
        self.power = power
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        """The ratio of consecutive decay factors times the current lr."""
        if self._is_initial or self.last_epoch > self.total_iters:
            return self._current()
        n, e = self.total_iters, self.last_epoch
        return self._scaled(((1.0 - e / n) / (1.0 - (e - 1) / n)) ** self.power)

    def _get_closed_form_lr(self) -> list:
        return [base * (1.0 - min(self.total_iters, self.last_epoch) / self.total_iters) ** self.power
                for base in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    """Anneal the lr from its initial value to `eta_min` along a half cosine of `T_max` epochs (then back up).

    The values follow PyTorch's recursive form (each rate from the previous one), which equals the
    closed form eta_min + (base - eta_min) * (1 + cos(pi * epoch / T_max)) / 2 up to rounding and
    also follows changes other schedulers make to the lr."""

    def __init__(self, optimizer: Optimizer, T_max: int, eta_min: float = 0.0, last_epoch: int = -1) -> None:
        self.T_max = T_max
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        """The next rate on the cosine, from the current one."""
        if self._is_initial:
            return self._current()
        if self._step_count == 1 and self.last_epoch > 0:  # resumed: start from the closed form
            return [self.eta_min + (base - self.eta_min) * (1 + math.cos(self.last_epoch * math.pi / self.T_max)) / 2
                    for base in self.base_lrs]
        groups = self.optimizer.param_groups
        if (self.last_epoch - 1 - self.T_max) % (2 * self.T_max) == 0:  # at the bottom: turn back up
            return [group["lr"] + (base - self.eta_min) * (1 - math.cos(math.pi / self.T_max)) / 2
                    for base, group in zip(self.base_lrs, groups)]
        ratio = (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / \
            (1 + math.cos(math.pi * (self.last_epoch - 1) / self.T_max))
        return [ratio * (group["lr"] - self.eta_min) + self.eta_min for group in groups]

    def _get_closed_form_lr(self) -> list:
        return [self.eta_min + (base - self.eta_min) * (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2
                for base in self.base_lrs]


def _check_children(owner: str, optimizer: Optimizer, schedulers: Sequence, what: str) -> None:
    if len(schedulers) < 1:
        raise ValueError(f"{owner} expects at least one scheduler{what}, but got no scheduler.")
    for i, scheduler in enumerate(schedulers):
        if not hasattr(scheduler, "optimizer"):
            raise TypeError(f"{owner} at index {i} should have `optimizer` as its attribute.")
        if isinstance(scheduler, ReduceLROnPlateau):
            raise ValueError(f"{owner} does not support `ReduceLROnPlateau` scheduler as it requires additional "
                             "kwargs to be specified when calling `step`, but got one at index "
                             f"{i} in the given schedulers sequence.")
        if optimizer != scheduler.optimizer:
            raise ValueError(f"{owner} expects all schedulers to belong to the same optimizer, but got scheduler "
                             f"{scheduler.__class__.__name__} at index {i} has {scheduler.optimizer}, which is "
                             f"different from {optimizer.__class__.__name__}.")


class _Composite(LRScheduler):
    """Shared by SequentialLR and ChainedScheduler: the children's state dicts nest in ours."""

    def state_dict(self) -> dict[str, Any]:
        """The attributes, with each child scheduler's state dict."""
        state = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "_schedulers")}
        state["_schedulers"] = [s.state_dict() for s in self._schedulers]
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore the attributes and every child."""
        state_dict = dict(state_dict)
        children = state_dict.pop("_schedulers")
        self.__dict__.update(state_dict)
        for scheduler, saved in zip(self._schedulers, children):
            scheduler.load_state_dict(saved)


class SequentialLR(_Composite):
    """Run `schedulers` one after another, switching at each milestone epoch."""

    def __init__(self, optimizer: Optimizer, schedulers: list, milestones: list, last_epoch: int = -1) -> None:
        name = self.__class__.__name__
        _check_children(name, optimizer, schedulers, "")
        if len(milestones) != len(schedulers) - 1:
            raise ValueError("Sequential Schedulers expects number of schedulers provided to be one more than the "
                             f"number of milestone points, but got number of schedulers {len(schedulers)} and the "
                             f"number of milestones to be equal to {len(milestones)}")
        self._schedulers = schedulers
        self._milestones = milestones
        self.last_epoch = last_epoch + 1
        self.optimizer = optimizer
        # the children stepped once when they were built: undo that, then start the first one again
        for group in optimizer.param_groups:
            _set_group_value(group, "lr", group["initial_lr"])
        self._undo_initial_steps(self)
        first = self._schedulers[bisect_right(milestones, 0)]
        first._initial_step()
        self._last_lr = first.get_last_lr()

    def _undo_initial_steps(self, scheduler) -> None:
        if hasattr(scheduler, "_schedulers"):
            for child in scheduler._schedulers:
                self._undo_initial_steps(child)
        elif hasattr(scheduler, "last_epoch"):
            scheduler.last_epoch -= 1

    def step(self) -> None:
        """Step the scheduler in charge of this epoch; at a milestone, restart the next one."""
        self.last_epoch += 1
        idx = bisect_right(self._milestones, self.last_epoch)
        scheduler = self._schedulers[idx]
        if idx > 0 and self._milestones[idx - 1] == self.last_epoch:
            scheduler._update_lr(0)
        else:
            scheduler.step()
        self._last_lr = scheduler.get_last_lr()


class ChainedScheduler(_Composite):
    """Step every scheduler in `schedulers` at each step (their effects compose)."""

    def __init__(self, schedulers: Sequence, optimizer: Optimizer | None = None) -> None:
        optimizer = optimizer or (schedulers[0].optimizer if schedulers else None)
        _check_children(self.__class__.__name__, optimizer, schedulers, " to be chained")
        self._schedulers = schedulers
        self.optimizer = optimizer
        self._last_lr = _group_values(self._schedulers[-1].optimizer, "lr")

    def step(self) -> None:
        """Step each scheduler in order."""
        for scheduler in self._schedulers:
            scheduler.step()
        self._last_lr = _group_values(self._schedulers[-1].optimizer, "lr")


class ReduceLROnPlateau(LRScheduler):
    """Multiply the lr by `factor` when a metric has stopped improving for `patience` epochs."""

    def __init__(self, optimizer: Optimizer, mode: str = "min", factor: float = 0.1, patience: int = 10,
                 threshold: float = 1e-4, threshold_mode: str = "rel", cooldown: int = 0, min_lr=0,
                 eps: float = 1e-8) -> None:
        if factor >= 1.0:
            raise ValueError("Factor should be < 1.0.")
        self.factor = factor
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        if isinstance(min_lr, (list, tuple)):
            if len(min_lr) != len(optimizer.param_groups):
                raise ValueError(f"expected {len(optimizer.param_groups)} min_lrs, got {len(min_lr)}")
            self.default_min_lr = None
            self.min_lrs = list(min_lr)
        else:
            self.default_min_lr = min_lr
            self.min_lrs = [min_lr] * len(optimizer.param_groups)
        self.patience = patience
        self.cooldown = cooldown
        self.eps = eps
        self.last_epoch = 0
        self._last_lr = self._current()
        self._init_is_better(mode=mode, threshold=threshold, threshold_mode=threshold_mode)
        self._reset()

    def _reset(self) -> None:
        self.best = self.mode_worse
        self.cooldown_counter = 0
        self.num_bad_epochs = 0

    def step(self, metrics, epoch: int | None = None) -> None:
        """Record this epoch's metric; reduce the lr after more than `patience` bad epochs."""
        current = float(metrics)
        if epoch is None:
            epoch = self.last_epoch + 1
        else:
            warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=2)
        self.last_epoch = epoch
        if self._is_better(current, self.best):
            self.best = current
            self.num_bad_epochs = 0
        else:
            self.num_bad_epochs += 1
        if self.in_cooldown:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0  # bad epochs during cooldown do not count
        if self.num_bad_epochs > self.patience:
            self._reduce_lr()
            self.cooldown_counter = self.cooldown
            self.num_bad_epochs = 0
        self._last_lr = self._current()

    def _reduce_lr(self) -> None:
        groups = self.optimizer.param_groups
        if len(groups) != len(self.min_lrs):
            if self.default_min_lr is None:
                raise RuntimeError(
                    f"The number of param groups in the `optimizer` ({len(groups)}) differs from when "
                    f"`ReduceLROnPlateau` was initialized ({len(self.min_lrs)}), usually due to a new param group "
                    "being added to the optimizer. Please modify the `min_lrs` field to match the length of the "
                    "`optimizer` param groups.")
            self.min_lrs = [self.default_min_lr] * len(groups)
        for group, min_lr in zip(groups, self.min_lrs):
            old_lr = float(group["lr"])
            new_lr = max(old_lr * self.factor, min_lr)
            if old_lr - new_lr > self.eps:  # changes smaller than eps are ignored
                _set_group_value(group, "lr", new_lr)

    @property
    def in_cooldown(self) -> bool:
        """Whether the scheduler is waiting after a reduction."""
        return self.cooldown_counter > 0

    def _is_better(self, a: float, best: float) -> bool:
        if self.mode == "min":
            return a < best * (1.0 - self.threshold) if self.threshold_mode == "rel" else a < best - self.threshold
        return a > best * (self.threshold + 1.0) if self.threshold_mode == "rel" else a > best + self.threshold

    def _init_is_better(self, mode: str, threshold: float, threshold_mode: str) -> None:
        if mode not in {"min", "max"}:
            raise ValueError("mode " + mode + " is unknown!")
        if threshold_mode not in {"rel", "abs"}:
            raise ValueError("threshold mode " + threshold_mode + " is unknown!")
        self.mode_worse = math.inf if mode == "min" else -math.inf
        self.mode = mode
        self.threshold = threshold
        self.threshold_mode = threshold_mode

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore the attributes (and the comparison they configure)."""
        self.__dict__.update(state_dict)
        self._init_is_better(mode=self.mode, threshold=self.threshold, threshold_mode=self.threshold_mode)

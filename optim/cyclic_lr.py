"""Cyclic schedules: the 1cycle policy, cyclical learning rates, cosine annealing with warm restarts.

The first two also cycle the momentum (SGD's `momentum`, or beta1 of Adam-like optimizers)
in the opposite direction to the learning rate.
"""
from __future__ import annotations

import math
import types
from typing import Any, Callable

from .lr_scheduler_base import LRScheduler, _group_values, _per_group, _set_group_value, within_step
from .optimizer import Optimizer

__all__ = ["OneCycleLR", "CyclicLR", "CosineAnnealingWarmRestarts"]


def _momentum_key(optimizer: Optimizer) -> bool:
    """Whether the optimizer's momentum is beta1 (else 'momentum'); errors if it has neither."""
    if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
        raise ValueError("optimizer must support momentum or beta1 with `cycle_momentum` option enabled")
    return "betas" in optimizer.defaults


def _set_momentum(group: dict, value: float, use_beta1: bool) -> None:
    if use_beta1:
        group["betas"] = (value, *group["betas"][1:])
    else:
        group["momentum"] = value


def _annealing_cos(start: float, end: float, pct: float) -> float:
    return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)


def _annealing_linear(start: float, end: float, pct: float) -> float:
    return (end - start) * pct + start


class OneCycleLR(LRScheduler):
    """The 1cycle policy: warm the lr up to `max_lr`, then anneal it far below the start (per batch).

    With `cycle_momentum`, the momentum (SGD) or beta1 (Adam) moves the opposite way."""

    def __init__(self, optimizer: Optimizer, max_lr, total_steps: int | None = None, epochs: int | None = None,
                 steps_per_epoch: int | None = None, pct_start: float = 0.3, anneal_strategy: str = "cos",
                 cycle_momentum: bool = True, base_momentum=0.85, max_momentum=0.95, div_factor: float = 25.0,
                 final_div_factor: float = 1e4, three_phase: bool = False, last_epoch: int = -1) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        self.total_steps = self._total_steps(total_steps, epochs, steps_per_epoch)
        phases = [(float(pct_start * self.total_steps) - 1, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                  (self.total_steps - 1, "max_lr", "min_lr", "base_momentum", "max_momentum")]
        if three_phase:  # warm up, come back down to the initial lr, then anneal
            phases[1:] = [(float(2 * pct_start * self.total_steps) - 2, "max_lr", "initial_lr", "base_momentum",
                           "max_momentum"),
                          (self.total_steps - 1, "initial_lr", "min_lr", "max_momentum", "max_momentum")]
        self._schedule_phases = [dict(zip(("end_step", "start_lr", "end_lr", "start_momentum", "end_momentum"), p))
                                 for p in phases]
        if pct_start < 0 or pct_start > 1 or not isinstance(pct_start, float):
            raise ValueError(f"Expected float between 0 and 1 pct_start, but got {pct_start}")
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}")
        self._anneal_func_type = anneal_strategy
        groups = optimizer.param_groups
        if last_epoch == -1:
            for group, max_lr_value in zip(groups, _per_group("max_lr", optimizer, max_lr)):
                group["initial_lr"] = max_lr_value / div_factor
                group["max_lr"] = max_lr_value
                group["min_lr"] = group["initial_lr"] / final_div_factor
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            self.use_beta1 = _momentum_key(optimizer)
            if last_epoch == -1:
                for group, top, bottom in zip(groups, _per_group("max_momentum", optimizer, max_momentum),
                                              _per_group("base_momentum", optimizer, base_momentum)):
                    _set_momentum(group, top, self.use_beta1)
                    group["max_momentum"] = top
                    group["base_momentum"] = bottom
        super().__init__(optimizer, last_epoch)

    @staticmethod
    def _total_steps(total_steps: int | None, epochs: int | None, steps_per_epoch: int | None) -> int:
        if total_steps is not None:
            if total_steps <= 0 or not isinstance(total_steps, int):
                raise ValueError(f"Expected positive integer total_steps, but got {total_steps}")
            return total_steps
        if epochs is not None and steps_per_epoch is not None:
            if not isinstance(epochs, int) or epochs <= 0:
                raise ValueError(f"Expected positive integer epochs, but got {epochs}")
            if not isinstance(steps_per_epoch, int) or steps_per_epoch <= 0:
                raise ValueError(f"Expected positive integer steps_per_epoch, but got {steps_per_epoch}")
            return epochs * steps_per_epoch
        raise ValueError("You must define either total_steps OR (epochs AND steps_per_epoch)")

    def get_lr(self) -> list:
        """The rate (and momentum) of the current phase at this step."""
        step = self.last_epoch
        if step > self.total_steps:
            raise ValueError(f"Tried to step {step} times. The specified number of total steps is {self.total_steps}")
        anneal = _annealing_cos if self._anneal_func_type == "cos" else _annealing_linear
        lrs = []
        for group in self.optimizer.param_groups:
            start = 0.0
            for i, phase in enumerate(self._schedule_phases):
                end = phase["end_step"]
                if step <= end or i == len(self._schedule_phases) - 1:
                    pct = (step - start) / (end - start)
                    lrs.append(anneal(group[phase["start_lr"]], group[phase["end_lr"]], pct))
                    if self.cycle_momentum:
                        _set_momentum(group, anneal(group[phase["start_momentum"]], group[phase["end_momentum"]],
                                                    pct), self.use_beta1)
                    break
                start = end
        return lrs


class CyclicLR(LRScheduler):
    """Cycle the lr between `base_lr` and `max_lr` (triangular, triangular2, exp_range or a custom scale)."""

    def __init__(self, optimizer: Optimizer, base_lr, max_lr, step_size_up: int = 2000,
                 step_size_down: int | None = None, mode: str = "triangular", gamma: float = 1.0,
                 scale_fn: Callable[[float], float] | None = None, scale_mode: str = "cycle",
                 cycle_momentum: bool = True, base_momentum=0.8, max_momentum=0.9, last_epoch: int = -1) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        base_lrs = _per_group("base_lr", optimizer, base_lr)
        if last_epoch == -1:
            for lr, group in zip(base_lrs, optimizer.param_groups):
                _set_group_value(group, "lr", lr)
        self.max_lrs = _per_group("max_lr", optimizer, max_lr)
        step_size_up = float(step_size_up)
        step_size_down = float(step_size_down) if step_size_down is not None else step_size_up
        self.total_size = step_size_up + step_size_down
        self.step_ratio = step_size_up / self.total_size
        if mode not in ("triangular", "triangular2", "exp_range") and scale_fn is None:
            raise ValueError("mode is invalid and scale_fn is None")
        self.mode = mode
        self.gamma = gamma
        self._scale_fn_custom = scale_fn
        self.scale_mode = scale_mode
        self._init_scale_mode()
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            self.use_beta1 = _momentum_key(optimizer)
            self.base_momentums = _per_group("base_momentum", optimizer, base_momentum)
            self.max_momentums = _per_group("max_momentum", optimizer, max_momentum)
            if last_epoch == -1:
                for top, bottom, group in zip(self.max_momentums, self.base_momentums, optimizer.param_groups):
                    _set_momentum(group, top, self.use_beta1)
                    group["max_momentum"] = top
                    group["base_momentum"] = bottom
        super().__init__(optimizer, last_epoch)
        self.base_lrs = base_lrs

    def _init_scale_mode(self) -> None:
        if self._scale_fn_custom is None:  # the built-in modes fix what the scale is a function of
            self.scale_mode = "iterations" if self.mode == "exp_range" else "cycle"

    def scale_fn(self, x: float) -> float:
        """The amplitude scale at cycle (or iteration) `x`."""
        if self._scale_fn_custom is not None:
            return self._scale_fn_custom(x)
        if self.mode == "triangular":
            return 1.0
        if self.mode == "triangular2":
            return 1 / (2.0 ** (x - 1))
        return self.gamma ** x

    def get_lr(self) -> list:
        """The rates (and momenta) at this point of the cycle."""
        cycle = math.floor(1 + self.last_epoch / self.total_size)
        x = 1.0 + self.last_epoch / self.total_size - cycle
        scale_factor = x / self.step_ratio if x <= self.step_ratio else (x - 1) / (self.step_ratio - 1)
        scale = self.scale_fn(cycle if self.scale_mode == "cycle" else self.last_epoch)
        lrs = [base + (top - base) * scale_factor * scale for base, top in zip(self.base_lrs, self.max_lrs)]
        if self.cycle_momentum:
            for group, bottom, top in zip(self.optimizer.param_groups, self.base_momentums, self.max_momentums):
                _set_momentum(group, top - (top - bottom) * scale_factor * scale, self.use_beta1)
        return lrs

    def state_dict(self) -> dict[str, Any]:
        """The attributes; a custom scale function is saved as its __dict__ when it is a callable object."""
        state = super().state_dict()
        fn = state.pop("_scale_fn_custom")
        state["_scale_fn_custom"] = None if fn is None or isinstance(fn, types.FunctionType) else fn.__dict__.copy()
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore the attributes (and a callable object's __dict__)."""
        state_dict = dict(state_dict)
        fn = state_dict.pop("_scale_fn_custom")
        super().load_state_dict(state_dict)
        if fn is not None:
            self._scale_fn_custom.__dict__.update(fn)
        self._init_scale_mode()


class CosineAnnealingWarmRestarts(LRScheduler):
    """Cosine annealing from the initial lr to `eta_min`, restarting after T_0, T_0 * T_mult, ... epochs."""

    def __init__(self, optimizer: Optimizer, T_0: int, T_mult: int = 1, eta_min: float = 0.0,
                 last_epoch: int = -1) -> None:
        if T_0 <= 0 or not isinstance(T_0, int):
            raise ValueError(f"Expected positive integer T_0, but got {T_0}")
        if T_mult < 1 or not isinstance(T_mult, int):
            raise ValueError(f"Expected integer T_mult >= 1, but got {T_mult}")
        if not isinstance(eta_min, (float, int)):
            raise ValueError(f"Expected float or int eta_min, but got {eta_min} of type {type(eta_min)}")
        self.T_0 = T_0
        self.T_i = T_0
        self.T_mult = T_mult
        self.eta_min = eta_min
        self.T_cur = last_epoch
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        """The rate at T_cur epochs into the current cycle of T_i epochs."""
        return [self.eta_min + (base - self.eta_min) * (1 + math.cos(math.pi * self.T_cur / self.T_i)) / 2
                for base in self.base_lrs]

    def step(self, epoch: float | None = None) -> None:
        """Advance one epoch, or go to `epoch` (may be fractional: call it every batch with epoch + i / n)."""
        if epoch is None and self.last_epoch < 0:
            epoch = 0
        if epoch is None:
            epoch = self.last_epoch + 1
            self.T_cur += 1
            if self.T_cur >= self.T_i:
                self.T_cur %= self.T_i
                self.T_i *= self.T_mult
        elif epoch < 0:
            raise ValueError(f"Expected non-negative epoch, but got {epoch}")
        elif epoch >= self.T_0:
            if self.T_mult == 1:
                self.T_cur = epoch % self.T_0
            else:
                n = int(math.log((epoch / self.T_0 * (self.T_mult - 1) + 1), self.T_mult))
                self.T_cur = epoch - self.T_0 * (self.T_mult ** n - 1) / (self.T_mult - 1)
                self.T_i = self.T_0 * self.T_mult ** n
        else:
            self.T_i = self.T_0
            self.T_cur = epoch
        self.last_epoch = math.floor(epoch)
        with within_step(self):
            values = self.get_lr()
        for group, lr in zip(self.optimizer.param_groups, values):
            _set_group_value(group, "lr", lr)
        self._last_lr = _group_values(self.optimizer, "lr")

"""Stochastic weight averaging and exponential moving averages of a model (`torch.optim.swa_utils`).

AveragedModel keeps a copy of a model whose parameters (and optionally buffers) are the running
average of the model's; SWALR anneals the learning rate to a constant for the averaging phase;
update_bn recomputes batch-norm statistics for the averaged weights with one pass over the data.
"""
from __future__ import annotations

import itertools
import math
from copy import deepcopy
from typing import Any, Callable, Iterable

from ..autograd.grad_mode import no_grad
from ..nn.module import Module
from ..nn.modules.batchnorm import _BatchNorm
from ..ops.factories import creation
from ..tensor import Tensor
from ..tensor import dtype as dt
from .foreach import foreach
from .lr_scheduler_base import LRScheduler, _per_group
from .optimizer import Optimizer
from .scalar_state import rounded

__all__ = ["AveragedModel", "update_bn", "SWALR", "get_ema_multi_avg_fn", "get_swa_multi_avg_fn",
           "get_ema_avg_fn", "get_swa_avg_fn"]

_FOREACH_DEVICES = ("cuda",)  # where PyTorch's default average is the list-wide (lerp) one


def _lerp_all(averaged: list[Tensor], current: list[Tensor], *, weight: float) -> None:
    """averaged += weight * (current - averaged), for every pair, in place."""
    for a, c in zip(averaged, current):
        a.lerp_(c, weight)


def _check_decay(decay: float) -> None:
    if decay < 0.0 or decay > 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in [0,1] range.")


def get_ema_multi_avg_fn(decay: float = 0.999) -> Callable:
    """An in-place exponential moving average over lists of parameters: ema = decay*ema + (1-decay)*current."""
    _check_decay(decay)

    def ema_update(ema_param_list: list[Tensor], current_param_list: list[Tensor], _) -> None:
        with no_grad():
            if ema_param_list[0].is_floating_point() or ema_param_list[0].is_complex():
                foreach(_lerp_all, (list(ema_param_list), list(current_param_list)), (0,),
                        {"weight": 1 - decay})
            else:
                for p_ema, p_model in zip(ema_param_list, current_param_list):
                    p_ema.copy_(p_ema * decay + p_model * (1 - decay))
    return ema_update


def get_swa_multi_avg_fn() -> Callable:
    """An in-place equal-weight running average over lists of parameters."""

    def swa_update(averaged_param_list: list[Tensor], current_param_list: list[Tensor],
                   num_averaged: Tensor | int) -> None:
        with no_grad():
            if averaged_param_list[0].is_floating_point() or averaged_param_list[0].is_complex():
                # a tensor count gives a weight in the default dtype, as PyTorch's 1 / (count + 1) does
                weight = rounded(1 / (int(num_averaged) + 1)) if isinstance(num_averaged, Tensor) \
                    else 1 / (num_averaged + 1)
                foreach(_lerp_all, (list(averaged_param_list), list(current_param_list)), (0,),
                        {"weight": weight})
            else:
                for p_avg, p_model in zip(averaged_param_list, current_param_list):
                    diff = p_model - p_avg
                    if isinstance(num_averaged, Tensor):
                        p_avg.addcdiv_(diff, num_averaged + 1)
                    else:
                        p_avg.add_(diff, alpha=1.0 / (num_averaged + 1))
    return swa_update


def get_ema_avg_fn(decay: float = 0.999) -> Callable:
    """The exponential moving average of one parameter: decay*ema + (1-decay)*current."""
    _check_decay(decay)

    def ema_update(ema_param: Tensor, current_param: Tensor, num_averaged) -> Tensor:
        with no_grad():
            return decay * ema_param + (1 - decay) * current_param
    return ema_update


def get_swa_avg_fn() -> Callable:
    """The equal-weight running average of one parameter."""

    def swa_update(averaged_param: Tensor, current_param: Tensor, num_averaged: Tensor | int) -> Tensor:
        with no_grad():
            return averaged_param + (current_param - averaged_param) / (num_averaged + 1)
    return swa_update


def _group_by_device_and_dtype(averaged: list[Tensor], current: list[Tensor]) -> dict:
    groups: dict = {}
    for a, c in zip(averaged, current):
        pair = groups.setdefault((a.device, a.dtype), ([], []))
        pair[0].append(a)
        pair[1].append(c)
    return groups


class AveragedModel(Module):
    """A copy of `model` whose parameters (and buffers, with `use_buffers`) are averaged by
    `update_parameters`: equally (SWA) by default, or by `avg_fn` / `multi_avg_fn` (e.g. EMA)."""

    def __init__(self, model: Module, device=None, avg_fn: Callable | None = None,
                 multi_avg_fn: Callable | None = None, use_buffers: bool = False) -> None:
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged", creation.tensor(0, dtype=dt.int64, device=device))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args, **kwargs):
        """The averaged module's output."""
        return self.module(*args, **kwargs)

    def update_parameters(self, model: Module) -> None:
        """Fold `model`'s current parameters into the average (the first call copies them)."""
        with no_grad():
            self._update(model)

    def _update(self, model: Module) -> None:
        if self.use_buffers:
            self_params = itertools.chain(self.module.parameters(), self.module.buffers())
            model_params = itertools.chain(model.parameters(), model.buffers())
        else:
            self_params, model_params = self.parameters(), model.parameters()
        averaged, current = [], []
        copy_param = bool(self.n_averaged == 0)
        for p_averaged, p_model in zip(self_params, model_params):
            p_model_ = p_model.detach().to(p_averaged.device)
            averaged.append(p_averaged.detach())
            current.append(p_model_)
            if copy_param:
                p_averaged.detach().copy_(p_model_)
        if not copy_param:
            if self.multi_avg_fn is not None or self.avg_fn is None:
                for (device, _), (group_averaged, group_current) in _group_by_device_and_dtype(
                        averaged, current).items():
                    n_averaged = self.n_averaged.to(device)
                    if self.multi_avg_fn is not None:
                        self.multi_avg_fn(group_averaged, group_current, n_averaged)
                    elif device.type in _FOREACH_DEVICES:
                        get_swa_multi_avg_fn()(group_averaged, group_current, n_averaged)
                    else:
                        avg_fn = get_swa_avg_fn()
                        for p_averaged, p_model in zip(group_averaged, group_current):
                            p_averaged.copy_(avg_fn(p_averaged, p_model, n_averaged))
            else:
                for p_averaged, p_model in zip(averaged, current):
                    n_averaged = self.n_averaged.to(p_averaged.device)
                    p_averaged.copy_(self.avg_fn(p_averaged, p_model, n_averaged))
        if not self.use_buffers:
            for b_swa, b_model in zip(self.module.buffers(), model.buffers()):
                b_swa.detach().copy_(b_model.detach().to(b_swa.device))
        self.n_averaged.add_(1)


def update_bn(loader: Iterable[Any], model: Module, device=None) -> None:
    """Recompute the running statistics of `model`'s batch-norm layers with one pass over `loader`
    (each batch a tensor, or a list/tuple whose first item is the input)."""
    with no_grad():
        momenta = {}
        for module in model.modules():
            if isinstance(module, _BatchNorm):
                module.reset_running_stats()
                momenta[module] = module.momentum
        if not momenta:
            return
        was_training = model.training
        model.train()
        for module in momenta:
            module.momentum = None  # a cumulative average over the whole pass
        for input in loader:
            if isinstance(input, (list, tuple)):
                input = input[0]
            if device is not None:
                input = input.to(device)
            model(input)
        for module, momentum in momenta.items():
            module.momentum = momentum
        model.train(was_training)


class SWALR(LRScheduler):
    """Anneal each group's learning rate to `swa_lr` over `anneal_epochs` epochs ('cos' or 'linear'),
    then hold it there."""

    def __init__(self, optimizer: Optimizer, swa_lr, anneal_epochs: int = 10, anneal_strategy: str = "cos",
                 last_epoch: int = -1) -> None:
        swa_lrs = _per_group("swa_lr", optimizer, swa_lr)
        for value, group in zip(swa_lrs, optimizer.param_groups):
            group["swa_lr"] = value
        if anneal_strategy not in ["cos", "linear"]:
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}")
        self._set_anneal_func(anneal_strategy)
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got {anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    @staticmethod
    def _linear_anneal(t: float) -> float:
        return t

    @staticmethod
    def _cosine_anneal(t: float) -> float:
        return (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _get_initial_lr(lr: float, swa_lr: float, alpha: float) -> float:
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def get_lr(self) -> list:
        """The next learning rates: the current ones moved along the annealing curve toward swa_lr."""
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        # undo the previous step's interpolation to recover the rate it started from
        prev_alpha = self.anneal_func(max(0, min(1, (step - 1) / max(1, self.anneal_epochs))))
        prev_lrs = [self._get_initial_lr(group["lr"], group["swa_lr"], prev_alpha)
                    for group in self.optimizer.param_groups]
        alpha = self.anneal_func(max(0, min(1, step / max(1, self.anneal_epochs))))
        return [group["swa_lr"] * alpha + lr * (1 - alpha) for group, lr in zip(self.optimizer.param_groups, prev_lrs)]

    def _set_anneal_func(self, anneal_strategy: str) -> None:
        self._anneal_strategy = anneal_strategy
        self.anneal_func = self._cosine_anneal if anneal_strategy == "cos" else self._linear_anneal

    def state_dict(self) -> dict[str, Any]:
        """Every attribute except the optimizer and the annealing function."""
        return {key: value for key, value in self.__dict__.items() if key not in ("optimizer", "anneal_func")}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore the attributes saved by `state_dict`."""
        self.__dict__.update(state_dict)
        self._set_anneal_func(self._anneal_strategy)

"""Training with uneven inputs (torch.distributed.algorithms.join): Join, Joinable, JoinHook.

A rank that runs out of inputs leaves the `with Join([...]):` body early and, in __exit__, keeps matching the
collectives the other ranks still issue: each iteration it all-reduces a zero (the other ranks all-reduce a one
from `Join.notify_join_context` at the start of theirs), learns how many ranks are still running, and while any
are, runs every joinable's `JoinHook.main_hook()` (which issues the same collectives the running ranks' joinables
issue in one iteration, with neutral values). When all ranks have joined, `post_hook(is_last_joiner)` lets each
joinable settle its final state (DDP: every rank takes the model of the last rank to join). With
`throw_on_early_termination` the first rank to join makes every rank raise instead.
"""
from __future__ import annotations

import warnings
from abc import ABC, abstractmethod
from typing import NamedTuple

from .. import ops
from .collectives import all_reduce
from .process_group import get_rank

__all__ = ["JoinHook", "Joinable", "Join"]


class JoinHook:
    """What a joinable does once its rank has joined: `main_hook` each iteration the other ranks still run,
    `post_hook` once all have joined. Both do nothing by default."""

    def main_hook(self) -> None:
        """Shadow one iteration's collectives of the ranks that have not joined."""

    def post_hook(self, is_last_joiner: bool) -> None:
        """Called on every rank once all have joined (`is_last_joiner`: this rank joined last)."""


class _JoinConfig(NamedTuple):
    """A joinable's place in the join context: enabled, throwing on early termination, first joinable."""
    enable: bool
    throw_on_early_termination: bool
    is_first_joinable: bool

    @staticmethod
    def construct_disabled_join_config() -> "_JoinConfig":
        """The configuration outside any join context."""
        return _JoinConfig(enable=False, throw_on_early_termination=False, is_first_joinable=False)


class Joinable(ABC):
    """A class whose per-iteration collectives can be shadowed by joined ranks: it gives a JoinHook, the device
    and process group of the join context's all-reduces, and calls `Join.notify_join_context(self)` before its
    own collectives each iteration."""

    @abstractmethod
    def __init__(self) -> None:
        super().__init__()
        self._join_config = _JoinConfig.construct_disabled_join_config()

    @abstractmethod
    def join_hook(self, **kwargs) -> JoinHook:
        """The hook shadowing this joinable's collectives (kwargs: those given to Join)."""

    @property
    @abstractmethod
    def join_device(self):
        """The device of the join context's all-reduces."""

    @property
    @abstractmethod
    def join_process_group(self):
        """The process group of the join context's all-reduces."""


_WARN_THRESHOLD = 1000


class Join:
    """Context manager for uneven inputs over the `joinables` (hooks run in their order); `enable=False` turns it
    off; `throw_on_early_termination=True` makes every rank raise once one has run out of inputs."""

    def __init__(self, joinables: list, enable: bool = True, throw_on_early_termination: bool = False,
                 **kwargs) -> None:
        if len(joinables) == 0:
            raise ValueError("The join context manager requires at least one joinable")
        self._joinables = joinables
        self._join_hooks = [joinable.join_hook(**kwargs) for joinable in self._joinables]
        self._enable = enable
        self._throw_on_early_termination = throw_on_early_termination
        self._set_joinable_configs()
        self._extract_dist_info()

    def _set_joinable_configs(self) -> None:
        for k, joinable in enumerate(self._joinables):
            joinable._join_config = _JoinConfig(self._enable, self._throw_on_early_termination, k == 0)

    def _extract_dist_info(self) -> None:
        group, device = None, None
        for joinable in self._joinables:
            if group is None:
                group = joinable.join_process_group
            elif group != joinable.join_process_group:
                raise ValueError("Using join context manager with multiple process groups")
            if device is None:
                device = joinable.join_device
        self._process_group, self._device = group, device
        self._rank = get_rank(group)

    def __enter__(self) -> None:
        return None

    def __exit__(self, exc_type, exc, tb) -> None:
        if not self._enable or exc_type is not None:
            return  # (an exception in the body propagates as it is)
        all_joined, is_last_joiner, skew = False, True, 0
        while not all_joined:
            if skew > _WARN_THRESHOLD:
                warnings.warn(f"Detected uneven input skew of greater than {_WARN_THRESHOLD}. This means that rank "
                              f"{self._rank} has at least {_WARN_THRESHOLD} fewer inputs than other currently-active "
                              "ranks. This level of skew could lead to performance degradation during training.",
                              stacklevel=2)
            if self._get_num_nonjoined_procs() == 0:
                all_joined = True
            else:
                if self._throw_on_early_termination:
                    self._notify_procs_to_terminate()
                for hook in self._join_hooks:
                    hook.main_hook()
                is_last_joiner = False
                skew += 1
        for hook in self._join_hooks:
            hook.post_hook(is_last_joiner)

    def _all_reduce(self, value: float) -> float:
        t = ops.full((1,), value, device=self._device)
        all_reduce(t, group=self._process_group)
        return t.item()

    def _get_num_nonjoined_procs(self) -> float:
        """How many ranks have not joined: the running ones each add 1 from notify_join_context."""
        return self._all_reduce(0.0)

    def _notify_procs_to_terminate(self) -> None:
        """Tell the running ranks (waiting in notify_join_context) to raise; raise here too."""
        self._all_reduce(1.0)
        raise RuntimeError(f"Rank {self._rank} exhausted all inputs.")

    @staticmethod
    def notify_join_context(joinable: Joinable):
        """Called by a joinable before its collectives each iteration: the first joinable of an enabled context
        all-reduces a one (this rank has not joined; returns the async work) and, with throw_on_early_termination,
        raises on every rank once one has joined. None otherwise."""
        if not hasattr(joinable, "_join_config"):
            raise AssertionError(f"Check that the {type(joinable)} constructor calls the ``Joinable`` constructor")
        config = joinable._join_config
        if not config.is_first_joinable or not config.enable:
            return None
        group = joinable.join_process_group
        work = all_reduce(ops.ones((1,), device=joinable.join_device), group=group, async_op=True)
        if config.throw_on_early_termination:
            zeros = ops.zeros((1,), device=joinable.join_device)
            all_reduce(zeros, group=group)
            if zeros.item():
                raise RuntimeError("Detected at least one rank that exhausted inputs. Throwing across all ranks.")
        return work

"""swap_in_optimizer_params_and_state: run an optimizer, for a `with` block, on other parameters and state.

The swap-in state is an optimizer.state_dict()-style dict (state keyed by packed parameter ids,
param_groups listing those ids); the parameters come as a flat name -> tensor dict in param-group
order. Inside the block the live optimizer's groups and state are the swapped-in ones; on exit
every group dict and the state mapping are put back as they were.
"""
from __future__ import annotations

import contextlib
from collections import defaultdict
from typing import Any, Iterator

from ..tensor import Tensor
from .step_counts import as_tensors

__all__ = ["swap_in_optimizer_params_and_state"]

_NAME = "swap_in_optimizer_params_and_state"


def _checked_state(state: Any) -> dict:
    if not isinstance(state, dict):
        raise RuntimeError(f"{_NAME} requires swapin_optim_state['state'] to be a dict mapping packed parameter ids "
                           f"to per-param state dicts, got {type(state).__name__}.")
    if any(isinstance(k, Tensor) for k in state):
        raise RuntimeError(f"{_NAME} requires optimizer.state_dict()-style state keyed by packed parameter ids.")
    if any(isinstance(k, int) and not isinstance(v, dict) for k, v in state.items()):
        raise RuntimeError(f"{_NAME} requires per-parameter optimizer state entries to be dictionaries.")
    return state


def _checked_groups(optimizer, groups: Any) -> list:
    if not isinstance(groups, list):
        raise RuntimeError(f"{_NAME} requires swapin_optim_state['param_groups'] to be a list of param-group dicts, "
                           f"got {type(groups).__name__}.")
    if len(optimizer.param_groups) != len(groups):
        raise RuntimeError("swapin_optim_state has a different number of parameter groups than the live optimizer.")
    return groups


def _checked_ids(index: int, live: dict, group: Any) -> list:
    if not isinstance(group, dict):
        raise RuntimeError(f"{_NAME} requires each optimizer param group to be a dictionary.")
    ids = group.get("params")
    if not isinstance(ids, list) or not all(isinstance(i, int) for i in ids):
        raise RuntimeError(f"{_NAME} requires optimizer.state_dict()-style param_groups[*]['params'] entries keyed by "
                           "packed parameter ids.")
    if len(live["params"]) != len(ids):
        raise RuntimeError(f"swapin_optim_state param group {index} has a different number of params than the live "
                           "optimizer param group.")
    only_swapin = [k for k in group if k not in live]
    only_live = [k for k in live if k not in group]
    if only_swapin or only_live:
        raise RuntimeError(f"{_NAME} requires optimizer.state_dict()-style param group keys to exactly match the live "
                           f"optimizer group keys for group {index}. Keys only in swap-in: {only_swapin}. Keys only "
                           f"in live: {only_live}.")
    return ids


def _plan(optimizer, parameters: dict, optim_state: Any) -> tuple:
    """(state by packed id, [(live group, swap-in group, its parameters)]) after torch's checks."""
    if not optimizer.state:
        raise RuntimeError(f"{_NAME} requires initialized optimizer state.")
    if not isinstance(optim_state, dict):
        raise RuntimeError(f"{_NAME} requires a DCP-style optimizer state_dict.")
    state = _checked_state(optim_state.get("state"))
    groups = _checked_groups(optimizer, optim_state.get("param_groups"))
    flat = list(parameters.values())
    at, seen, plan = 0, set(), []
    for index, (live, group) in enumerate(zip(optimizer.param_groups, groups)):
        ids = _checked_ids(index, live, group)
        seen.update(ids)
        if at + len(ids) > len(flat):
            raise RuntimeError(f"{_NAME} requires the explicit parameter state to match optimizer.param_groups "
                               "ordering.")
        plan.append((live, group, flat[at:at + len(ids)]))
        at += len(ids)
    extra = [k for k in state if k not in seen]
    if extra:
        raise RuntimeError(f"{_NAME} requires swapin_optim_state['state'] to be keyed only by packed parameter ids "
                           f"from param_groups[*]['params']; got extra keys {extra!r}.")
    return state, plan


@contextlib.contextmanager
def swap_in_optimizer_params_and_state(optimizer, swapin_parameters: dict, swapin_optim_state: dict) -> Iterator[None]:
    """Give `optimizer` the swap-in parameters, group settings and state inside the `with` block."""
    state, plan = _plan(optimizer, swapin_parameters, swapin_optim_state)
    saved_state = optimizer.state
    saved_groups = [dict(g) for g in optimizer.param_groups]  # shallow: the params lists keep their identity
    try:
        swapped: defaultdict = defaultdict(dict)
        for live, group, params in plan:
            live["params"] = params
            live.update({k: v for k, v in group.items() if k != "params"})
            for p, pid in zip(params, group["params"]):
                swapped[p] = dict(state.get(pid, {}))  # in-place tensor updates show; new keys stay local
        optimizer.state = swapped
        as_tensors(optimizer)  # (numbers a state dict holds for PyTorch's 0-d state tensors become tensors)
        yield
    finally:
        for group, snapshot in zip(optimizer.param_groups, saved_groups):
            group.clear()
            group.update(snapshot)
        optimizer.state = saved_state

"""Optimizer step counts as PyTorch keeps them: `state['step']` is a 0-d tensor of the scalar dtype.

PyTorch's optimizers count in that tensor (`step_t += 1`) and read it back with `.item()`. Reading it back
here would make every step wait for the device, so the count is mirrored on the host: per parameter state,
the tensor the optimizer last wrote, its version after that write and the count written. While the state
still holds that tensor at that version, the host number is the tensor's value; a tensor the user wrote
(`state['step'].fill_(10)`, a loaded state dict, another optimizer sharing it) is read once, then mirrored
again. A step queues one write of all the group's counts (one instruction), never a read.
"""
from __future__ import annotations

import numpy as np

from ..ops.dispatch.primitive import Primitive
from ..ops.factories.creation import scalar_tensor
from ..tensor import Tensor
from ..tensor import dtype as dt

__all__ = ["advance", "counts", "written", "as_step_tensors", "forget"]

_FLOAT32_EXACT = 2.0 ** 24  # above this a float32 count rounds (PyTorch's count stops at 2**24 so)


def _scalar_dtype() -> dt.dtype:
    return dt.float64 if dt.get_default_dtype() is dt.float64 else dt.float32


def _write_counts(ins, outs, attrs) -> None:
    for out, value in zip(outs, attrs):
        out[...] = value


# the counts of one parameter group's states, written in one instruction (the optimizers step under no_grad)
STEP_COUNTS = Primitive("optimizer_step_counts", None, cpu=_write_counts, cuda=None)


def _version(t: Tensor) -> int:
    return (t._vc or t._v.blob).version  # (Tensor._version without its inference-tensor check: a step runs it often)


def _mirror(optimizer) -> dict:
    mirror = optimizer.__dict__.get("_step_mirror")
    if mirror is None:
        mirror = optimizer.__dict__["_step_mirror"] = {}
    return mirror


def _rounded(value: float, tensor: Tensor) -> float:
    """`value` as `tensor` holds it (only counts past 2**24 can differ)."""
    if value <= _FLOAT32_EXACT or tensor.dtype is not dt.float32:
        return value
    return float(np.float32(value))


def _count(mirror: dict, state: dict) -> float:
    """The count `state['step']` holds: the mirror's while it still describes the tensor, else read once."""
    step = state["step"]
    entry = mirror.get(id(state))
    if entry is not None and entry[0] is step and _version(step) == entry[1]:
        return entry[2]
    if isinstance(step, Tensor):
        value = step.item()  # the tensor was written elsewhere: read it (a sync, once per outside write)
    else:  # a number (a state saved as numbers): a tensor from now on
        value = float(step)
        step = state["step"] = scalar_tensor(value, dtype=_scalar_dtype())
    mirror[id(state)] = (step, _version(step), value)
    return value


def counts(optimizer, states: list) -> list[float]:
    """The step counts of `states` (PyTorch's `_get_value(state['step'])`) as host numbers."""
    mirror = _mirror(optimizer)
    return [_count(mirror, state) for state in states]


def advance(optimizer, states: list) -> list[float]:
    """Add one to the step count of every state (PyTorch's `state_steps += 1`): the new counts as host numbers,
    written into the step tensors by one queued instruction."""
    mirror = _mirror(optimizer)
    values, tensors, written = [], [], []
    for state in states:
        step = state.get("step")
        entry = mirror.get(id(state))
        if entry is not None and entry[0] is step and _version(step) == entry[1]:
            value = entry[2] + 1
            if value > _FLOAT32_EXACT:
                value = _rounded(value, step)
        elif isinstance(step, Tensor):
            value = _rounded(step.item() + 1, step)  # written elsewhere since: read once
        else:  # a new state's placeholder (or a number from an old state dict): the tensor is made with the count
            value = float(step or 0) + 1
            state["step"] = scalar_tensor(value, dtype=_scalar_dtype())
            values.append(value)
            continue
        values.append(value)
        tensors.append(step)
        written.append(value)
    if tensors:
        _write(tensors, written)
    for value, state in zip(values, states):
        step = state["step"]
        mirror[id(state)] = (step, _version(step), value)
    return values


def written(optimizer, states: list) -> list[float]:
    """The counts `advance` just wrote for `states` (no check: the caller runs right after it, in the same step)."""
    mirror = optimizer.__dict__["_step_mirror"]
    return [mirror[id(state)][2] for state in states]


def _write(tensors: list, values: list) -> None:
    if all(t.device.type == "cpu" for t in tensors):
        STEP_COUNTS.write((), tuple(tensors), tuple(values))
        return
    for t, v in zip(tensors, values):  # (a step tensor moved to another device by the user: one fill each)
        t.fill_(v)


def as_step_tensors(optimizer) -> None:
    """Turn the step counts a state holds as numbers (old state dicts, pickles) into PyTorch's 0-d tensors."""
    for state in optimizer.state.values():
        if isinstance(state, dict) and "step" in state and not isinstance(state["step"], Tensor):
            state["step"] = scalar_tensor(float(state["step"]), dtype=_scalar_dtype())


def forget(optimizer) -> None:
    """Drop the host mirror (the states were replaced)."""
    optimizer.__dict__.pop("_step_mirror", None)

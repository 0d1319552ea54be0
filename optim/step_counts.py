"""Scalar optimizer state as PyTorch keeps it: 0-d tensors (`state['step']`, NAdam's `mu_product`, ASGD's `eta`
and `mu`), of the scalar dtype (float32, float64 when that is the default) unless loaded in a parameter's dtype.

PyTorch's optimizers update those tensors in place (`step_t += 1`, `mu_product *= mu`) and read them back with
`.item()`. Reading them back here would make every step wait for the device, so each value is mirrored on the
host: per parameter state and key, the tensor the optimizer last wrote, its version after that write and the
value written. While the state still holds that tensor at that version, the host number is the tensor's value;
a tensor the user wrote (`state['step'].fill_(10)`, a loaded state dict, another optimizer sharing it) is read
once, then mirrored again. A step queues one write per key of all the group's values (one instruction), never a
read. Values in a dtype other than the scalar dtype come back as `Scalar`s, floats that remember it (so that
scalar_state.product computes in it, as PyTorch's in-place product does).
"""
from __future__ import annotations

import numpy as np

from ..ops.dispatch.primitive import Primitive
from ..ops.factories.creation import scalar_tensor
from ..tensor import Tensor
from ..tensor import dtype as dt
from .scalar_state import Scalar

__all__ = ["advance", "next_counts", "written", "values", "store", "as_tensors", "forget"]

_FLOAT32_EXACT = 2.0 ** 24  # above this a float32 count rounds (PyTorch's count stops at 2**24 so)


def _scalar_dtype() -> dt.dtype:
    return dt.float64 if dt.get_default_dtype() is dt.float64 else dt.float32


def _write_values(ins, outs, attrs) -> None:
    for out, value in zip(outs, attrs):
        out[...] = value


# one key's values over a parameter group's states, written in one instruction (optimizers step under no_grad)
STEP_COUNTS = Primitive("optimizer_step_counts", None, cpu=_write_values, cuda=None)


def _version(t: Tensor) -> int:
    return (t._vc or t._v.blob).version  # (Tensor._version without its inference-tensor check: a step runs it often)


def _mirror(optimizer, key: str) -> dict:
    """id(state) -> (tensor, its version, host value), for `key`."""
    mirrors = optimizer.__dict__.get("_scalar_mirrors")
    if mirrors is None:
        mirrors = optimizer.__dict__["_scalar_mirrors"] = {}
    mirror = mirrors.get(key)
    if mirror is None:
        mirror = mirrors[key] = {}
    return mirror


def _rounded(value: float, tensor: Tensor) -> float:
    """`value` as `tensor` holds it (only counts past 2**24 can differ)."""
    if value <= _FLOAT32_EXACT or tensor.dtype is not dt.float32:
        return value
    return float(np.float32(value))


def _new_tensor(value: float) -> Tensor:
    """A 0-d tensor for a value kept as a number (a new state's placeholder, an old state dict's number)."""
    return scalar_tensor(float(value), dtype=getattr(value, "dtype", None) or _scalar_dtype())


def _host(t: Tensor, value: float, key: str) -> float:
    """The host form of `t`'s value: a float, or a Scalar remembering a dtype other than the scalar dtype."""
    if key == "step" or t.dtype is _scalar_dtype() or not t.dtype.is_floating_point:
        return value
    return Scalar(value, t.dtype)


def values(optimizer, states: list, key: str) -> list[float]:
    """The scalar state `key` of `states` (PyTorch's `_get_value(state[key])`) as host numbers; a tensor written
    elsewhere since the optimizer wrote it is read (a sync, once)."""
    mirror = _mirror(optimizer, key)
    out = []
    for state in states:
        t = state[key]
        entry = mirror.get(id(state))
        if entry is not None and entry[0] is t and _version(t) == entry[1]:
            out.append(entry[2])
            continue
        if not isinstance(t, Tensor):  # a number: a tensor from now on
            t = state[key] = _new_tensor(t)
        value = _host(t, t.item(), key)
        mirror[id(state)] = (t, _version(t), value)
        out.append(value)
    return out


def store(optimizer, states: list, new: dict[str, list[float]]) -> None:
    """state[key] = each of `new[key]`, written into the states' tensors (PyTorch's in-place update of them) by one
    queued instruction for all the keys; numbers held under a key become tensors holding the new values."""
    tensors, written_values = [], []
    for key, key_values in new.items():
        for state, value in zip(states, key_values):
            t = state.get(key)
            if isinstance(t, Tensor):
                tensors.append(t)
                written_values.append(value)
            else:
                state[key] = _new_tensor(value)
    if tensors:
        _write(tensors, written_values)
    for key, key_values in new.items():
        mirror = _mirror(optimizer, key)
        for state, value in zip(states, key_values):
            t = state[key]
            mirror[id(state)] = (t, _version(t), value)


def advance(optimizer, states: list, more: dict[str, list[float]] | None = None) -> list[float]:
    """Add one to the step count of every state (PyTorch's `state_steps += 1`): the new counts as host numbers,
    written into the step tensors (with the values `more` gives other keys) by one queued instruction."""
    counts = next_counts(optimizer, states)
    store(optimizer, states, {"step": counts, **more} if more else {"step": counts})
    return counts


def next_counts(optimizer, states: list) -> list[float]:
    """The step counts of `states` plus one, as host numbers (nothing written: see advance and store)."""
    mirror = _mirror(optimizer, "step")
    counts = []
    for state in states:
        step = state.get("step")
        entry = mirror.get(id(state))
        if entry is not None and entry[0] is step and _version(step) == entry[1]:
            value = entry[2] + 1
            if value > _FLOAT32_EXACT:
                value = _rounded(value, step)
        elif isinstance(step, Tensor):
            value = _rounded(step.item() + 1, step)  # written elsewhere since: read once
        else:  # a new state's placeholder (or a number from an old state dict)
            value = float(step or 0) + 1
        counts.append(value)
    return counts


def written(optimizer, states: list, key: str = "step") -> list[float]:
    """The values `advance` or `store` just wrote for `states` (no check: the caller runs right after it, in the
    same step)."""
    mirror = optimizer.__dict__["_scalar_mirrors"][key]
    return [mirror[id(state)][2] for state in states]


def _write(tensors: list, new: list) -> None:
    if all(t.device.type == "cpu" for t in tensors):
        STEP_COUNTS.write((), tuple(tensors), tuple(new))
        return
    for t, v in zip(tensors, new):  # (a scalar state tensor moved to another device by the user: one fill each)
        t.fill_(v)


def as_tensors(optimizer) -> None:
    """Turn the scalar state a state holds as numbers (old state dicts, pickles) into PyTorch's 0-d tensors: the
    keys in the optimizer's `_host_state`, and 'step' where it counts in a tensor."""
    keys = tuple(k for k in optimizer._host_state if k != "step") + (("step",) if optimizer._step_tensors else ())
    for state in optimizer.state.values():
        if not isinstance(state, dict):
            continue
        for key in keys:
            if key in state and not isinstance(state[key], Tensor) and state[key] is not None:
                state[key] = _new_tensor(state[key])


def forget(optimizer) -> None:
    """Drop the host mirrors (the states were replaced)."""
    optimizer.__dict__.pop("_scalar_mirrors", None)

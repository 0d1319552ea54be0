"""Autocast (torch.autocast): inside an enabled block, ops on torch's lower-precision list (matmuls, linear,
convolutions, attention) run in the block's dtype and ops on its float32 list (the losses) in float32.

The state is per thread, as torch's. The ops call `lower(...)` / `fp32(...)` on their tensor arguments; while no
block is enabled in any thread that is one read of ACTIVE, so the ops pay nothing outside autocast. Only
float16/bfloat16/float32 tensors on the block's device type are cast (float64 and integers never are), each with
a differentiable `.to`, so gradients reach float32 parameters in float32.
"""
from __future__ import annotations

import threading

from ...tensor import Tensor
from ...tensor import dtype as dt

__all__: list = []

ACTIVE = [0]  # enabled autocast blocks open in any thread
_ELIGIBLE = (dt.float16, dt.bfloat16, dt.float32)


class _State(threading.local):
    def __init__(self):
        self.dtypes: dict = {}  # device type -> the dtype of the enabled block around this thread's code


_STATE = _State()


def enabled_dtype(device_type: str):
    """The dtype autocast runs lower-precision ops in on `device_type` in this thread (None: not enabled)."""
    return _STATE.dtypes.get(device_type) if ACTIVE[0] else None


def enter(device_type: str, dtype, enabled: bool):
    """Open a block (enabled or, nested, disabling); returns what `leave` restores."""
    previous = _STATE.dtypes.get(device_type)
    if enabled:
        _STATE.dtypes[device_type] = dtype
        ACTIVE[0] += 1
    else:
        _STATE.dtypes.pop(device_type, None)
    return previous, enabled


def leave(device_type: str, token) -> None:
    """Close the block `enter` opened."""
    previous, enabled = token
    if enabled:
        ACTIVE[0] -= 1
    if previous is None:
        _STATE.dtypes.pop(device_type, None)
    else:
        _STATE.dtypes[device_type] = previous


def _cast(values: tuple, target_of) -> tuple:
    out = []
    for v in values:
        if isinstance(v, Tensor) and v.dtype in _ELIGIBLE:
            target = target_of(v.device.type)
            if target is not None and v.dtype is not target:
                v = v.to(target)
        out.append(v)
    return tuple(out)


def lower(*values):
    """The tensors among `values` in the enabled block's dtype (an op on torch's lower-precision list)."""
    if not ACTIVE[0]:
        return values
    return _cast(values, _STATE.dtypes.get)


def fp32(*values):
    """The tensors among `values` in float32 when a block is enabled on their device (torch's float32 list)."""
    if not ACTIVE[0]:
        return values
    dtypes = _STATE.dtypes
    return _cast(values, lambda device: dt.float32 if device in dtypes else None)

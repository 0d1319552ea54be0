"""torch.utils.checkpoint's helpers from the reentrant variant (its CheckpointFunction sits in checkpoint.py):
detach_variable, check_backward_validity, and the device random states a recomputation restores (get_device_states,
set_device_states, DefaultDeviceType). tidal keeps one generator per device type, so every device of a
type shares that type's state."""
from __future__ import annotations

import warnings
from typing import Any, Iterable

from ..func._pytree import tree_flatten
from ..ops.random import rng as _rng
from ..tensor import Tensor

__all__ = ["detach_variable", "check_backward_validity", "get_device_states",
           "set_device_states", "DefaultDeviceType"]


def detach_variable(inputs: tuple) -> tuple:
    """`inputs` with each tensor detached, keeping its requires_grad."""
    if not isinstance(inputs, tuple):
        raise RuntimeError(f"Only tuple of tensors is supported. Got Unsupported input type: {type(inputs).__name__}")
    return tuple(x.detach().requires_grad_(x.requires_grad) if isinstance(x, Tensor) else x for x in inputs)


def check_backward_validity(inputs: Iterable[Any]) -> None:
    """Warn, as torch, when no input requires grad (a reentrant checkpoint would give no gradients)."""
    if not any(inp.requires_grad for inp in inputs if isinstance(inp, Tensor)):
        warnings.warn("None of the inputs have requires_grad=True. Gradients will be None", stacklevel=2)


class DefaultDeviceType:
    """The device type whose random state checkpoint saves when its inputs are all on the CPU."""

    _default_device_type: str | None = None

    @staticmethod
    def set_device_type(device: str = "cuda") -> None:
        """Set the default device type for checkpointing."""
        DefaultDeviceType._default_device_type = device

    @staticmethod
    def get_device_type() -> str:
        """The default device type: set_device_type's, else 'cpu' (torch picks the current accelerator, and
        tidal reports none to torch scripts: torch.cuda.is_available() is False)."""
        if not DefaultDeviceType._default_device_type:
            DefaultDeviceType._default_device_type = "cpu"
        return DefaultDeviceType._default_device_type


def get_device_states(*args) -> tuple[list, list]:
    """(device ids, random states) of the non-CPU devices holding the tensors in `args`, one per tensor."""
    ids, kinds = [], []
    for leaf in tree_flatten(args)[0]:
        if isinstance(leaf, Tensor) and leaf.device.type not in ("cpu", "meta"):
            ids.append(leaf.get_device())
            kinds.append(leaf.device.type)
    return ids, [_rng.default_for(kind).get_state() for kind in kinds]


def set_device_states(devices, states, *, device_type: str | None = None) -> None:
    """Restore the random states get_device_states returned."""
    device_type = device_type or DefaultDeviceType.get_device_type()
    if device_type == "meta":
        return
    for _, state in zip(devices, states):
        _rng.default_for(device_type).set_state(state)

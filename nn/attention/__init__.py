"""torch.nn.attention: which scaled-dot-product-attention backends may run (SDPBackend, sdpa_kernel).

tidal has one attention implementation (composed ops, fused by the VM); the switches keep torch's
bookkeeping and its refusal when every backend usable on the device is switched off: on the CPU
torch runs the math and flash backends only.
"""
from __future__ import annotations

import contextlib
import enum
from typing import Iterable, Iterator

from . import bias, flex_attention
from ._registry import (activate_flash_attention_impl, current_flash_attention_impl, list_flash_attention_impls,
                        register_flash_attention_impl, restore_flash_attention_impl)

__all__ = ["SDPBackend", "sdpa_kernel", "WARN_FOR_UNFUSED_KERNELS", "register_flash_attention_impl",
           "activate_flash_attention_impl", "list_flash_attention_impls", "current_flash_attention_impl",
           "restore_flash_attention_impl", "SDPAParams", "can_use_flash_attention", "can_use_efficient_attention"]

WARN_FOR_UNFUSED_KERNELS = False


class SDPBackend(enum.Enum):
    """The scaled-dot-product-attention backends, numbered as torch's."""

    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4

    def __int__(self) -> int:
        return self.value

    def __index__(self) -> int:
        return self.value

    def __str__(self) -> str:
        return f"SDPBackend.{self.name}"


# switch name (as torch.backends.cuda spells it) -> backend; the state torch keeps in torch._C
_NAMES = {"cudnn": SDPBackend.CUDNN_ATTENTION, "flash": SDPBackend.FLASH_ATTENTION,
          "mem_efficient": SDPBackend.EFFICIENT_ATTENTION, "math": SDPBackend.MATH,
          "overrideable": SDPBackend.OVERRIDEABLE}
ENABLED = {name: True for name in _NAMES}
_PRIORITY = [1, 2, 0, 3, 4]  # torch's default order: flash, efficient, math, cudnn, overrideable
# the backends that can run on each device type (torch's CPU kernels: math and a flash variant)
_USABLE = {"cpu": ("math", "flash")}


def priority_order() -> list:
    """The backends' priority order, as torch._C._get_sdp_priority_order()."""
    return list(_PRIORITY)


def _current(with_priority: bool = False) -> list:
    backends = [backend for name, backend in _NAMES.items() if ENABLED[name]]
    if with_priority:
        backends.sort(key=lambda b: _PRIORITY.index(int(b)))
    return backends


def _set(backends: Iterable, set_priority: bool = False) -> None:
    backends = list(backends)
    for name, backend in _NAMES.items():
        ENABLED[name] = backend in backends
    if set_priority:
        order = [int(b) for b in backends]
        _PRIORITY[:] = order + [b for b in _PRIORITY if b not in order]


def check_viable(device_type: str) -> None:
    """Raise torch's error when no backend usable on `device_type` is switched on."""
    usable = _USABLE.get(device_type, tuple(_NAMES))
    if not any(ENABLED[name] for name in usable):
        raise RuntimeError("No viable backend for scaled_dot_product_attention was found. This is likely due to "
                           "turning off both the math kernel and the fused kernels.")


@contextlib.contextmanager
def sdpa_kernel(backends: "list[SDPBackend] | SDPBackend", set_priority: bool = False) -> Iterator[dict]:
    """Allow only `backends` for scaled_dot_product_attention inside the `with` block."""
    if not isinstance(backends, (list, SDPBackend)):
        raise AssertionError("Backend must be an instance of SDPBackend or a list of SDPBackend instances, "
                             f"got {type(backends).__name__}")
    backends = list(dict.fromkeys([backends] if isinstance(backends, SDPBackend) else backends))
    previous = _current(with_priority=set_priority)
    try:
        _set(backends, set_priority)
        yield {}
    finally:
        _set(previous, set_priority)


class SDPAParams:
    """The arguments of one attention call, as the can_use_* checks take them."""

    def __init__(self, query, key, value, attn_mask, dropout: float, is_causal: bool, enable_gqa: bool = False):
        self.query, self.key, self.value, self.attn_mask = query, key, value, attn_mask
        self.dropout, self.is_causal, self.enable_gqa = dropout, is_causal, enable_gqa


def _fused_usable(params: SDPAParams, debug: bool, what: str) -> bool:
    # torch's fused kernels need CUDA (and its own builds); tidal runs none of them
    if debug:
        import warnings
        warnings.warn(f"{what} requires CUDA tensors and a build with the fused kernels; tidal runs the math "
                      "implementation", stacklevel=3)
    return False


def can_use_flash_attention(params: SDPAParams, debug: bool = False) -> bool:
    """Whether torch's fused flash-attention CUDA kernel could run these inputs: never in tidal."""
    return _fused_usable(params, debug, "Flash attention")


def can_use_efficient_attention(params: SDPAParams, debug: bool = False) -> bool:
    """Whether torch's memory-efficient CUDA kernel could run these inputs: never in tidal."""
    return _fused_usable(params, debug, "Memory-efficient attention")

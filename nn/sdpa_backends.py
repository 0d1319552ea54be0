"""The scaled-dot-product-attention backend switches (torch keeps them in torch._C): which backends may run, in
which priority, and torch's refusal when every backend usable on a device is off. torch.nn.attention's sdpa_kernel
and torch.backends.cuda's switches set them; F.scaled_dot_product_attention reads them."""
from __future__ import annotations

import enum
from typing import Iterable

__all__ = ["SDPBackend", "ENABLED", "priority_order", "check_viable"]


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

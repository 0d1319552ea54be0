"""torch.xpu on a machine without Intel GPUs, as a CPU-only torch build reports it: nothing is available, the
queries that need a device raise torch's AssertionError, the seeding and memory counters are harmless no-ops
(device-agnostic scripts call them unconditionally)."""
from __future__ import annotations

from typing import Any

__all__ = ["is_available", "device_count", "is_initialized", "init", "synchronize", "current_device", "set_device",
           "get_device_name", "get_device_properties", "get_device_capability", "current_stream", "mem_get_info",
           "get_rng_state", "set_rng_state", "empty_cache", "manual_seed", "manual_seed_all", "seed", "seed_all",
           "memory_allocated", "max_memory_allocated", "memory_reserved", "max_memory_reserved",
           "is_bf16_supported", "get_arch_list", "device"]


def _not_compiled(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("Torch not compiled with XPU enabled")


def is_available() -> bool:
    """False: tidal has no XPU backend."""
    return False


def device_count() -> int:
    """0 XPU devices."""
    return 0


def is_initialized() -> bool:
    """False: there is no XPU state to initialize."""
    return False


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """False without an XPU."""
    return False


def get_arch_list() -> list:
    """No XPU architectures are compiled in."""
    return []


def _nothing(*args: Any, **kwargs: Any) -> None:
    """A no-op (seeding or cache release with no XPU)."""
    return None


def _zero(device: Any = None) -> int:
    """0 bytes: no XPU memory is in use."""
    return 0


init = synchronize = current_device = set_device = get_device_name = _not_compiled
get_device_properties = get_device_capability = current_stream = mem_get_info = _not_compiled
get_rng_state = set_rng_state = _not_compiled
empty_cache = manual_seed = manual_seed_all = seed = seed_all = _nothing
memory_allocated = max_memory_allocated = memory_reserved = max_memory_reserved = _zero


class device:
    """Context manager selecting an XPU device (selecting one fails on entry, as torch's does)."""

    def __init__(self, device: Any) -> None:
        self.idx = device if isinstance(device, int) else -1

    def __enter__(self) -> None:
        if self.idx >= 0:
            _not_compiled()

    def __exit__(self, *exc: Any) -> bool:
        return False

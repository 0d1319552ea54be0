"""torch.mps on a machine without Apple's Metal backend, as torch reports it there: not available, no
devices, `manual_seed` a no-op, and every call that needs the backend raises torch's RuntimeError naming the
native function it could not execute."""
from __future__ import annotations

from typing import Any

__all__ = ["is_available", "device_count", "synchronize", "empty_cache", "manual_seed", "seed", "get_rng_state",
           "set_rng_state", "current_allocated_memory", "driver_allocated_memory", "recommended_max_memory",
           "set_per_process_memory_fraction"]


def is_available() -> bool:
    """False: tidal has no MPS backend."""
    return False


def device_count() -> int:
    """0 MPS devices."""
    return 0


def manual_seed(seed: int) -> None:
    """A no-op without the backend (torch's, too)."""
    return None


def _needs(native: str):
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(f"Cannot execute {native}() without MPS backend.")
    refuse.__doc__ = f"Refuses: {native} needs the MPS backend."
    return refuse


synchronize = _needs("deviceSynchronize")
empty_cache = _needs("emptyCache")
seed = get_rng_state = set_rng_state = _needs("getDefaultGenerator")
current_allocated_memory = _needs("getCurrentAllocatedMemory")
driver_allocated_memory = _needs("getDriverAllocatedMemory")
recommended_max_memory = _needs("getRecommendedMaxMemory")
set_per_process_memory_fraction = _needs("setMemoryFraction")

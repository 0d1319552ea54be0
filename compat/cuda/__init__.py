"""torch.cuda as a CPU-only torch build reports it: nothing is available, seeding and cache
calls are harmless, and calls that need a device raise torch's AssertionError."""
from __future__ import annotations

import collections
import contextlib
import warnings
from typing import Iterator

from ... import sync
from ...tensor.device import accelerator_count
from .._errors import OutOfMemoryError
from . import amp, graphs
from .graphs import CUDAGraph, graph, graph_pool_handle, is_current_stream_capturing, make_graphed_callables

__all__ = ["amp", "is_available", "device_count", "is_initialized", "init", "manual_seed", "manual_seed_all",
           "seed", "seed_all", "synchronize", "empty_cache", "current_device", "set_device", "get_device_name",
           "get_device_capability", "get_device_properties", "is_bf16_supported", "memory_allocated",
           "max_memory_allocated", "memory_reserved", "max_memory_reserved", "reset_peak_memory_stats",
           "memory_stats", "memory_stats_as_nested_dict", "memory_summary", "mem_get_info", "memory_cached",
           "max_memory_cached", "reset_max_memory_allocated", "reset_max_memory_cached", "get_rng_state_all",
           "set_rng_state_all",
           "get_arch_list", "device", "stream", "Stream", "Event", "graphs", "CUDAGraph", "graph",
           "make_graphed_callables", "graph_pool_handle", "is_current_stream_capturing", "OutOfMemoryError"]

_NOT_COMPILED = "Torch not compiled with CUDA enabled"


def _require_cuda():
    raise AssertionError(_NOT_COMPILED)


def device_count() -> int:
    """0: tidal's `cuda` device runs elementwise ops and transfers only, so a torch script's
    `"cuda" if torch.cuda.is_available() else "cpu"` must keep choosing the CPU."""
    return accelerator_count()


def is_available() -> bool:
    """Whether tidal can run on a CUDA device."""
    return device_count() > 0


def is_initialized() -> bool:
    """False: no CUDA context is ever created."""
    return False


def init() -> None:
    """Raise: there is no CUDA to initialise."""
    _require_cuda()


def manual_seed(seed: int) -> None:
    """Harmless without CUDA (as in torch: the call is queued for a device that never comes)."""
    int(seed)


manual_seed_all = manual_seed


def seed() -> None:
    """Harmless without CUDA."""


seed_all = seed


def synchronize(device=None) -> None:
    """Wait for all pending tidal work (there is no CUDA stream to wait for)."""
    sync()


def empty_cache() -> None:
    """Harmless without CUDA."""


def ipc_collect() -> None:
    """Harmless without CUDA."""


def current_device() -> int:
    """Raise: there is no current CUDA device."""
    _require_cuda()


def set_device(device) -> None:
    """Raise: there is no CUDA device to select."""
    _require_cuda()


def get_device_name(device=None) -> str:
    """Raise: there is no CUDA device."""
    _require_cuda()


def get_device_capability(device=None) -> tuple:
    """Raise: there is no CUDA device."""
    _require_cuda()


def get_device_properties(device=None):
    """Raise: there is no CUDA device."""
    _require_cuda()


def get_rng_state(device="cuda"):
    """Raise: there is no CUDA generator."""
    _require_cuda()


def set_rng_state(new_state, device="cuda") -> None:
    """Raise: there is no CUDA generator."""
    _require_cuda()


def initial_seed() -> int:
    """Raise: there is no CUDA generator."""
    _require_cuda()


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """False without CUDA."""
    return False


def _zero_bytes(device=None) -> int:
    """0: no CUDA memory is ever allocated."""
    return 0


memory_allocated = max_memory_allocated = memory_reserved = max_memory_reserved = _zero_bytes


def reset_peak_memory_stats(device=None) -> None:
    """Harmless without CUDA."""


def memory_stats(device=None) -> collections.OrderedDict:
    """The caching allocator's statistics: none without CUDA (an empty OrderedDict, as torch)."""
    return collections.OrderedDict()


def memory_stats_as_nested_dict(device=None) -> dict:
    """memory_stats as nested dicts: empty without CUDA."""
    return {}


def memory_summary(device=None, abbreviated: bool = False) -> str:
    """A readable summary of memory_stats (no CUDA memory is ever allocated)."""
    return "No CUDA memory is allocated: tidal's CUDA device is not in use by torch scripts.\n"


def mem_get_info(device=None) -> tuple:
    """(free, total) bytes of a CUDA device: there is none."""
    _require_cuda()


def _renamed(old: str, new: str, fn):
    def renamed(*args, **kwargs):
        warnings.warn(f"`torch.cuda.{old}` has been renamed to `torch.cuda.{new}`", FutureWarning, stacklevel=2)
        return fn(*args, **kwargs)
    renamed.__name__ = renamed.__qualname__ = old
    renamed.__doc__ = f"Deprecated name of {new}."
    return renamed


memory_cached = _renamed("memory_cached", "memory_reserved", memory_reserved)
max_memory_cached = _renamed("max_memory_cached", "max_memory_reserved", max_memory_reserved)


def reset_max_memory_allocated(device=None) -> None:
    """Deprecated: reset_peak_memory_stats (torch's FutureWarning)."""
    warnings.warn("torch.cuda.reset_max_memory_allocated now calls torch.cuda.reset_peak_memory_stats, which resets "
                  "/all/ peak memory stats.", FutureWarning, stacklevel=2)
    reset_peak_memory_stats(device)


def reset_max_memory_cached(device=None) -> None:
    """Deprecated: reset_peak_memory_stats (torch's FutureWarning)."""
    warnings.warn("torch.cuda.reset_max_memory_cached now calls torch.cuda.reset_peak_memory_stats, which resets "
                  "/all/ peak memory stats.", FutureWarning, stacklevel=2)
    reset_peak_memory_stats(device)


def get_rng_state_all() -> list:
    """The generator states of every CUDA device: none."""
    return []


def set_rng_state_all(new_states) -> None:
    """Set every CUDA device's generator state: there are none."""


def get_arch_list() -> list:
    """No CUDA architectures are built in."""
    return []


class device:
    """Context manager that would select a CUDA device; without CUDA it changes nothing."""

    def __init__(self, device):
        self.idx = device

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc) -> bool:
        return False


@contextlib.contextmanager
def stream(stream=None) -> Iterator[None]:
    """Context manager that would select a CUDA stream; only `None` makes sense without CUDA."""
    yield


class Stream:
    """A CUDA stream: cannot be created without CUDA."""

    def __init__(self, device=None, priority: int = 0, **kwargs):
        raise RuntimeError("torch.cuda.Stream requires CUDA support")


class Event:
    """A CUDA event: cannot be created without CUDA."""

    def __init__(self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False):
        raise RuntimeError("torch.cuda.Event requires CUDA support")


def current_stream(device=None):
    """Raise: there is no CUDA stream."""
    _require_cuda()

"""torch.accelerator: the device-agnostic view of the current accelerator.

The accelerator is CUDA exactly when compat's torch.cuda reports a device, so a script that picks
`torch.accelerator.current_accelerator()` lands where one picking `torch.cuda.is_available()` does.
Without one, every call behaves as on a CPU-only torch build: `current_accelerator()` is None and
calls that need a device raise its RuntimeError.
"""
from __future__ import annotations

import warnings

from .. import sync
from ..tensor import device as _device
from ..tensor import dtype as dt
from . import cuda

__all__ = ["current_accelerator", "current_device_idx", "current_device_index", "current_stream", "device_count",
           "device_index", "empty_cache", "get_memory_info", "is_available", "max_memory_allocated",
           "empty_host_cache", "get_device_capability", "max_memory_reserved", "memory_allocated",
           "memory_reserved", "memory_stats",
           "reset_accumulated_memory_stats", "reset_peak_memory_stats", "set_device_idx", "set_device_index",
           "set_stream", "synchronize"]

_NONE_AVAILABLE = "Cannot access accelerator device when none is available."


def _require() -> None:
    """Raise torch's error when there is no accelerator."""
    if not is_available():
        raise RuntimeError(_NONE_AVAILABLE)


def _index_of(device) -> int | None:
    """The device index a `device | str | int | None` argument names (None: the current one); a device
    of another type than the accelerator's raises torch's "Accelerator expected"."""
    if not isinstance(device, (str, _device)):
        return device
    dev = device if isinstance(device, _device) else _device(device)
    accelerator = current_accelerator()
    if accelerator is None or dev.type != accelerator.type:
        raise RuntimeError("Accelerator expected")
    return dev.index


def current_accelerator(check_available: bool = False) -> _device | None:
    """The accelerator's device type (device('cuda')), or None when there is none."""
    return _device("cuda") if cuda.is_available() else None


def is_available() -> bool:
    """Whether an accelerator is present and usable."""
    return current_accelerator() is not None


def device_count() -> int:
    """The number of accelerator devices (0 without one)."""
    return cuda.device_count() if is_available() else 0


def current_device_index() -> int:
    """The index of the current accelerator device."""
    _require()
    return cuda.current_device()


def current_device_idx() -> int:
    """Deprecated spelling of current_device_index."""
    warnings.warn("Use `current_device_index` instead.", FutureWarning, stacklevel=2)
    return current_device_index()


def set_device_index(device, /) -> None:
    """Make `device` the current accelerator device."""
    index = _index_of(device)
    if index is None:
        raise ValueError(f"Expected a torch.device with a specified index or an integer, but got:{device}")
    _require()
    cuda.set_device(index)


def set_device_idx(device, /) -> None:
    """Deprecated spelling of set_device_index."""
    warnings.warn("Use `set_device_index` instead.", FutureWarning, stacklevel=2)
    set_device_index(device)


def synchronize(device=None, /) -> None:
    """Wait for all work queued on the accelerator."""
    _index_of(device)
    _require()
    cuda.synchronize(device)
    sync()


def current_stream(device=None, /):
    """The current stream of the accelerator device."""
    _index_of(device)
    _require()
    return cuda.current_stream(device)


def set_stream(stream) -> None:
    """Make `stream` the current stream of its device."""
    _require()
    cuda.set_stream(stream)


def empty_cache() -> None:
    """Release the accelerator's cached, unused memory."""
    _require()
    cuda.empty_cache()


def empty_host_cache() -> None:
    """Release cached pinned host memory: tidal keeps no pinned host cache, so only the device check remains."""
    _require()


def get_device_capability(device=None, /) -> dict:
    """{"supported_dtypes": the dtypes tensors can have on the accelerator}."""
    _index_of(device)
    _require()
    return {"supported_dtypes": {d for d in vars(dt).values() if isinstance(d, dt.dtype)}}


def _memory(name: str):
    def query(device_index=None, /):
        _require()
        _index_of(device_index)
        return getattr(cuda, name)(device_index)
    query.__name__ = name
    query.__doc__ = f"torch.cuda.{name} of the accelerator device."
    return query


memory_allocated = _memory("memory_allocated")
max_memory_allocated = _memory("max_memory_allocated")
memory_reserved = _memory("memory_reserved")
max_memory_reserved = _memory("max_memory_reserved")
memory_stats = _memory("memory_stats")
reset_peak_memory_stats = _memory("reset_peak_memory_stats")
reset_accumulated_memory_stats = _memory("reset_accumulated_memory_stats")
get_memory_info = _memory("mem_get_info")


class device_index:
    """Context manager: make `device` the current accelerator device inside the block (None: no change)."""

    def __init__(self, device: int | None, /):
        self.idx = device
        self.prev_idx = -1

    def __enter__(self) -> None:
        if self.idx is not None:
            self.prev_idx = current_device_index()
            set_device_index(self.idx)

    def __exit__(self, *exc) -> bool:
        if self.idx is not None:
            set_device_index(self.prev_idx)
        return False

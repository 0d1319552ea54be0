"""The virtual machine: instructions, streams, fusion, allocation, counters.

Nothing here knows what an op means: it moves instructions, blobs and events.
"""
from __future__ import annotations

from . import codegen
from . import cpu as _cpu  # noqa: F401  registers the CPU backend
from . import meta as _meta  # noqa: F401  registers the meta backend (tensors without data)
from .blob import Blob, View, fresh_view
from .fusion import config as fusion_config
from .instruction import Instruction, compute_instruction
from . import machine as _machine
from . import intra_op, replay
from .machine import all_vms, get_mode, get_vm, limits as machine_limits, register_backend, set_mode

__all__ = ["Blob", "View", "Instruction", "get_vm", "set_mode", "get_mode", "register_backend",
           "stats", "reset_stats", "set_fusion", "get_fusion", "memory_stats", "empty_cache", "set_replay",
           "set_execution", "set_threads", "get_threads"]


class _DeviceBackends(dict):
    """The backend registry. Device types other than cpu load on first use (so `import tidal`
    stays light and `"cuda" in registry` means a usable device); an unavailable one is an error."""

    def __missing__(self, device_type: str):
        if device_type == "cuda":
            from . import cuda  # cuda (cupy, numba.cuda) loads on first use
            if cuda.register():
                return self[device_type]
            raise AssertionError("Torch not compiled with CUDA enabled")  # a CPU-only torch build's refusal
        raise RuntimeError(f"device type '{device_type}' is not available: tidal has no {device_type} "
                           "backend on this machine")


_machine._backends = _DeviceBackends(_machine._backends)


_SUMMED = ("instructions", "kernels", "fused_away", "allocations_avoided", "syncs", "replays",
           "inline_batches", "worker_batches", "waits_for_room")


def sync() -> None:
    """Wait for every instruction pushed so far on every device; re-raise kernel failures (tidal.sync)."""
    for machine in all_vms():
        machine.synchronize()


def stats() -> dict:
    """Counters summed over every device's VM: instructions, kernels, fusion, replayed windows,
    where batches ran (inline or worker), instructions in flight now and at most, memory."""
    out = dict.fromkeys(_SUMMED + ("in_flight", "max_in_flight", "allocations", "cache_hits", "bytes_in_use",
                                   "bytes_cached", "peak_bytes"), 0)
    for vm in all_vms():
        s = vm.stats
        for key in _SUMMED:
            out[key] += getattr(s, key)
        out["in_flight"] += vm.in_flight()
        out["max_in_flight"] = max(out["max_in_flight"], s.max_in_flight)
        for key, value in vm.allocator.stats().items():
            out[key] += value
        out["allocations"] += s.small_allocations  # small blobs: the backend's memory, not counted in bytes
    return out


def reset_stats() -> None:
    """Zero the counters (and restart peak-memory tracking) after finishing pending work."""
    for vm in all_vms():
        vm.synchronize()
        vm.stats.reset()
        vm.allocator.allocs = vm.allocator.cache_hits = 0
        vm.allocator.reset_peak()


def set_fusion(enabled: bool | None = None, max_group: int | None = None,
               compile_after: int | None = None, background_compile: bool | None = None,
               reductions: bool | None = None, compile_heat: float | None = None) -> None:
    """Turn elementwise fusion on or off, bound group size, set when groups get compiled (seen
    `compile_after` times, then, compiling in the background, once `compile_heat` seconds of NumPy
    time were spent on them), whether compiling happens on a background thread (NumPy runs the group
    meanwhile), and whether trailing reductions join their group."""
    for vm in all_vms():
        vm.synchronize()
    for key, value in (("enabled", enabled), ("max_group", max_group), ("compile_after", compile_after),
                       ("reductions", reductions)):
        if value is not None:
            setattr(fusion_config, key, value)
    for vm in all_vms():
        vm.windows.clear()  # templates were lowered under the old knobs
    if background_compile is not None:
        codegen.background = background_compile
    if compile_heat is not None:
        codegen.compile_heat = compile_heat


def get_fusion() -> dict:
    """The fusion knobs in force."""
    return {"enabled": fusion_config.enabled, "max_group": fusion_config.max_group,
            "compile_after": fusion_config.compile_after, "background_compile": codegen.background,
            "reductions": fusion_config.reductions, "compile_heat": codegen.compile_heat}


def set_replay(enabled: bool) -> None:
    """Turn window replay on or off (off: every window goes through the fusion pass)."""
    for vm in all_vms():
        vm.synchronize()
        vm.windows.clear()
    replay.enabled = enabled


def set_execution(inline_bytes: int | None = None, max_in_flight: int | None = None) -> None:
    """Where kernels run: batches touching at most `inline_bytes` run on the calling thread when the
    worker is idle (0: always the worker); at most `max_in_flight` instructions wait for a worker."""
    for vm in all_vms():
        vm.synchronize()
    if inline_bytes is not None:
        machine_limits.inline_bytes = inline_bytes
    if max_in_flight is not None:
        if max_in_flight < 2:
            raise ValueError(f"set_execution: max_in_flight must be at least 2, got {max_in_flight}")
        machine_limits.max_in_flight = max_in_flight


def set_threads(n: int) -> None:
    """Run large CPU kernels on at most `n` threads (1: every kernel on one thread; see vm/intra_op.py)."""
    for vm in all_vms():
        vm.synchronize()
    intra_op.set_threads(n)


def get_threads() -> int:
    """The thread count large CPU kernels use (1 where they cannot run in parallel)."""
    return intra_op.get_threads()


def memory_stats() -> dict:
    """Allocator statistics summed over devices."""
    return {k: v for k, v in stats().items() if k in ("allocations", "cache_hits", "bytes_in_use",
                                                       "bytes_cached", "peak_bytes")}


def empty_cache() -> None:
    """Give every cached buffer back."""
    for vm in all_vms():
        vm.synchronize()
        vm.allocator.empty_cache()


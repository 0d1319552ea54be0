"""torch.cpu: the CPU spelled like torch.cuda, for device-agnostic scripts (one device, one stream)."""
from __future__ import annotations

import functools
import os
import platform
from contextlib import AbstractContextManager
from types import MappingProxyType
from typing import Any, Mapping

from ... import sync
from . import amp

__all__ = ["is_available", "is_initialized", "synchronize", "current_device", "current_stream", "stream",
           "set_device", "device_count", "Stream", "StreamContext", "Event", "get_capabilities"]

# torch's capability names -> the flag /proc/cpuinfo spells (x86); the rest are the same word
_X86_FLAGS = {"sse3": "pni", "sse4_1": "sse4_1", "sse4_2": "sse4_2", "fma3": "fma", "bmi": "bmi1", "lzcnt": "abm",
              "avx512_f": "avx512f", "avx512_cd": "avx512cd", "avx512_dq": "avx512dq", "avx512_bw": "avx512bw",
              "avx512_vl": "avx512vl", "avx512_ifma": "avx512ifma", "avx512_vbmi": "avx512vbmi",
              "avx512_vbmi2": "avx512_vbmi2", "avx512_bitalg": "avx512_bitalg",
              "avx512_vpopcntdq": "avx512_vpopcntdq", "avx512_vnni": "avx512_vnni", "avx512_bf16": "avx512_bf16",
              "avx512_fp16": "avx512_fp16", "avx512_vp2intersect": "avx512_vp2intersect",
              "avx512_4vnniw": "avx512_4vnniw", "avx512_4fmaps": "avx512_4fmaps", "avx_vnni": "avx_vnni",
              "clflush": "clflush", "sha": "sha_ni", "amx_bf16": "amx_bf16", "amx_tile": "amx_tile",
              "amx_int8": "amx_int8", "amx_fp16": "amx_fp16"}
_X86_SAME = ("sse", "sse2", "ssse3", "sse4a", "avx", "avx2", "fma4", "f16c", "bmi2", "popcnt", "aes",
             "clflushopt", "clwb", "avx_vnni_int8", "avx_vnni_int16", "avx_ne_convert", "avx10_1", "avx10_2")


def _cpuinfo() -> tuple:
    """(flags, model name) from /proc/cpuinfo, empty where the system has none."""
    flags, name = set(), ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                key = key.strip()
                if key in ("flags", "Features") and not flags:
                    flags = set(value.split())
                elif key == "model name" and not name:
                    name = value.strip()
    except OSError:
        pass
    return flags, name


@functools.lru_cache(None)
def get_capabilities() -> Mapping[str, Any]:
    """The CPU's instruction-set features (read-only mapping), as torch.cpu.get_capabilities."""
    arch = platform.machine().lower()
    caps: dict = {"architecture": {"amd64": "x86_64", "arm64": "aarch64"}.get(arch, arch)}
    flags, name = _cpuinfo()
    if caps["architecture"] in ("x86_64", "i386", "i686"):
        caps.update({cap: flag in flags for cap, flag in _X86_FLAGS.items()})
        caps.update({cap: cap in flags for cap in _X86_SAME})
    else:
        caps.update({cap: cap in flags for cap in ("neon", "asimd", "sve", "sve2", "aes", "sha1", "sha2",
                                                   "atomics", "crc32", "pmull", "i8mm", "bf16")})
    caps["num_logical_cores"] = os.cpu_count() or 1
    if name:
        caps["cpu_name"] = name
    return MappingProxyType(caps)


def is_available() -> bool:
    """True: the CPU is always there."""
    return True


def is_initialized() -> bool:
    """True: the CPU needs no initialization."""
    return True


def synchronize(device=None) -> None:
    """Wait for every instruction pushed to the CPU's VM (the device argument is ignored: there is one)."""
    sync()


class Stream:
    """The CPU's one stream: exists for device-agnostic code, as torch's."""

    def __init__(self, priority: int = -1) -> None:
        pass

    def wait_stream(self, stream) -> None:
        """Nothing to wait for: CPU work is ordered already."""

    def record_event(self) -> None:
        """Nothing to record on the CPU."""

    def wait_event(self, event) -> None:
        """Nothing to wait for on the CPU."""


class Event:
    """A CPU event: always complete, as torch's."""

    def query(self) -> bool:
        """True: CPU events are complete at once."""
        return True

    def record(self, stream=None) -> None:
        """Nothing to record on the CPU."""

    def synchronize(self) -> None:
        """Nothing to wait for on the CPU."""

    def wait(self, stream=None) -> None:
        """Nothing to wait for on the CPU."""


_default_stream = Stream()
_current = [_default_stream]


def current_stream(device=None) -> Stream:
    """The selected CPU stream (the device argument is ignored)."""
    return _current[0]


class StreamContext(AbstractContextManager):
    """Select a CPU stream inside a `with` block."""

    def __init__(self, stream: Stream | None):
        self.stream = stream
        self.prev_stream = _default_stream

    def __enter__(self):
        if self.stream is not None:
            self.prev_stream, _current[0] = _current[0], self.stream

    def __exit__(self, *exc: Any) -> None:
        if self.stream is not None:
            _current[0] = self.prev_stream


def stream(stream: Stream | None) -> AbstractContextManager:
    """A context manager selecting `stream`."""
    return StreamContext(stream)


def device_count() -> int:
    """1: the CPU counts as one device (not its cores)."""
    return 1


def set_device(device) -> None:
    """Nothing to do: there is one CPU device."""


def current_device() -> str:
    """'cpu'."""
    return "cpu"

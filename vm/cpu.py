"""The CPU memory backend: NumPy byte buffers and strided array views over them."""
from __future__ import annotations

import os

import numpy as np

from .blob import _strides_cache  # row-major strides by shape (contiguous_strides' cache)
from .machine import register_backend

_ndarray = np.ndarray
_empty = np.empty


class CpuBackend:
    """Memory for `cpu`: raw buffers are uint8 NumPy arrays.

    A small blob (at most `small_bytes`) takes its memory straight from NumPy when first written,
    as the array its view describes: a caching allocator buys nothing at that size (malloc reuses
    small blocks itself) and costs a lock, counters and a finalizer per tensor, about half the
    host cost of a tiny op. Larger blobs go through the VM's caching allocator, which counts them.
    (Every backend declares `small_bytes`; the VM reads it on each allocation, so setting it here
    changes every CPU VM.)
    """

    small_bytes = int(os.environ.get("TIDAL_SMALL_BYTES", str(1 << 16)))

    def __init__(self, device):
        self.device = device

    @staticmethod
    def own(v) -> np.ndarray:
        """Give `v`'s small unallocated blob its memory from NumPy; returns `v`'s array."""
        blob = v.blob
        arr = _empty(v.shape, v.dtype)
        if arr.nbytes == blob.nbytes and v.offset == 0 and v.strides == _strides_cache.get(v.shape):
            blob.data = v.array = arr  # the view is the whole blob (the usual case): its array
            return arr
        blob.data = _empty(blob.nbytes, np.uint8)
        return CpuBackend.array(v)

    @staticmethod
    def check_size(nbytes: int) -> None:
        """Refuse a buffer larger than the machine's memory and swap (the OS would refuse it at first write),
        in the words of torch's CPU allocator."""
        if nbytes > _host_bytes():
            raise RuntimeError(f"[enforce fail at alloc_cpu.cpp:127] err == 0. DefaultCPUAllocator: can't allocate "
                               f"memory: you tried to allocate {nbytes} bytes. Error code 12 (Cannot allocate memory)")

    @staticmethod
    def raw_alloc(nbytes: int):
        """A fresh uninitialised buffer."""
        return np.empty(nbytes, np.uint8)

    @staticmethod
    def size_of(buf) -> int:
        """The byte size of a buffer."""
        return buf.shape[0]

    @staticmethod
    def array(v) -> np.ndarray:
        """The NumPy array a view describes (shares the blob's memory; cached on the view)."""
        arr = v.array
        if arr is not None:
            return arr
        item = v.dtype.itemsize
        if 0 in v.shape:  # an empty view may point past its buffer, as PyTorch allows
            return np.empty(v.shape, v.dtype)
        key = (v.strides, item)
        strides = _byte_strides.get(key)
        if strides is None:
            strides = tuple(s * item for s in v.strides)
            if len(_byte_strides) < 65536:
                _byte_strides[key] = strides
        arr = v.array = _ndarray(v.shape, v.dtype, v.blob.data, v.offset * item, strides)
        return arr


_byte_strides: dict = {}  # (element strides, itemsize) -> byte strides
_HOST_BYTES: list = []  # physical memory plus swap, read once


def _host_bytes() -> int:
    if not _HOST_BYTES:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        try:
            with open("/proc/meminfo") as f:
                total += next((int(line.split()[1]) * 1024 for line in f if line.startswith("SwapTotal:")), 0)
        except OSError:
            pass
        _HOST_BYTES.append(total)
    return _HOST_BYTES[0]


register_backend("cpu", CpuBackend)

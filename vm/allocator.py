"""A caching allocator: freed blocks are kept per size class and handed out again."""
from __future__ import annotations

import sys
import threading

_SMALL = 512
_classes: dict = {}  # nbytes -> size class (computed once per size)


def size_class(nbytes: int) -> int:
    """Round up to 512 bytes, or to a quarter step between powers of two (at most 25% waste)."""
    if nbytes <= _SMALL:
        return _SMALL
    top = 1 << (nbytes - 1).bit_length()
    step = top >> 3  # quarter steps of the lower power of two
    return (nbytes + step - 1) // step * step


class CachingAllocator:
    """Allocates device buffers through `raw_alloc` and caches freed ones by size class."""

    def __init__(self, raw_alloc, size_of):
        self._raw_alloc = raw_alloc
        self._size_of = size_of
        self._free: dict[int, list] = {}
        self._lock = threading.Lock()
        self.in_use = 0
        self.cached = 0
        self.peak = 0
        self.allocs = 0
        self.cache_hits = 0
        self.limit = 1 << 30  # cached bytes kept before the cache is trimmed
        self._lent: list = []  # freed buffers a NumPy view still shared; reclaimed once it dies

    def alloc(self, nbytes: int):
        """A buffer of at least `nbytes`, from the cache when one of its class is free."""
        cls = _classes.get(nbytes)
        if cls is None:
            cls = size_class(nbytes)
            if len(_classes) < 65536:
                _classes[nbytes] = cls
        with self._lock:
            self.allocs += 1
            bucket = self._free.get(cls)
            if bucket:
                buf = bucket.pop()
                self.cache_hits += 1
                self.cached -= cls
            else:
                buf = self._reclaim(cls)
            self.in_use += cls
            if self.in_use > self.peak:
                self.peak = self.in_use
        if buf is None:
            try:
                buf = self._raw_alloc(cls)
            except MemoryError:
                self.empty_cache()
                buf = self._raw_alloc(cls)
        return buf

    def free(self, buf, _refcount=sys.getrefcount) -> None:
        """Take a buffer back; it is cached unless the program still holds a view of it."""
        cls = self._size_of(buf)
        # 3 = the blob's slot, our argument and getrefcount's own: more means a live
        # NumPy view from .numpy() still shares this memory, so it must not be reused.
        # (getrefcount is bound at definition: blobs die during interpreter shutdown too,
        # after module globals such as `sys` are gone.)
        shared = _refcount(buf) > 3
        with self._lock:
            self.in_use -= cls
            if shared:
                if len(self._lent) < 64:
                    self._lent.append(buf)
                return
            if self.cached + cls > self.limit:
                return
            self._free.setdefault(cls, []).append(buf)
            self.cached += cls

    def _reclaim(self, cls: int):
        # A lent buffer whose last outside view has died can be reused (2 = the list + argument).
        lent = self._lent
        for k in range(len(lent) - 1, -1, -1):
            if sys.getrefcount(lent[k]) == 2:
                buf = lent.pop(k)
                if self._size_of(buf) == cls:
                    self.cache_hits += 1
                    return buf
                self._free.setdefault(self._size_of(buf), []).append(buf)
                self.cached += self._size_of(buf)
        return None

    def empty_cache(self) -> None:
        """Drop every cached buffer."""
        with self._lock:
            self._free.clear()
            self._lent.clear()
            self.cached = 0

    def stats(self) -> dict:
        """Bytes in use, cached and at peak; allocation and cache-hit counts."""
        return {"bytes_in_use": self.in_use, "bytes_cached": self.cached, "peak_bytes": self.peak,
                "allocations": self.allocs, "cache_hits": self.cache_hits}

    def reset_peak(self) -> None:
        """Start peak tracking afresh from the current use."""
        self.peak = self.in_use

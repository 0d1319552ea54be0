"""Blobs (device memory, allocated when first written) and views into them."""
from __future__ import annotations


class Blob:
    """A block of device memory: `nbytes`, its buffer once allocated, and its last writer."""

    __slots__ = ("nbytes", "vm", "data", "writer", "error", "external", "version", "__weakref__")

    def __init__(self, nbytes: int, vm, data=None, external: bool = False):
        self.nbytes = nbytes
        self.vm = vm
        self.data = data          # device buffer, or None until an instruction writes it
        self.writer = None        # (stream, seq) of the last instruction that writes it
        self.error = None         # the exception of a failed writer, passed on to readers
        self.external = external  # memory the program lent us (from_numpy): never cached
        self.version = 0          # bumped by every in-place write, shared by all views

    def __del__(self):
        if self.data is not None and not self.external:
            self.vm.allocator.free(self.data)  # no local: the allocator counts references


class View:
    """A strided window into a blob: shape, strides and offset in elements, NumPy dtype."""

    __slots__ = ("blob", "shape", "strides", "offset", "dtype", "array", "__weakref__")

    def __init__(self, blob: Blob, shape: tuple, strides: tuple, offset: int, dtype):
        self.array = None  # the device array over this view, built once the blob has memory
        self.blob = blob
        self.shape = shape
        self.strides = strides
        self.offset = offset
        self.dtype = dtype

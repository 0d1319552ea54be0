"""Blobs (device memory, allocated when first written) and views into them."""
from __future__ import annotations

_strides_cache: dict = {}


def contiguous_strides(shape: tuple) -> tuple:
    """Row-major strides, in elements, for `shape`."""
    hit = _strides_cache.get(shape)
    if hit is None:
        strides, acc = [], 1
        for s in reversed(shape):
            strides.append(acc)
            acc *= max(s, 1)
        hit = tuple(reversed(strides))
        if len(_strides_cache) < 4096:
            _strides_cache[shape] = hit
    return hit


def numel_of(shape: tuple) -> int:
    """The number of elements of `shape`."""
    n = 1
    for s in shape:
        n *= s
    return n


class Blob:
    """A block of device memory: `nbytes`, its buffer once allocated, and its last writer.

    A blob whose memory the program lent us (from_numpy), or that never got memory (a dead
    temporary the fusion pass kept in registers), needs nothing when it dies; `hold` turns a blob
    into a HeldBlob, which gives its buffer back to the allocator then. Most temporaries of a
    fused program are never allocated, so they die without a Python-level finalizer.
    """

    __slots__ = ("nbytes", "vm", "data", "writer", "error", "version", "lent", "__weakref__")

    def __init__(self, nbytes: int, vm, data=None):
        if data is None and nbytes >= LARGE:
            refuse_impossible(nbytes, vm)
        self.nbytes = nbytes
        self.vm = vm
        self.data = data          # device buffer, or None until an instruction writes it
        self.writer = None        # (stream, seq) of the last instruction that writes it
        self.error = None         # the exception of a failed writer, passed on to readers
        self.version = 0          # bumped by every in-place write, shared by all views
        self.lent = 0             # how many of the program's own arrays alias it (VirtualMachine.lend)

    def hold(self, buf) -> None:
        """Give the blob memory from its VM's allocator, returned to it when the blob dies."""
        self.data = buf
        self.__class__ = HeldBlob


class HeldBlob(Blob):
    """A blob owning allocator memory (see Blob)."""

    __slots__ = ()

    def __del__(self):
        self.vm.allocator.free(self.data)  # no local: the allocator counts references


_new = object.__new__
LARGE = 1 << 30  # blobs from this size are checked against what the device can ever hold


def refuse_impossible(nbytes: int, vm) -> None:
    """The device backend's error for a blob it can never hold (a backend without `check_size`, such as
    meta, holds any size)."""
    check = getattr(vm.backend, "check_size", None)
    if check is not None:
        check(nbytes)


def fresh_view(nbytes: int, vm, shape: tuple, strides: tuple, np_dtype, layout=None) -> "View":
    """A view over a new unallocated blob of `nbytes`, as `View(Blob(nbytes, vm), shape, strides, 0,
    np_dtype)` with its `layout` given: every op result is one, so both are made without their
    constructors' call overhead (about a third of an op's object cost).
    A size the device can never hold is refused here, at the op's call, not at its first write."""
    if nbytes >= LARGE:
        refuse_impossible(nbytes, vm)
    return view_of(fresh_blob(nbytes, vm), shape, strides, 0, np_dtype, layout)


def view_of(blob: Blob, shape: tuple, strides: tuple, offset: int, np_dtype, layout=None) -> "View":
    """`View(blob, shape, strides, offset, np_dtype)` with its `layout` given, made without the constructor's call
    (every op result, through fresh_view; autograd's backward replay). Keep in step with View.__init__."""
    v = _new(View)
    v.array = None
    v.layout = layout
    v.blob = blob
    v.shape = shape
    v.strides = strides
    v.offset = offset
    v.dtype = np_dtype
    return v


def fresh_blob(nbytes: int, vm) -> Blob:
    """`Blob(nbytes, vm)` without the constructor's call (the size already known to fit). Keep in step with
    Blob.__init__."""
    b = _new(Blob)
    b.nbytes = nbytes
    b.vm = vm
    b.data = b.writer = b.error = None
    b.version = b.lent = 0
    return b


class View:
    """A strided window into a blob: shape, strides and offset in elements, NumPy dtype."""

    # `array` first: a dying view drops its array before its blob, so the blob's buffer goes back
    # to the allocator unshared (slots are cleared in this order)
    __slots__ = ("array", "blob", "shape", "strides", "offset", "dtype", "layout", "__weakref__")

    def __init__(self, blob: Blob, shape: tuple, strides: tuple, offset: int, dtype):
        self.array = None  # the device array over this view, built once the blob has memory
        self.layout = None  # (shape, strides, offset, dtype number): replay signatures, built once
        self.blob = blob
        self.shape = shape
        self.strides = strides
        self.offset = offset
        self.dtype = dtype

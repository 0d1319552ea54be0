"""Tensors in shared memory: Tensor.share_memory_ / is_shared, passed to other processes by name.

torch.multiprocessing's Hogwild training (pytorch/examples mnist_hogwild) calls model.share_memory() and
hands the model to worker processes, which update its parameters in place; the parent then sees the trained
weights. share_memory_ moves a CPU tensor's values into a file under /dev/shm (the tensor keeps its
identity, as `.data` assignment keeps it), and multiprocessing's pickler sends such a tensor as that file's
name, so the receiving process maps the same memory. The process that shared it removes the file when the
memory is freed or the process exits; other tensors still pickle by value.
"""
from __future__ import annotations

import atexit
import mmap
import os
import tempfile
import weakref

import numpy as np

from ...tensor import Tensor
from ...tensor import dtype as dt

__all__: list = []

_SHARED: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # blob -> (shared file, byte where blob starts)
_OWNED: set = set()  # files this process made (removed at exit)
_registered: set = set()  # tensor classes multiprocessing's pickler sends by name


def _directory() -> str:
    return "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else tempfile.gettempdir()


def _map(path: str, nbytes: int) -> np.ndarray:
    with open(path, "r+b") as f:
        mapped = mmap.mmap(f.fileno(), max(nbytes, 1))
    return np.frombuffer(mapped, np.uint8, count=nbytes)


def _remove(path: str) -> None:
    _OWNED.discard(path)
    try:
        os.unlink(path)
    except OSError:
        pass


@atexit.register
def _remove_all() -> None:
    for path in list(_OWNED):
        _remove(path)


def is_shared(self: Tensor) -> bool:
    """Whether this tensor's memory is shared with other processes (after share_memory_)."""
    return self.device.type == "cpu" and self._v.blob in _SHARED


def share_memory_(self: Tensor) -> Tensor:
    """Move this tensor's values into shared memory, in place; a no-op when already there (or not on the CPU)."""
    if is_shared(self) or self.device.type != "cpu":
        return self
    values = np.ascontiguousarray(self.detach()._host_array())
    fd, path = tempfile.mkstemp(prefix="tidal_shm_", dir=_directory())
    with os.fdopen(fd, "wb") as f:
        f.truncate(max(values.nbytes, 1))
    _OWNED.add(path)
    memory = _map(path, values.nbytes)
    memory[:] = values.reshape(-1).view(np.uint8)
    shared = Tensor._from_array(memory.view(values.dtype).reshape(values.shape), self.dtype, share=True)
    _SHARED[shared._v.blob] = (path, 0)
    weakref.finalize(shared._v.blob, _remove, path)
    self.data = shared
    _register(type(self))
    return self


def _register(cls: type) -> None:
    """Have multiprocessing's pickler send shared tensors of `cls` by file name."""
    if cls in _registered:
        return
    from multiprocessing.reduction import ForkingPickler
    ForkingPickler.register(cls, _reduce)
    _registered.add(cls)


def _reduce(t: Tensor):
    where = _SHARED.get(t._v.blob) if t.device.type == "cpu" else None
    if where is None:
        return type(t).__reduce_ex__(t, 4)  # not shared: by value, as pickle sends it
    path, start = where
    v = t._v
    return (_attach, (path, start + v.offset * t.dtype.itemsize, tuple(v.shape), tuple(v.strides), t.dtype.name,
                      t.requires_grad, type(t)))


def _attach(path: str, start: int, shape: tuple, strides: tuple, dtype_name: str, requires_grad: bool,
            cls: type) -> Tensor:
    """The tensor another process shared: a view of the same memory, shared from here on too."""
    d = dt.from_name(dtype_name)
    memory = _map(path, os.path.getsize(path))
    item = d.itemsize
    span = 1 + sum((n - 1) * s for n, s in zip(shape, strides)) if all(shape) else 0
    array = np.lib.stride_tricks.as_strided(memory[start:start + span * item].view(d.np), shape,
                                            tuple(s * item for s in strides))
    t = Tensor._from_array(array, d, share=True)
    _SHARED[t._v.blob] = (path, start)
    if cls is not Tensor:  # nn.Parameter and the like: rebuilt around the shared tensor
        return cls(t, requires_grad)
    return t.requires_grad_() if requires_grad else t


METHODS = {"share_memory_": share_memory_, "is_shared": is_shared}

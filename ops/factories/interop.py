"""Tensors from other libraries' memory and back: asarray, frombuffer, from_dlpack/to_dlpack and the
DLPack protocol methods (`__dlpack__`, `__dlpack_device__`).

Memory is shared as torch shares it: NumPy arrays, Python buffers and DLPack producers on the CPU become
tidal tensors over the same bytes (through `Tensor._from_array(share=True)`), and tidal tensors hand their
host memory to DLPack consumers (NumPy's `from_dlpack`, torch's). Read-only buffers (bytes) are copied: tidal
kernels write into a tensor's memory, which torch merely warns about there.
"""
from __future__ import annotations

import numbers

import numpy as np

from ...tensor import Tensor
from ...tensor import device as _device
from ...tensor import dtype as dt
from ..elementwise.plans import torch_name
from .from_data import tensor as _tensor

__all__ = ["asarray", "frombuffer", "from_dlpack", "to_dlpack"]
METHODS: dict = {}

_KDLCPU = 1  # DLPack's device type for host memory


def _shared(arr: np.ndarray, dtype: dt.dtype | None = None) -> Tensor:
    if not arr.flags.writeable:  # tidal would write into it: copy instead (see the module docstring)
        return Tensor._from_array(arr.copy(), dtype, share=True)
    out = Tensor._from_array(arr, dtype, share=True)
    out._vm.lend(out._v.blob)  # the program reaches this memory too: ops on it run at their call
    return out


def _requires_grad(t: Tensor, requires_grad: bool) -> Tensor:
    if requires_grad and not (t.dtype.is_floating_point or t.dtype.is_complex):
        raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")  # factories'
    return t.requires_grad_(True) if requires_grad else t


# -- frombuffer --------------------------------------------------------------------------------------
def frombuffer(buffer, *, dtype: dt.dtype | None = None, count: int = -1, offset: int = 0,
               requires_grad: bool = False) -> Tensor:
    """A 1-D tensor over the bytes of a Python buffer (bytearray, memoryview, array.array...), from `offset`
    bytes on, `count` elements (all that fit when -1); it shares the buffer's memory."""
    if dtype is None:
        raise TypeError('frombuffer() missing 1 required positional arguments: "dtype"')
    raw = np.frombuffer(buffer, dtype=np.uint8)
    length, item = raw.shape[0], dtype.itemsize
    if length == 0 or count == 0:
        raise ValueError(f"both buffer length ({length}) and count ({count}) must not be 0")
    if offset < 0 or offset >= length:
        raise ValueError(f"offset ({offset} bytes) must be non-negative and no greater than buffer length "
                         f"({length} bytes) minus 1")
    if count < 0:
        if (length - offset) % item:
            raise ValueError(f"buffer length ({length - offset} bytes) after offset ({offset} bytes) must be a "
                             f"multiple of element size ({item})")
        count = (length - offset) // item
    elif count * item > length - offset:
        raise ValueError(f"requested buffer length ({count} * {item} bytes) after offset ({offset} bytes) must not "
                         f"be greater than actual buffer length ({length} bytes)")
    arr = raw[offset:offset + count * item].view(dtype.np)
    return _requires_grad(_shared(arr, dtype), requires_grad)


# -- DLPack ---------------------------------------------------------------------------------------------
def _dlpack(self: Tensor, *, stream=None, max_version=None, dl_device=None, copy=None):
    """A DLPack capsule over this tensor's host memory (waits for pending work)."""
    if self.requires_grad:
        raise BufferError("Can't export tensors that require gradient, use tensor.detach()")
    if self.device.type != "cpu":
        raise BufferError(f"tidal exports only CPU tensors through DLPack, not {self.device.type} ones")
    arr = self._lent_array()
    kwargs = {} if max_version is None else {"max_version": max_version}
    if copy is not None:
        kwargs["copy"] = copy
    if dl_device is not None:
        kwargs["dl_device"] = dl_device
    return arr.__dlpack__(**kwargs)


def _dlpack_device(self: Tensor) -> tuple:
    """(device type, index) in DLPack's numbering."""
    if self.device.type != "cpu":
        return (2, self.device.index or 0)  # kDLCUDA
    return (_KDLCPU, 0)


METHODS.update(__dlpack__=_dlpack, __dlpack_device__=_dlpack_device)


class _Capsule:
    """A bare (legacy) DLPack capsule dressed as a producer, so NumPy can consume it."""

    def __init__(self, capsule):
        self.capsule = capsule

    def __dlpack__(self, **kwargs):
        return self.capsule

    def __dlpack_device__(self) -> tuple:
        return (_KDLCPU, 0)


def from_dlpack(ext_tensor, *, device=None, copy: bool | None = None) -> Tensor:
    """A tensor sharing the memory of a DLPack producer (an object with `__dlpack__`, or a capsule); with
    `copy=True` a copy, and with `device` the tensor moved there."""
    out = _from_dlpack(ext_tensor, bool(copy))
    if device is not None:
        out = out.to(_device(device))
    return out


def _from_dlpack(ext_tensor, copy: bool) -> Tensor:
    if isinstance(ext_tensor, Tensor):
        return ext_tensor.detach().clone() if copy else ext_tensor.detach()
    if not hasattr(ext_tensor, "__dlpack__"):
        if type(ext_tensor).__name__ != "PyCapsule":
            raise TypeError(f"from_dlpack: expected an object with __dlpack__ or a DLPack capsule, got "
                            f"{type(ext_tensor).__name__}")
        ext_tensor = _Capsule(ext_tensor)
    device = ext_tensor.__dlpack_device__()
    if int(device[0]) != _KDLCPU:
        raise BufferError(f"tidal imports only host (CPU) memory through DLPack, not device type {device[0]}")
    array = np.from_dlpack(ext_tensor)
    # a copy is taken now, on the host: a VM clone would run later, after the producer may have changed it
    return _shared(array.copy() if copy else array)


def to_dlpack(tensor: Tensor):
    """A DLPack capsule over the tensor's memory (consumed once, e.g. by torch.from_dlpack)."""
    return _dlpack(tensor)


# -- asarray -------------------------------------------------------------------------------------------
def _alias_error(have: dt.dtype, want: dt.dtype) -> ValueError:
    return ValueError(f"can't alias tensor with dtype '{torch_name(have)}' into dtype '{torch_name(want)}'.")


def asarray(obj, *, dtype: dt.dtype | None = None, device=None, copy: bool | None = None,
            requires_grad: bool = False) -> Tensor:
    """obj as a tensor, sharing its memory when it can (tensors, NumPy arrays, DLPack producers, Python
    buffers) unless `copy`; copy=False refuses where sharing is impossible."""
    dev = None if device is None else _device(device)
    if isinstance(obj, Tensor):
        same = (dtype is None or dtype is obj.dtype) and (dev is None or dev == obj.device)
        if not same and copy is False:
            raise _alias_error(obj.dtype, dtype or obj.dtype)
        out = obj.to(dtype=dtype or obj.dtype, device=dev or obj.device)
        out = out.clone() if copy and out is obj else out
        return _requires_grad(out, requires_grad)
    if isinstance(obj, np.generic):
        obj = np.asarray(obj)
    # foreign memory is copied on the host when asked: tidal's own clone would run later, after the caller
    # may have written to the source
    if isinstance(obj, np.ndarray) or (hasattr(obj, "__dlpack__") and not isinstance(obj, (list, tuple))):
        arr = obj if isinstance(obj, np.ndarray) else from_dlpack(obj).numpy()
        shared = _shared(arr.copy() if copy else arr)
        return asarray(shared, dtype=dtype, device=device, copy=None if copy else copy, requires_grad=requires_grad)
    if isinstance(obj, (bytes, bytearray, memoryview)) or _is_buffer(obj):
        shared = frombuffer(bytearray(obj) if copy else obj, dtype=dtype or dt.get_default_dtype())
        return asarray(shared, device=device, copy=None if copy else copy, requires_grad=requires_grad)
    if copy is False:
        raise ValueError("can't alias arbitrary sequence into a tensor.")
    if not isinstance(obj, (numbers.Number, list, tuple)):
        obj = np.asarray(obj)
    return _requires_grad(_tensor(obj, dtype=dtype, device=dev), requires_grad)


def _is_buffer(obj) -> bool:
    if isinstance(obj, (str, list, tuple, numbers.Number)):
        return False
    try:
        memoryview(obj)
    except TypeError:
        return False
    return True

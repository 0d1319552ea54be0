"""The CPU memory backend: NumPy byte buffers and strided array views over them."""
from __future__ import annotations

import numpy as np

from .machine import register_backend

_ndarray = np.ndarray


class CpuBackend:
    """Memory for `cpu`: raw buffers are uint8 NumPy arrays."""

    def __init__(self, device):
        self.device = device

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


register_backend("cpu", CpuBackend)

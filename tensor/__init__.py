"""Tensors, dtypes, devices and printing."""
from . import dtype
from .device import cpu, device
from .tensor import Size, Tensor, contiguous_strides, numel_of

__all__ = ["Tensor", "Size", "device", "cpu", "dtype", "contiguous_strides", "numel_of"]

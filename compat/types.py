"""torch.types: the type aliases torch annotates with (Device, Number, _size...), over tidal's types."""
from __future__ import annotations

import os
from typing import IO, Any, Sequence, Union

from ..tensor import Size, Tensor
from ..tensor import device as _device
from ..tensor import dtype as _dtype_module
from ..tensor.layout import layout as _layout

_dtype = _dtype_module.dtype
_int, _float, _bool, _complex, _str, _bytes = int, float, bool, complex, str, bytes
_size = Union[Size, list, tuple]
_symsize = _size
SymInt, SymFloat, SymBool = int, float, bool  # tidal has no symbolic shapes: the plain numbers stand in
IntLikeType, FloatLikeType, BoolLikeType = Union[int, SymInt], Union[float, SymFloat], Union[bool, SymBool]
py_sym_types = (SymInt, SymFloat, SymBool)
PySymType = Union[SymInt, SymFloat, SymBool]
_Number = (bool, int, float)
Number = Union[int, float, bool]
Device = Union[_device, str, int, None]
_TensorOrTensors = Union[Tensor, Sequence[Tensor]]
_TensorOrOptionalTensors = Union[Tensor, Sequence[Union[Tensor, None]]]
_TensorOrTensorsOrGradEdge = Union[Tensor, Sequence[Tensor], Any]
FileLike = Union[str, os.PathLike, IO[bytes]]
Storage = Any  # tidal exposes no storage classes

__all__ = ["Number", "Device", "FileLike", "Storage", "SymInt", "SymFloat", "SymBool", "IntLikeType",
           "FloatLikeType", "BoolLikeType", "PySymType", "py_sym_types", "Size", "Tensor"]

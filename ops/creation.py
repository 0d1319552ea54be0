"""Creation functions: tensor, as_tensor, from_numpy, zeros/ones/full/empty and friends."""
from __future__ import annotations

import numpy as np

from ..tensor import Tensor, device as _device
from ..tensor import dtype as dt
from .math_api import fill_

__all__ = ["tensor", "as_tensor", "from_numpy", "zeros", "ones", "full", "empty"]
METHODS: dict = {}


def _resolve_device(device) -> object:
    return _device("cpu") if device is None else _device(device)


def _shape_arg(name: str, size) -> tuple:
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    for s in size:
        if isinstance(s, bool) or not isinstance(s, (int, np.integer)):
            raise TypeError(f"{name}(): argument 'size' must be tuple of ints, but found element of type "
                            f"{type(s).__name__}")
        if s < 0:
            raise RuntimeError(f"{name}(): Trying to create tensor with negative dimension {s}: {list(size)}")
    return tuple(int(s) for s in size)


def _infer_dtype(data) -> dt.dtype:
    arr = np.asarray(data)
    if arr.dtype.kind == "f":
        return dt.get_default_dtype() if not isinstance(data, np.ndarray) else dt.from_numpy(arr.dtype)
    if arr.dtype.kind in "iu" and not isinstance(data, np.ndarray):
        return dt.int64
    return dt.from_numpy(arr.dtype)


def _to_array(data):
    if isinstance(data, Tensor):
        return data.detach()._host_array()
    if isinstance(data, (list, tuple)) and any(isinstance(x, Tensor) for x in data):
        return np.stack([_to_array(x) for x in data]) if data else np.asarray(data)
    return data


def tensor(data, *, dtype: dt.dtype | None = None, device=None, requires_grad: bool = False,
           pin_memory: bool = False) -> Tensor:
    """A new tensor holding a copy of `data` (nested lists, numbers, arrays, tensors)."""
    data = _to_array(data)
    if isinstance(data, (list, tuple)):
        flat = data
        while isinstance(flat, (list, tuple)) and flat:
            flat = flat[0]
        if isinstance(flat, str):
            raise TypeError(f"new(): invalid data type '{type(flat).__name__}'")
    try:
        inferred = _infer_dtype(data) if dtype is None else dtype
        arr = np.array(data, dtype=inferred.np if inferred.np.kind != "V" else np.float32)
    except (ValueError, TypeError) as exc:
        raise TypeError(f"tensor(): could not convert data of type {type(data).__name__}: {exc}") from None
    out = Tensor._from_array(arr.astype(inferred.np, copy=False), inferred)
    out = out.to(_resolve_device(device)) if device is not None else out
    out.requires_grad = requires_grad
    return out


def as_tensor(data, dtype: dt.dtype | None = None, device=None) -> Tensor:
    """`data` as a tensor, sharing memory when it already is one (or a NumPy array) of that dtype."""
    if isinstance(data, Tensor):
        out = data if dtype is None else data.to(dtype)
        return out if device is None else out.to(device)
    if isinstance(data, np.ndarray) and (dtype is None or dtype.np == data.dtype) and device in (None, "cpu"):
        return from_numpy(data)
    return tensor(data, dtype=dtype, device=device)


def from_numpy(ndarray: np.ndarray) -> Tensor:
    """A tensor sharing `ndarray`'s memory."""
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(ndarray).__name__})")
    return Tensor._from_array(ndarray, dt.from_numpy(ndarray.dtype), share=True)


def empty(*size, dtype: dt.dtype | None = None, device=None, requires_grad: bool = False, **_) -> Tensor:
    """An uninitialised tensor."""
    out = Tensor._empty(_shape_arg("empty", size), dtype or dt.get_default_dtype(), _resolve_device(device))
    out.requires_grad = requires_grad
    return out


def full(size, fill_value, *, dtype: dt.dtype | None = None, device=None, requires_grad: bool = False,
         **_) -> Tensor:
    """A tensor of `size` filled with `fill_value` (dtype inferred from it, as PyTorch)."""
    if dtype is None:
        dtype = dt.scalar_dtype(fill_value)
    out = Tensor._empty(_shape_arg("full", tuple(size) if isinstance(size, (list, tuple)) else (size,)),
                        dtype, _resolve_device(device))
    fill_(out, fill_value)
    out._v.blob.version = 0
    out.requires_grad = requires_grad
    return out


def zeros(*size, dtype: dt.dtype | None = None, device=None, requires_grad: bool = False, **_) -> Tensor:
    """A tensor of zeros."""
    return full(_shape_arg("zeros", size), 0, dtype=dtype or dt.get_default_dtype(), device=device,
                requires_grad=requires_grad)


def ones(*size, dtype: dt.dtype | None = None, device=None, requires_grad: bool = False, **_) -> Tensor:
    """A tensor of ones."""
    return full(_shape_arg("ones", size), 1, dtype=dtype or dt.get_default_dtype(), device=device,
                requires_grad=requires_grad)

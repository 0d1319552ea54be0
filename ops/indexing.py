"""Tensor[...] and Tensor[...] = v with PyTorch's rules; index_put, masks and nonzero.

Basic indices (ints, slices, None, Ellipsis) build a view over the same blob at the call,
with no instruction. Index tensors (and lists, NumPy arrays, bools, masks) are recorded
against the dimensions of that view and handled by the "getitem" (copy) and "index_put"
(in place) kernels, which find out-of-range values. Boolean masks become index tensors
through nonzero, which syncs. The gather/scatter family lives in ops/scatter.py; its
functions are exported from here too.
"""
from __future__ import annotations

import numbers
import operator
import warnings

import numpy as np

from ..tensor import Tensor
from ..tensor import dtype as dt
from ..vm import View
from . import math_api as M
from . import scatter as S
from .broadcast import broadcast_shapes
from .creation import full
from .dispatch import launch, launch_into, register_kernel
from .elementwise import torch_name

__all__ = ["index_put", "masked_fill", "masked_scatter", "masked_select", "nonzero", "argwhere"] + S.__all__
METHODS: dict = dict(S.METHODS)
globals().update({name: getattr(S, name) for name in S.__all__})

_INDEX_TENSOR_DTYPES = (dt.int64, dt.int32, dt.uint8, dt.bool_)
_MASK_DTYPES = (dt.uint8, dt.bool_)
_BAD_INDEX_DTYPE = "tensors used as indices must be long, int, byte or bool tensors"


# -- parsing an index -------------------------------------------------------------------------
def _as_items(index) -> tuple:
    """The index as a tuple of items; a short list holding slices/None/... counts as a tuple (deprecated)."""
    if type(index) is tuple:
        return index
    if type(index) is list and len(index) < 32 and any(
            isinstance(e, (Tensor, list, tuple, slice)) or e is None or e is Ellipsis for e in index):
        warnings.warn("Using a non-tuple sequence for multidimensional indexing is deprecated and will be "
                      "changed in pytorch 2.9; use x[tuple(seq)] instead of x[seq].", UserWarning, stacklevel=3)
        return tuple(index)
    return (index,)


def _type_name(obj) -> str:
    cls = type(obj)
    return cls.__name__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__name__}"


def _index_tensor(item, device) -> Tensor:
    """A sequence or NumPy array used as an index, as a tensor: bool stays a mask, numbers become int64."""
    arr = np.asarray(item)
    if arr.dtype.kind == "U" or arr.dtype.kind == "S":
        raise TypeError(f"new(): invalid data type '{_type_name(arr.flat[0]) if arr.size else 'str'}'")
    if arr.dtype.kind not in "biuf":
        raise IndexError(_BAD_INDEX_DTYPE)
    keep = arr.dtype.kind == "b" or arr.dtype == np.uint8
    out = Tensor._from_array(arr if keep else arr.astype(np.int64), dt.from_numpy(arr.dtype) if keep else dt.int64)
    return out if out.device == device else out.to(device)


def _bool_index(value: bool, device) -> Tensor:
    """The index tensor a Python/0-d bool becomes on its new size-1 dimension: [0] or []."""
    out = Tensor._from_array(np.zeros(1 if value else 0, np.int64), dt.int64)
    return out if out.device == device else out.to(device)


def _dims_taken(item) -> int:
    if item is None or item is Ellipsis or isinstance(item, bool):
        return 0
    if isinstance(item, Tensor) and item.dtype in _MASK_DTYPES:
        return item.ndim
    return 1


class _Parsed:
    """The view an index selects (shape, strides, offset) and its index tensors by view dimension."""

    __slots__ = ("shape", "strides", "offset", "advanced")

    def __init__(self, t: Tensor):
        self.shape, self.strides, self.offset = list(t._v.shape), list(t._v.strides), t._v.offset
        self.advanced: list = []  # (view dimension, index tensor), in dimension order

    def unsqueeze(self, dim: int) -> None:
        stride = self.shape[dim] * self.strides[dim] if dim < len(self.shape) else 1  # PyTorch's choice
        self.shape.insert(dim, 1)
        self.strides.insert(dim, stride)

    def select(self, dim: int, i: int, real_dim: int) -> None:
        size = self.shape[dim]
        if i < -size or i >= size:
            raise IndexError(f"index {i} is out of bounds for dimension {real_dim} with size {size}")
        self.offset += (i + size if i < 0 else i) * self.strides[dim]
        del self.shape[dim], self.strides[dim]

    def slice(self, dim: int, s: slice) -> None:
        try:
            start, stop, step = (None if v is None else operator.index(v) for v in (s.start, s.stop, s.step))
        except TypeError:
            raise TypeError("slice indices must be integers or None or have an __index__ method") from None
        if step == 0:
            raise ValueError("slice step cannot be zero")
        if step is not None and step < 0:
            raise ValueError("step must be greater than zero")
        start, stop, step = slice(start, stop, step).indices(self.shape[dim])
        stop = max(stop, start)
        self.offset += start * self.strides[dim]
        self.shape[dim] = (stop - start + step - 1) // step
        self.strides[dim] *= step


def _parse(t: Tensor, index) -> _Parsed:
    """Apply the basic part of `index` to `t`'s layout and record its index tensors (PyTorch's order)."""
    items = _as_items(index)
    ndim = t.ndim
    if ndim == 0 and len(items) == 1 and isinstance(items[0], (int, np.integer)) and not isinstance(items[0], bool):
        raise IndexError("invalid index of a 0-dim tensor. Use `tensor.item()` in Python or `tensor.item<T>()` "
                         "in C++ to convert a 0-dim tensor to a number")
    items = [_index_tensor(it, t.device) if isinstance(it, (list, tuple, np.ndarray)) else it for it in items]
    specified = sum(_dims_taken(it) for it in items)
    if specified > ndim:
        raise IndexError(f"too many indices for tensor of dimension {ndim}")
    p = _Parsed(t)
    dim = real_dim = 0
    for it in items:
        if isinstance(it, Tensor) and it.ndim == 0 and it.dtype.category != dt.FLOAT:
            it = bool(it.item()) if it.dtype in _MASK_DTYPES else int(it.item())
        if it is None:
            p.unsqueeze(dim)
        elif it is Ellipsis:
            dim += ndim - specified
            real_dim += ndim - specified
            continue
        elif isinstance(it, bool):
            p.unsqueeze(dim)
            p.advanced.append((dim, _bool_index(it, t.device)))
        elif isinstance(it, (int, np.integer)):
            p.select(dim, int(it), real_dim)
            real_dim += 1
            continue
        elif isinstance(it, slice):
            p.slice(dim, it)
        elif isinstance(it, Tensor):
            if it.dtype not in _INDEX_TENSOR_DTYPES:
                raise IndexError(_BAD_INDEX_DTYPE)
            p.advanced.append((dim, it))
            if it.dtype in _MASK_DTYPES:
                dim += it.ndim - 1
                real_dim += it.ndim - 1
        elif isinstance(it, str):
            raise TypeError("new(): invalid data type 'str'")
        else:
            raise IndexError("only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables "
                             f"are valid indices (got {_type_name(it)})")
        dim += 1
        real_dim += 1
    return p


def _view(t: Tensor, shape: tuple, strides: tuple, offset: int) -> Tensor:
    """A view of `t`'s blob with this layout."""
    if 0 in shape:  # an empty view may point past the end; the CPU backend can't map that
        offset = min(offset, t._v.blob.nbytes // t.dtype.itemsize)
    return Tensor._make(View(t._v.blob, shape, strides, offset, t._v.dtype), t.dtype, t.device, t._vm,
                        base=t if t._base is None else t._base)


def _check_mask(view: Tensor, dim: int, mask: Tensor) -> None:
    for j, size in enumerate(mask._v.shape):
        if size != view._v.shape[dim + j]:
            raise IndexError(f"The shape of the mask {list(mask.shape)} at index {j} does not match the shape of "
                             f"the indexed tensor {list(view.shape)} at index {dim + j}")


def _index_plan(view: Tensor, advanced: list) -> tuple:
    """(dims, int index tensors, result shape) for advanced indices on `view`; masks become nonzero (syncs)."""
    dims, tensors = [], []
    for dim, ix in advanced:
        if ix.dtype in _MASK_DTYPES:
            _check_mask(view, dim, ix)
            for j, coords in enumerate(nonzero(ix, as_tuple=True) if ix.ndim else ()):
                dims.append(dim + j)
                tensors.append(coords)
        else:
            dims.append(dim)
            tensors.append(ix)
    try:
        bshape = broadcast_shapes(*(ix._v.shape for ix in tensors))
    except RuntimeError:
        raise IndexError("shape mismatch: indexing tensors could not be broadcast together with shapes "
                         + ", ".join(str(list(ix.shape)) for ix in tensors)) from None
    shape = view._v.shape
    rest = [s for d, s in enumerate(shape) if d not in dims]
    if dims == list(range(dims[0], dims[0] + len(dims))):  # adjacent: the result dims stay in place
        out_shape = tuple(rest[:dims[0]]) + bshape + tuple(rest[dims[0]:])
    else:
        out_shape = bshape + tuple(rest)
    return tuple(dims), tuple(tensors), out_shape


def _index_key(shape: tuple, dims: tuple, arrays) -> tuple:
    """(kernel side) A NumPy key: checked index arrays at `dims`, full slices elsewhere."""
    key = [slice(None)] * len(shape)
    for k, (d, a) in enumerate(zip(dims, arrays)):  # PyTorch numbers the dimension among the indexed ones
        key[d] = S.checked_index(a, shape[d], k, negative_ok=True)
    return tuple(key)


@register_kernel("getitem", "cpu")
def _index_kernel(ins, outs, dims):
    src = ins[0]
    outs[0][...] = src[_index_key(src.shape, dims, ins[1:])]


@register_kernel("index_put", "cpu")
def _index_put_kernel(ins, outs, attrs):
    dims, accumulate = attrs
    dst = outs[0]
    key = _index_key(dst.shape, dims, ins[1:])
    if accumulate:
        S.accumulate_at(np.add, dst, key, ins[0])
    else:
        dst[key] = ins[0]


# -- Tensor[...] ------------------------------------------------------------------------------
def getitem(self: Tensor, index) -> Tensor:
    """self[index]: a view for ints, slices, None and Ellipsis; a copy when index tensors take part."""
    v = self._v
    if type(index) is int and v.shape and -v.shape[0] <= index < v.shape[0]:  # x[i], as iteration does
        return _view(self, v.shape[1:], v.strides[1:], v.offset + (index % v.shape[0]) * v.strides[0])
    p = _parse(self, index)
    view = _view(self, tuple(p.shape), tuple(p.strides), p.offset)
    if not p.advanced:
        return view
    dims, tensors, shape = _index_plan(view, p.advanced)
    return launch("getitem", (view,) + tensors, [(shape, self.dtype)], dims)[0]


def _drop_leading_ones(t: Tensor) -> Tensor:
    """`t` without its leading size-1 dimensions (a view), as PyTorch trims assigned values."""
    shape, k = t._v.shape, 0
    while k < len(shape) and shape[k] == 1:
        k += 1
    if not k:
        return t
    return Tensor._make(View(t._v.blob, shape[k:], t._v.strides[k:], t._v.offset, t._v.dtype), t.dtype, t.device,
                        t._vm, base=t._base if t._base is not None else t)


def _check_put_dtype(self: Tensor, values: Tensor) -> None:
    if values.dtype is not self.dtype:
        raise RuntimeError(f"Index put requires the source and destination dtypes match, got "
                           f"{torch_name(self.dtype)} for the destination and {torch_name(values.dtype)} for "
                           "the source.")


def _put_values(self: Tensor, dims: tuple, tensors: tuple, shape: tuple, values: Tensor, accumulate: bool,
                view: Tensor) -> None:
    """Check `values` against the indexing result `shape` and queue index_put on `view`."""
    _check_put_dtype(self, values)
    values = _drop_leading_ones(values)
    if not S.broadcasts_to(values._v.shape, shape):
        raise RuntimeError(f"shape mismatch: value tensor of shape {list(values.shape)} cannot be broadcast to "
                           f"indexing result of shape {list(shape)}")
    launch_into("index_put", (values,) + tensors, (view,), (dims, bool(accumulate)))


def setitem(self: Tensor, index, value) -> None:
    """self[index] = value: a number or a tensor, broadcast to the selection."""
    if not isinstance(value, (Tensor, numbers.Number, np.generic)):
        raise TypeError(f"can't assign a {_type_name(value)} to a {self.type()}")
    p = _parse(self, index)
    view = _view(self, tuple(p.shape), tuple(p.strides), p.offset)
    if not p.advanced:
        if isinstance(value, Tensor):
            value = _drop_leading_ones(value)
            S.check_expand(value, view._v.shape)
            M.copy_(view, value)
        else:
            M.fill_(view, S.scalar_for(self.dtype, value))
        return
    if isinstance(value, Tensor):
        _check_put_dtype(self, value)
    if len(p.advanced) == 1 and p.advanced[0][1].dtype is dt.bool_ and p.advanced[0][1].ndim and \
            (not isinstance(value, Tensor) or value.ndim == 0):
        _fill_under_mask(view, p.advanced[0][0], p.advanced[0][1], value)  # no sync: an elementwise where
        return
    if not isinstance(value, Tensor):
        value = full((), S.scalar_for(self.dtype, value), dtype=self.dtype, device=self.device)
    S.check_no_overlap(view, (value,))
    dims, tensors, shape = _index_plan(view, p.advanced)
    _put_values(self, dims, tensors, shape, value, False, view)


def _fill_under_mask(view: Tensor, dim: int, mask: Tensor, value) -> None:
    """view[..., mask, ...] = value as masked_fill_ with the mask aligned to view dims dim.. (no sync)."""
    _check_mask(view, dim, mask)
    trailing = view.ndim - dim - mask.ndim
    aligned = Tensor._make(View(mask._v.blob, mask._v.shape + (1,) * trailing, mask._v.strides + (0,) * trailing,
                                mask._v.offset, mask._v.dtype), mask.dtype, mask.device, mask._vm)
    masked_fill_(view, aligned, value)


# -- index_put -------------------------------------------------------------------------------
def index_put_(self: Tensor, indices, values: Tensor, accumulate: bool = False) -> Tensor:
    """In place: self[indices] = values (or += with `accumulate`, repeated indices summing)."""
    indices = tuple(indices)
    for k, ix in enumerate(indices):
        if not isinstance(ix, Tensor):
            raise TypeError(f"expected Tensor as element {k} in argument 0, but got {_type_name(ix)}")
        if ix.dtype not in _INDEX_TENSOR_DTYPES:
            raise IndexError(_BAD_INDEX_DTYPE)
    if not isinstance(values, Tensor):
        raise TypeError(f"index_put_(): argument 'values' must be Tensor, not {_type_name(values)}")
    taken = sum(_dims_taken(ix) for ix in indices)
    if taken > self.ndim:
        raise IndexError(f"too many indices for tensor of dimension {self.ndim} (got {taken})")
    advanced, dim = [], 0
    for ix in indices:
        advanced.append((dim, ix))
        dim += ix.ndim if ix.dtype in _MASK_DTYPES else 1
    if not advanced:
        return M.copy_(self, values)
    S.check_no_overlap(self, indices + (values,))
    dims, tensors, shape = _index_plan(self, advanced)
    _put_values(self, dims, tensors, shape, values, accumulate, self)
    return self


def index_put(input: Tensor, indices, values: Tensor, accumulate: bool = False) -> Tensor:
    """A copy of `input` with input[indices] = values (or += with `accumulate`)."""
    return index_put_(M.clone(input), indices, values, accumulate)


# -- masks and nonzero --------------------------------------------------------------------------
def host_result(arr: np.ndarray, dtype: dt.dtype, device, out: Tensor | None = None) -> Tensor:
    """Wrap a freshly computed host array as a tensor on `device` (or copy it into `out`)."""
    result = Tensor._from_array(np.ascontiguousarray(arr, dtype=dtype.np), dtype, share=True)
    if device != result.device:
        result = result.to(device)
    if out is None:
        return result
    S.prepare_out(out, result._v.shape, dtype)
    return M.copy_(out, result)


def _broadcast_copy(input: Tensor, shape: tuple) -> Tensor:
    """A new contiguous tensor of `shape` holding `input` broadcast to it."""
    if tuple(input._v.shape) == tuple(shape):
        return M.clone(input)
    return M.copy_(Tensor._empty(tuple(shape), input.dtype, input.device), input)


def _check_bool_mask(mask: Tensor, message: str) -> None:
    if not isinstance(mask, Tensor):
        raise TypeError(f"expected Tensor as mask argument, but got {type(mask).__name__}")
    if mask.dtype is not dt.bool_:
        raise RuntimeError(message.format(c=S.C_NAMES[mask.dtype], torch=torch_name(mask.dtype)))


def _fill_value(self: Tensor, value, op: str):
    """`value` as masked_fill writes it: a Python number of self's kind, or a 0-d tensor of self's dtype."""
    if isinstance(value, Tensor):
        if value.ndim:
            raise RuntimeError(f"{op} only supports a 0-dimensional value tensor, but got tensor with "
                               f"{value.ndim} dimension(s).")
        same_memory = value._v.blob is self._v.blob  # reading self while writing it: take the value first
        return value if value.dtype is self.dtype and not same_memory else M.convert(value, self.dtype)
    if not isinstance(value, (numbers.Number, np.generic)):
        raise TypeError(f"{op}(): argument 'value' must be Number, not {type(value).__name__}")
    return S.scalar_for(self.dtype, value)


_MASK_MSG = "masked_fill_ only supports boolean masks, but got mask with dtype {c}"


def masked_fill(input: Tensor, mask: Tensor, value) -> Tensor:
    """`input` with `value` where `mask` holds (broadcast); an elementwise where, so it fuses."""
    _check_bool_mask(mask, _MASK_MSG)
    return M.where(mask, _fill_value(input, value, "masked_fill_"), input)


def masked_fill_(self: Tensor, mask: Tensor, value) -> Tensor:
    """In place: set `value` where `mask` holds (mask broadcast to self)."""
    _check_bool_mask(mask, _MASK_MSG)
    return M.apply("where", mask, _fill_value(self, value, "masked_fill_"), self, out=self)


def masked_scatter_(self: Tensor, mask: Tensor, source: Tensor) -> Tensor:
    """In place: the elements where `mask` holds take `source`'s values, in row-major order."""
    _check_bool_mask(mask, "masked_scatter_ only supports boolean masks, but got mask with dtype {torch}")
    if source.dtype is not self.dtype:
        raise RuntimeError(f"masked_scatter: expected self and source to have same dtypes but got"
                           f"{torch_name(self.dtype)} and {torch_name(source.dtype)}")
    S.check_expand(mask, self._v.shape)
    launch_into("masked_scatter", (mask, source), (self,))
    return self


def masked_scatter(input: Tensor, mask: Tensor, source: Tensor) -> Tensor:
    """A copy of `input` (broadcast with `mask`) with `source`'s values where `mask` holds."""
    _check_bool_mask(mask, "masked_scatter_ only supports boolean masks, but got mask with dtype {torch}")
    shape = broadcast_shapes(input._v.shape, mask._v.shape)
    return masked_scatter_(_broadcast_copy(input, shape), mask, source)


@register_kernel("masked_scatter", "cpu")
def _masked_scatter_kernel(ins, outs, attrs):
    dst = outs[0]
    mask = np.broadcast_to(ins[0], dst.shape)
    n = int(np.count_nonzero(mask))
    src = ins[1].reshape(-1)
    if src.size < n:
        raise RuntimeError("Number of elements of source < number of ones in mask")
    dst[mask] = src[:n]


def masked_select(input: Tensor, mask: Tensor, *, out: Tensor | None = None) -> Tensor:
    """The elements of `input` where `mask` holds (both broadcast), as a 1-d tensor (syncs)."""
    _check_bool_mask(mask, "masked_select: expected BoolTensor for mask")
    shape = broadcast_shapes(mask._v.shape, input._v.shape)  # this order names the sizes as PyTorch does
    values = np.broadcast_to(input._host_array(), shape)
    return host_result(values[np.broadcast_to(mask._host_array(), shape)], input.dtype, input.device, out)


def nonzero(input: Tensor, *, out: Tensor | None = None, as_tuple: bool = False):
    """Indices of the nonzero elements: an (n, ndim) int64 tensor, or one 1-d tensor per dim (syncs)."""
    found = input._host_array() != 0
    if not as_tuple:
        return host_result(np.argwhere(found), dt.int64, input.device, out)
    coords = np.nonzero(found) if found.ndim else (np.zeros(int(found), np.int64),)
    return tuple(host_result(c, dt.int64, input.device) for c in coords)


def argwhere(input: Tensor) -> Tensor:
    """Indices of the nonzero elements as an (n, ndim) int64 tensor (syncs)."""
    return nonzero(input)


METHODS.update(__getitem__=getitem, __setitem__=setitem, index_put=index_put, index_put_=index_put_,
               masked_fill=masked_fill, masked_fill_=masked_fill_, masked_scatter=masked_scatter,
               masked_scatter_=masked_scatter_, masked_select=masked_select, nonzero=nonzero, argwhere=argwhere)

"""Tensor[...] and Tensor[...] = v with PyTorch's rules, and index_put, with their gradients.

Basic indices (ints, slices, None, Ellipsis) build a view over the same blob at the call,
with no instruction. Index tensors (and lists, NumPy arrays, bools, masks) are recorded
against the dimensions of that view and handled by the "getitem" (copy) and "index_put"
(in place) kernels, which find out-of-range values. Boolean masks become index tensors
through nonzero, which syncs.
Gradients: a view's node (SelectBackward0, SliceBackward0, ...) writes the gradient into
zeros at the viewed positions; indexing's (IndexBackward0) adds it at the indices; an
assignment records on the tensor it writes and masks the overwritten positions. The
gather/scatter family (ops/indexing/scatter.py, ops/indexing/index_ops.py) and the mask ops (ops/indexing/masked.py)
are exported from here too.
"""
from __future__ import annotations

import numbers
import operator
import warnings

import numpy as np

from ...autograd.grad_mode import is_grad_enabled, no_grad
from ...autograd.graph import needs_grad, no_tangents
from ...autograd.view_inplace import LEAF_VIEW, NO_GRAD_VIEW, inplace_writer, track_view, write_inplace
from ...tensor import Tensor
from ...tensor import dtype as dt
from ...tensor.tensor import contiguous_strides
from ...vm import View
from . import index_ops as I
from . import masked as K
from ..elementwise import copies, arithmetic as M
from . import scatter as S
from ..dispatch.broadcast import broadcast_shapes
from ..factories.creation import full
from ..dispatch.primitive import Primitive
from ..elementwise.plans import torch_name
from .masked import masked_fill_, nonzero
from ..dispatch.mem_overlap import INTERNAL, check_written, has_internal_overlap
from .expanded_writes import put_expanded, record_refused, warn_expanded
from ..dispatch.limited_dtypes import check as check_limited
from ..dispatch.user_frame import user_stacklevel

__all__ = ["index_put"] + K.__all__ + S.__all__ + I.__all__
METHODS: dict = {**S.METHODS, **I.METHODS, **K.METHODS}
globals().update({name: getattr(mod, name) for mod in (S, I, K) for name in mod.__all__})
METHODS.update(masked_fill_=inplace_writer(K.masked_fill_), masked_scatter_=inplace_writer(K.masked_scatter_))

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
                      "changed in pytorch 2.9; use x[tuple(seq)] instead of x[seq].", UserWarning,
                      stacklevel=user_stacklevel())
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
    """The view an index selects (shape, strides, offset) and its index tensors by view dimension.
    With `track` (autograd), also the same view in the row-major layout of the input's shape, and
    the name of the last view op PyTorch would apply."""

    __slots__ = ("shape", "strides", "offset", "advanced", "dense", "dense_offset", "last")

    def __init__(self, t: Tensor, track: bool):
        self.shape, self.strides, self.offset = list(t._v.shape), list(t._v.strides), t._v.offset
        self.advanced: list = []  # (view dimension, index tensor), in dimension order
        self.dense = list(contiguous_strides(t._v.shape)) if track else None
        self.dense_offset = 0
        self.last = "alias"

    def unsqueeze(self, dim: int) -> None:
        stride = self.shape[dim] * self.strides[dim] if dim < len(self.shape) else 1  # PyTorch's choice
        self.shape.insert(dim, 1)
        self.strides.insert(dim, stride)
        if self.dense is not None:
            self.dense.insert(dim, 1)  # any stride does for a size-1 dim
        self.last = "unsqueeze"

    def select(self, dim: int, i: int, real_dim: int) -> None:
        size = self.shape[dim]
        if i < -size or i >= size:
            raise IndexError(f"index {i} is out of bounds for dimension {real_dim} with size {size}")
        i = i + size if i < 0 else i
        self.offset += i * self.strides[dim]
        if self.dense is not None:
            self.dense_offset += i * self.dense.pop(dim)
        del self.shape[dim], self.strides[dim]
        self.last = "select"

    def slice(self, dim: int, s: slice, bare: bool = False) -> None:
        try:
            start, stop, step = (None if v is None else operator.index(v) for v in (s.start, s.stop, s.step))
        except TypeError:
            raise TypeError("slice indices must be integers or None or have an __index__ method") from None
        if step == 0:
            raise ValueError("slice step cannot be zero")
        if step is not None and step < 0:
            raise ValueError("step must be greater than zero")
        size = self.shape[dim]
        start, stop, step = slice(start, stop, step).indices(size)
        stop = max(stop, start)
        self.offset += start * self.strides[dim]
        self.shape[dim] = (stop - start + step - 1) // step
        self.strides[dim] *= step
        if self.dense is not None:
            self.dense_offset += start * self.dense[dim]
            self.dense[dim] *= step
        if bare or (start, stop, step) != (0, size, 1):  # PyTorch skips full slices inside a tuple
            self.last = "slice"


def _parse(t: Tensor, index, track: bool = False) -> _Parsed:
    """Apply the basic part of `index` to `t`'s layout and record its index tensors (PyTorch's order)."""
    bare = isinstance(index, slice)
    items = _as_items(index)
    ndim = t.ndim
    if ndim == 0 and len(items) == 1 and isinstance(items[0], (int, np.integer)) and not isinstance(items[0], bool):
        raise IndexError("invalid index of a 0-dim tensor. Use `tensor.item()` in Python or `tensor.item<T>()` "
                         "in C++ to convert a 0-dim tensor to a number")
    items = [_index_tensor(it, t.device) if isinstance(it, (list, tuple, range, np.ndarray)) else it for it in items]
    specified = sum(_dims_taken(it) for it in items)
    if specified > ndim:
        raise IndexError(f"too many indices for tensor of dimension {ndim}")
    p = _Parsed(t, track)
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
            p.slice(dim, it, bare)
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


def _check_now(view: Tensor, dims: tuple, tensors: tuple) -> bool:
    """The kernel's index checks at the call, for index tensors whose values are already computed; True
    when some are not (the kernel checks them: its launch passes `checks_data`)."""
    deferred = False
    for k, (d, ix) in enumerate(zip(dims, tensors)):
        deferred = S.check_now(ix, view._v.shape[d], k, negative_ok=True) or deferred
    return deferred


def _index_key(shape: tuple, dims: tuple, arrays) -> tuple:
    """(kernel side) A NumPy key: checked index arrays at `dims`, full slices elsewhere."""
    key = [slice(None)] * len(shape)
    for k, (d, a) in enumerate(zip(dims, arrays)):  # PyTorch numbers the dimension among the indexed ones
        key[d] = S.checked_index(a, shape[d], k, negative_ok=True)
    return tuple(key)


def _index_kernel(ins, outs, attrs):
    src = ins[0]
    outs[0][...] = src[_index_key(src.shape, attrs[0], ins[1:])]


def _index_put_kernel(ins, outs, attrs):
    dims, accumulate = attrs[:2]
    dst, values = outs[0], ins[0]
    key = _index_key(dst.shape, dims, ins[1:])
    if values.ndim and values.shape[0] == 1:  # assigned values lose their leading ones, as torch's
        values = values.reshape(_trimmed(values.shape))
    if accumulate:
        S.accumulate_at(np.add, dst, key, values)
    else:
        dst[key] = values


# -- gradients of indexing ------------------------------------------------------------------
def _view_backward(node, g):
    # a basic-indexing view's gradient: zeros of the source's shape with g at the view's (row-major) geometry
    return (S.embed(g, *node.attrs),)


def _gather_at(src: Tensor, dims: tuple, tensors: tuple, shape: tuple, checks_data: bool = False) -> Tensor:
    """src indexed by `tensors` at `dims` (a copy of `shape`); differentiable. `checks_data`: as launch's."""
    return GETITEM((src,) + tensors, (dims, shape), "index", checks_data=checks_data, saved=tensors)


def _getitem_backward(node, g):
    src_shape, dims = node.attrs
    tensors = node.saved_tensors
    return (_add_at(g, src_shape, dims, tensors),) + (None,) * len(tensors)


def _add_at(g: Tensor, shape: tuple, dims: tuple, tensors: tuple) -> Tensor:
    """Zeros of `shape` with `g` added at the indexed positions (repeats add up): indexing's gradient (its
    own gradient, index_put's for its values, gathers again)."""
    out = S.filled(shape, g)
    INDEX_PUT.write((g,) + tensors, (out,), (dims, True, g._v.shape, g.ndim), tensors, checks_data=False)
    return out


def _written(like: Tensor, dims: tuple, tensors: tuple) -> Tensor:
    """A bool tensor shaped like `like`, True at the indexed positions."""
    with no_grad():
        out = copies.fill_(Tensor._empty(like._v.shape, dt.bool_, like.device), False)
        true = full((), True, dtype=dt.bool_, device=like.device)
        INDEX_PUT.write((true,) + tensors, (out,), (dims, False, None, 0), checks_data=False)
    return out


# -- Tensor[...] ------------------------------------------------------------------------------
def getitem(self: Tensor, index) -> Tensor:
    """self[index]: a view for ints, slices, None and Ellipsis; a copy when index tensors take part."""
    v = self._v
    grad = needs_grad((self,))
    if type(index) is int and v.shape and -v.shape[0] <= index < v.shape[0]:  # x[i], as iteration does
        i = index % v.shape[0]
        out = S.view_of(self, v.shape[1:], v.strides[1:], v.offset + i * v.strides[0])
        if grad:
            dense = contiguous_strides(v.shape)
            VIEW.attach((self,), (out,), (v.shape, (v.shape[1:], dense[1:], i * dense[0])), "select")
        return out
    p = _parse(self, index, grad)
    if p.advanced and p.last == "alias":  # no view op: index self itself, as PyTorch does
        view = self
    else:
        view = S.view_of(self, tuple(p.shape), tuple(p.strides), p.offset)
        if grad:
            VIEW.attach((self,), (view,), (v.shape, (tuple(p.shape), tuple(p.dense), p.dense_offset)), p.last)
    if not p.advanced:
        return view
    dims, tensors, shape = _index_plan(view, p.advanced)
    return _gather_at(view, dims, tensors, shape, _check_now(view, dims, tensors))


def _drop_leading_ones(t: Tensor) -> Tensor:
    """`t` without its leading size-1 dimensions (a view), as PyTorch trims assigned values."""
    shape, k = t._v.shape, 0
    while k < len(shape) and shape[k] == 1:
        k += 1
    if not k:
        return t
    out = Tensor._make(View(t._v.blob, shape[k:], t._v.strides[k:], t._v.offset, t._v.dtype), t.dtype, t.device,
                       t._vm, base=t._base if t._base is not None else t)
    track_view(out)
    return out


def _check_put_dtype(self: Tensor, values: Tensor) -> None:
    if values.dtype is not self.dtype:
        raise RuntimeError(f"Index put requires the source and destination dtypes match, got "
                           f"{torch_name(self.dtype)} for the destination and {torch_name(values.dtype)} for "
                           "the source.")


def _trimmed(shape: tuple) -> tuple:
    """`shape` without its leading ones (the shape an assigned value takes)."""
    k = 0
    while k < len(shape) and shape[k] == 1:
        k += 1
    return shape[k:]


def _put_values(self: Tensor, dims: tuple, tensors: tuple, shape: tuple, values: Tensor, accumulate: bool,
                view: Tensor) -> None:
    """Check `values` against the indexing result `shape` and queue index_put on `view` (its node recorded
    when grad is needed: index_put_'s; `_assign` runs under no_grad or needs none)."""
    _check_put_dtype(self, values)
    trimmed = _trimmed(values._v.shape)
    if not S.broadcasts_to(trimmed, shape):
        raise RuntimeError(f"shape mismatch: value tensor of shape {list(trimmed)} cannot be broadcast to "
                           f"indexing result of shape {list(shape)}")
    deferred = _check_now(view, dims, tensors)
    INDEX_PUT.write((values,) + tensors, (view,), (dims, bool(accumulate), shape, values.ndim), tensors,
                    checks_data=deferred)


def setitem(self: Tensor, index, value) -> None:
    """self[index] = value: a number or a tensor, broadcast to the selection."""
    if not isinstance(value, (Tensor, numbers.Number, np.generic)):
        raise TypeError(f"can't assign a {_type_name(value)} to a {self.type()}")
    check_written(self)
    if self.requires_grad and self.grad_fn is None and is_grad_enabled():
        op = _last_view_op(self, index)  # torch writes through the view its basic indexing made
        if "_nograd_view" in self.__dict__:  # a view made under no_grad (ops/views.make_view)
            raise RuntimeError(NO_GRAD_VIEW if op is None else f"Output 0 of {op} is a view of a view which"
                               + NO_GRAD_VIEW[len("A view"):])
        if op is not None:
            raise RuntimeError(LEAF_VIEW)
    if not S.inplace_grad(self, (value,)):
        _assign(self, index, value)
        return
    items = _as_items(index)
    if not _parse(self, items).advanced:  # torch writes through the view basic indexing makes (CopySlices on the
        _write_basic(getitem(self, index), value)  # base: the gradient follows that view, not `self`'s layout)
        return
    write_inplace(self, _recorded_setitem, index, value)


def _write_basic(view: Tensor, value) -> None:
    """view[...] = value for the view a basic index made (copy_ or fill_, recorded as in-place writes are)."""
    if isinstance(value, Tensor):
        trimmed = _trimmed(value._v.shape)
        if trimmed != value._v.shape:  # (a recorded reshape: the value's gradient keeps its leading ones)
            value = value.reshape(trimmed)
        S.check_expand(value, view._v.shape)
        copies.copy_(view, value)
    else:
        copies.fill_(view, S.scalar_for(view.dtype, value))


def _last_view_op(t: Tensor, index) -> str | None:
    """The last view op ("Select", "Slice", "Unsqueeze") the basic part of `index` (ints, None, slices) applies
    to `t`, as torch's indexing does before it writes; None when it keeps `t` (a full slice, Ellipsis)."""
    parts = index if isinstance(index, tuple) else (index,)
    d, last = 0, None
    for p in parts:
        if p is None:
            last = "Unsqueeze"
        elif isinstance(p, (int, np.integer)) and not isinstance(p, (bool, np.bool_)):
            last, d = "Select", None if d is None else d + 1
        elif p is Ellipsis:
            d = None  # the dims after it are counted from the end: only plainly full slices keep `t`
        elif isinstance(p, slice):
            size = t.shape[d] if d is not None and d < t.ndim else None
            full = p.start in (None, 0) and p.step in (None, 1) and (
                p.stop is None or (size is not None and isinstance(p.stop, int) and p.stop >= size))
            if not full:
                last = "Slice"
            d = None if d is None else d + 1
        else:
            d = None if d is None else d + (p.ndim if isinstance(p, Tensor) and p.dtype is dt.bool_ else 1)
    return last


def _recorded_setitem(self: Tensor, index, value) -> None:
    """self[index] = value with its node recorded on self (grad mode, something requires grad)."""
    items = _as_items(index)
    with no_grad():
        advanced = _assign(self, items, value, recorded_after=True)
    value = value if isinstance(value, Tensor) else None
    if advanced == "expanded" and needs_grad((self,)):  # written through an expanded layout: torch's backward
        record_refused(self, value)  # refuses
        return
    SETITEM.attach((self, value), (self,), (items, value.ndim if value is not None else 0),
                   "index_put" if advanced else "copy_slices")


def _setitem_backward(node, g):
    items, value_ndim = node.attrs
    grad_self = grad_value = None
    if S.wants(node, 0):  # the overwritten positions get no gradient
        with no_grad():
            written = copies.fill_(Tensor._empty(g._v.shape, dt.bool_, g.device), False)
            _assign(written, items, True)
        grad_self = M.where(written, 0.0, g)
    if S.wants(node, 1):
        grad_value = S.fit_rank(getitem(g, items), value_ndim)
    return grad_self, grad_value


def _assign(self: Tensor, index, value, recorded_after: bool = False) -> bool:
    """Write `value` at `index` (no graph); whether index tensors took part. `recorded_after`: under no_grad,
    the caller records the write's node (index_put's write then records none, even for forward-AD tangents)."""
    p = _parse(self, index)
    view = S.view_of(self, tuple(p.shape), tuple(p.strides), p.offset)
    if not p.advanced:
        if 0 in view._v.strides and has_internal_overlap(view):  # (copy_'s check; a number's fill_ skips it)
            raise RuntimeError(INTERNAL)
        if isinstance(value, Tensor):
            value = _drop_leading_ones(value)
            S.check_expand(value, view._v.shape)
            copies.copy_(view, value)
        else:
            copies.fill_(view, S.scalar_for(self.dtype, value))
        return False
    if isinstance(value, Tensor):
        _check_put_dtype(self, value)
    if 0 in view._v.strides and has_internal_overlap(view):  # torch warns (as index_put_), then writes
        warn_expanded("index_put_")
        if len(p.advanced) == 1 and p.advanced[0][1].dtype is dt.bool_ and not isinstance(value, Tensor):
            warn_expanded("masked_fill_")
        put_expanded(self, index, value)
        return "expanded"
    if len(p.advanced) == 1 and p.advanced[0][1].dtype is dt.bool_ and p.advanced[0][1].ndim and \
            (not isinstance(value, Tensor) or value.ndim == 0):
        _fill_under_mask(view, p.advanced[0][0], p.advanced[0][1], value)  # no sync: an elementwise where
        return True
    check_limited("index_put", self.dtype)
    if not isinstance(value, Tensor):
        value = full((), S.scalar_for(self.dtype, value), dtype=self.dtype, device=self.device)
    S.check_no_overlap(view, (value,))
    dims, tensors, shape = _index_plan(view, p.advanced)
    if recorded_after:
        with no_tangents():
            _put_values(self, dims, tensors, shape, value, False, view)
    else:
        _put_values(self, dims, tensors, shape, value, False, view)
    return True


def _fill_under_mask(view: Tensor, dim: int, mask: Tensor, value) -> None:
    """view[..., mask, ...] = value as masked_fill_ with the mask aligned to view dims dim.. (no sync)."""
    _check_mask(view, dim, mask)
    trailing = view.ndim - dim - mask.ndim
    aligned = Tensor._make(View(mask._v.blob, mask._v.shape + (1,) * trailing, mask._v.strides + (0,) * trailing,
                                mask._v.offset, mask._v.dtype), mask.dtype, mask.device, mask._vm)
    masked_fill_(view, aligned, value)


# -- index_put -------------------------------------------------------------------------------
@inplace_writer
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
    one_mask = len(indices) == 1 and indices[0].dtype is dt.bool_ and values.ndim == 0  # (torch: a masked_fill)
    check_limited("masked_fill" if one_mask else "index_put", self.dtype)
    advanced, dim = [], 0
    for ix in indices:
        advanced.append((dim, ix))
        dim += ix.ndim if ix.dtype in _MASK_DTYPES else 1
    if not advanced:
        return copies.copy_(self, values)
    if 0 in self._v.strides and has_internal_overlap(self):  # torch warns, then writes each location
        warn_expanded("index_put_")
        if one_mask:  # (torch's index_put_ with one mask and a 0-d value is a masked_fill_, which warns too)
            warn_expanded("masked_fill_")
        return put_expanded(self, indices, values, accumulate)
    S.check_no_overlap(self, indices + (values,))
    dims, tensors, shape = _index_plan(self, advanced)
    S.inplace_grad(self, (values,))  # (torch's error on a leaf, before anything is queued)
    _put_values(self, dims, tensors, shape, values, accumulate, self)
    return self


def _index_put_backward(node, g):
    dims, accumulate, shape, values_ndim = node.attrs
    tensors = node.saved_tensors
    grad_self = grad_values = None
    if S.wants(node, 0):
        grad_self = g if accumulate else M.where(_written(g, dims, tensors), 0.0, g)
    if S.wants(node, 1):  # values broadcast to the selection: the engine sums the gradient back
        grad_values = S.fit_rank(_gather_at(g, dims, tensors, shape), values_ndim)
    return (grad_self, grad_values) + (None,) * len(tensors)


def index_put(input: Tensor, indices, values: Tensor, accumulate: bool = False) -> Tensor:
    """A copy of `input` with input[indices] = values (or += with `accumulate`)."""
    return S.out_of_place(index_put_, input, indices, values, accumulate)


# -- the records -------------------------------------------------------------------------------------
def _getitem_shapes(inputs: tuple, attrs: tuple) -> list:
    return [(attrs[1], inputs[0].dtype)]  # (attrs: the dims indexed, the result's shape)


# getitem's node (IndexBackward0) takes the source, then the index tensors (no edges; saved per call)
GETITEM = Primitive("getitem", _getitem_shapes, cpu=_index_kernel, cuda=None, backward=_getitem_backward,
                    node_attrs=lambda inputs, attrs: (inputs[0]._v.shape, attrs[0]), grad_inputs=(0,),
                    checks_data=True, sbp="getitem")
# index_put's (attrs: dims, accumulate, the selection's shape, the values' ndim) takes self, the values, then the
# index tensors; x[i] = v's setitem records its own node (index_put or copy_slices) around the write
INDEX_PUT = Primitive("index_put", S.written_only, cpu=_index_put_kernel, cuda=None, backward=_index_put_backward,
                      grad_inputs=(0, 1), checks_data=True, inplace=True)
# the composites' nodes: the view of basic indexing on the source (SelectBackward0, SliceBackward0,
# UnsqueezeBackward0... through node=; attrs the source's shape and the view's row-major geometry), and
# x[i] = v's write on (self, the value or None) (IndexPutBackward0 or CopySlices through node=; attrs the parsed
# index and the value's ndim)
VIEW = Primitive("getitem_view", None, cpu=None, backward=_view_backward, sbp="getitem")
SETITEM = Primitive("setitem", None, cpu=None, backward=_setitem_backward)

METHODS.update(__getitem__=getitem, __setitem__=setitem, index_put=index_put, index_put_=index_put_)

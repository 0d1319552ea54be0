"""Gather and scatter: gather, scatter*, index_select/add/copy/fill, take, put_, take_along_dim.

Shapes, dtypes and arguments are checked at the call; the values inside index tensors
are checked by the kernels (only the data can tell), which raise PyTorch's error and let
the VM re-raise it at the next sync point. Kernels compute 16-bit floats in float32.
"""
from __future__ import annotations

import warnings

import numpy as np

from ..tensor import Tensor
from ..tensor import dtype as dt
from . import elementwise as ew
from . import math_api as M
from .broadcast import broadcast_shapes
from .dispatch import launch, launch_into, register_kernel
from .elementwise import torch_name

__all__ = ["gather", "scatter", "scatter_add", "scatter_reduce", "index_select", "index_add", "index_copy",
           "index_fill", "take", "take_along_dim", "put"]
METHODS: dict = {}

_INDEX_DTYPES = (dt.int64, dt.int32)
C_NAMES = {dt.bool_: "bool", dt.uint8: "unsigned char", dt.int8: "signed char", dt.int16: "short int",
           dt.int32: "int", dt.int64: "long int", dt.float16: "c10::Half", dt.bfloat16: "c10::BFloat16",
           dt.float32: "float", dt.float64: "double"}  # the C++ names some PyTorch messages print
_NARROW_FLOATS = (np.dtype(np.float16), dt.bfloat16.np)


# -- helpers at the call (shared with ops/indexing.py) -----------------------------------------
def check_index_dtype(index, allowed: tuple, message: str, exc=RuntimeError) -> None:
    """Raise `exc(message)` unless `index` is a tensor of one of the `allowed` dtypes."""
    if not isinstance(index, Tensor):
        raise TypeError(f"expected Tensor as index argument, but got {type(index).__name__}")
    if index.dtype not in allowed:
        raise exc(message.format(got=torch_name(index.dtype)))


def scalar_for(dtype: dt.dtype, value):
    """A Python number `value` converted the way PyTorch converts it to `dtype`."""
    if isinstance(value, Tensor):
        value = value.item()
    if dtype is dt.bool_:
        return bool(value)
    return int(value) if dtype.category == dt.INT else float(value)


def broadcasts_to(shape: tuple, target: tuple) -> bool:
    """Whether `shape` broadcasts to exactly `target`."""
    lead = len(target) - len(shape)
    return lead >= 0 and all(s == 1 or s == target[lead + d] for d, s in enumerate(shape))


def check_expand(src: Tensor, target: tuple) -> None:
    """Raise PyTorch's expand() errors unless `src` broadcasts to exactly `target`."""
    shape = src._v.shape
    if len(shape) > len(target):
        raise RuntimeError(f"expand({src.type()}{{{list(shape)}}}, size={list(target)}): the number of sizes "
                           f"provided ({len(target)}) must be greater or equal to the number of dimensions in "
                           f"the tensor ({len(shape)})")
    lead = len(target) - len(shape)
    for d, size in enumerate(shape):
        if size != 1 and size != target[lead + d]:
            raise RuntimeError(f"The expanded size of the tensor ({target[lead + d]}) must match the existing "
                               f"size ({size}) at non-singleton dimension {lead + d}.  Target sizes: "
                               f"{list(target)}.  Tensor sizes: {list(shape)}")


def check_no_overlap(self: Tensor, others) -> None:
    """PyTorch's error when an op writing `self` in place reads memory of `self` (any layout)."""
    v = self._v
    for o in others:
        if not isinstance(o, Tensor) or o._v.blob is not v.blob or not o.numel() or not self.numel():
            continue
        if (o._v.shape, o._v.strides, o._v.offset) == (v.shape, v.strides, v.offset):
            raise RuntimeError("unsupported operation: some elements of the input tensor and the written-to "
                               "tensor refer to a single memory location. Please clone() the tensor before "
                               "performing the operation.")
        ew.check_overlap(self, (o,))  # partial overlaps: the elementwise rule


def emit(name: str, ins: tuple, shape: tuple, dtype: dt.dtype, attrs=None, out: Tensor | None = None) -> Tensor:
    """Queue kernel `name` producing one tensor of `shape` and `dtype` (into `out` when given)."""
    if out is None:
        return launch(name, ins, [(shape, dtype)], attrs)[0]
    prepare_out(out, shape, dtype)
    check_no_overlap(out, ins)
    launch_into(name, ins, (out,), attrs)
    return out


def prepare_out(out: Tensor, shape: tuple, dtype: dt.dtype) -> None:
    """Check an `out=` tensor's dtype and resize it to `shape` as PyTorch does (warning if it had data)."""
    if out.dtype is not dtype:
        raise RuntimeError(f"Expected out tensor to have dtype {C_NAMES[dtype]}, but got "
                           f"{C_NAMES[out.dtype]} instead")
    if tuple(out._v.shape) != tuple(shape):
        if out.numel():
            warnings.warn(f"An output with one or more elements was resized since it had shape "
                          f"{list(out._v.shape)}, which does not match the required output shape {list(shape)}. "
                          "This behavior is deprecated, and in a future PyTorch release outputs will not be "
                          "resized unless they have zero elements. You can explicitly reuse an out tensor t by "
                          "resizing it, inplace, to zero elements with t.resize_(0).", UserWarning, stacklevel=3)
        out._v = Tensor._empty(tuple(shape), dtype, out.device)._v  # new storage, as resize_ gives


def _dim1(t: Tensor) -> int:
    """Number of dims with 0-d counted as 1 (PyTorch's rule for gather/scatter shapes)."""
    return max(t.ndim, 1)


def _size1(t: Tensor, d: int) -> int:
    return t._v.shape[d] if t.ndim else 1


# -- helpers inside kernels ------------------------------------------------------------------
def checked_index(idx: np.ndarray, size: int, dim: int, *, negative_ok: bool = False, exc=IndexError,
                  message: str = "index {i} is out of bounds for dimension {d} with size {n}") -> np.ndarray:
    """(kernel side) `idx` as int64 with negatives wrapped; raise `exc` naming the first bad index."""
    idx = np.asarray(idx, dtype=np.int64)
    low = -size if negative_ok else 0
    bad = (idx < low) | (idx >= size)
    if bad.any():
        raise exc(message.format(i=int(idx[bad].flat[0]), d=dim, n=size))
    return np.where(idx < 0, idx + size, idx) if negative_ok else idx


def widened(a: np.ndarray) -> np.ndarray:
    """`a` in the dtype kernels compute it in (float32 for 16-bit floats)."""
    return a.astype(np.float32) if a.dtype in _NARROW_FLOATS else a


def accumulate_at(ufunc, dst: np.ndarray, key, vals) -> None:
    """`ufunc.at(dst, key, vals)` (repeated indices accumulate), computed in the widened dtype."""
    work = widened(dst)
    ufunc.at(work, key, np.asarray(vals).astype(work.dtype, copy=False))
    if work is not dst:
        dst[...] = work


def _at_least_1d(a: np.ndarray) -> np.ndarray:
    return a.reshape(1) if a.ndim == 0 else a


def _box(shape: tuple, skip: int | None = None) -> tuple:
    """Slices keeping the leading `shape` of an array (all of dimension `skip`)."""
    return tuple(slice(None) if d == skip else slice(0, n) for d, n in enumerate(shape))


def _scatter_key(idx: np.ndarray, dim: int) -> tuple:
    """Coordinates that element (i, j, ...) of `idx` addresses: its own position, `idx` along `dim`."""
    nd = idx.ndim
    return tuple(idx if d == dim else np.arange(n).reshape([-1 if e == d else 1 for e in range(nd)])
                 for d, n in enumerate(idx.shape))


# -- gather / scatter --------------------------------------------------------------------------
def _check_gather_shapes(input: Tensor, dim: int, index: Tensor, src: Tensor | None, op: str) -> None:
    if _dim1(index) != _dim1(input):
        raise RuntimeError(f"Index tensor must have the same number of dimensions as "
                           f"{'input' if op == 'gather' else 'self'} tensor")
    if src is not None and _dim1(index) != _dim1(src):
        raise RuntimeError("Index tensor must have the same number of dimensions as src tensor")
    if index.numel() == 0:
        return
    for d in range(_dim1(index)):
        too_big = d != dim and _size1(index, d) > _size1(input, d)
        if op == "gather" and too_big:
            raise RuntimeError(f"Size does not match at dimension {d} expected index {list(index.shape)} to be "
                               f"no larger than self {list(input.shape)} apart from dimension {dim}")
        if op != "gather" and (too_big or (src is not None and _size1(index, d) > _size1(src, d))):
            tail = f" and to be no larger size than src {list(src.shape)}" if src is not None else ""
            raise RuntimeError(f"Expected index {list(index.shape)} to be no larger than self "
                               f"{list(input.shape)} apart from dimension {dim}{tail}")


def gather(input: Tensor, dim: int, index: Tensor, *, sparse_grad: bool = False,
           out: Tensor | None = None) -> Tensor:
    """out[i][j] = input[index[i][j]][j] (for dim=0): values picked along `dim`."""
    dim = input._dim(dim, "gather")
    check_index_dtype(index, _INDEX_DTYPES, "gather(): Expected dtype int32/int64 for index")
    _check_gather_shapes(input, dim, index, None, "gather")
    return emit("gather", (input, index), index._v.shape, input.dtype, dim, out)


@register_kernel("gather", "cpu")
def _gather_kernel(ins, outs, dim):
    src, idx = _at_least_1d(ins[0]), _at_least_1d(ins[1])
    if idx.size:
        idx = checked_index(idx, src.shape[dim], dim, exc=RuntimeError)
        outs[0][...] = np.take_along_axis(src[_box(idx.shape, dim)], idx, axis=dim).reshape(outs[0].shape)


_SCATTER_REDUCE = {"add": np.add, "multiply": np.multiply}


def scatter_(self: Tensor, dim: int, index: Tensor, src=None, value=None, *, reduce: str | None = None) -> Tensor:
    """In place: self[index[i][j]][j] = src[i][j] (for dim=0), or a `value`; `reduce` 'add'/'multiply'."""
    if src is not None and not isinstance(src, Tensor):
        src, value = None, src
    if src is None and value is None:
        raise TypeError("scatter() missing required argument 'src' or 'value'")
    dim = self._dim(dim, "scatter")
    check_index_dtype(index, _INDEX_DTYPES, "scatter(): Expected dtype int32/int64 for index")
    if src is not None and src.dtype is not self.dtype:
        raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
    _check_gather_shapes(self, dim, index, src, "scatter")
    if reduce is not None and reduce not in _SCATTER_REDUCE:
        raise RuntimeError("reduce argument must be either add or multiply.")
    ins = (index,) if src is None else (index, src)
    check_no_overlap(self, ins)
    typed = None if src is not None else scalar_for(self.dtype, value)
    launch_into("scatter", ins, (self,), (dim, reduce, typed))
    return self


def scatter(input: Tensor, dim: int, index: Tensor, src=None, value=None, *, reduce: str | None = None) -> Tensor:
    """A copy of `input` with `src` (or `value`) scattered into it along `dim` (see scatter_)."""
    return scatter_(M.clone(input), dim, index, src, value, reduce=reduce)


@register_kernel("scatter", "cpu")
def _scatter_kernel(ins, outs, attrs):
    dim, reduce, value = attrs
    dst, idx = _at_least_1d(outs[0]), _at_least_1d(ins[0])
    if not idx.size:
        return
    key = _scatter_key(checked_index(idx, dst.shape[dim], dim, exc=RuntimeError), dim)
    vals = _at_least_1d(ins[1])[_box(idx.shape)] if len(ins) > 1 else value
    if reduce is None:
        dst[key] = vals
    else:
        accumulate_at(_SCATTER_REDUCE[reduce], dst, key, vals)


def scatter_add_(self: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    """In place: self[index[i][j]][j] += src[i][j] (for dim=0); repeated indices accumulate."""
    if not isinstance(src, Tensor):
        raise TypeError(f"scatter_add(): argument 'src' must be Tensor, not {type(src).__name__}")
    return scatter_(self, dim, index, src, reduce="add")


def scatter_add(input: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    """A copy of `input` with `src` added at `index` along `dim`."""
    return scatter_add_(M.clone(input), dim, index, src)


_REDUCTIONS = {"sum": np.add, "prod": np.multiply, "mean": np.add, "amax": np.maximum, "amin": np.minimum}


def scatter_reduce_(self: Tensor, dim: int, index: Tensor, src: Tensor, reduce: str, *,
                    include_self: bool = True) -> Tensor:
    """In place: reduce (sum/prod/mean/amax/amin) `src` into self at `index` along `dim`."""
    dim = self._dim(dim, "scatter_reduce")
    check_index_dtype(index, _INDEX_DTYPES, "scatter(): Expected dtype int32/int64 for index")
    if not isinstance(src, Tensor):
        raise TypeError(f"scatter_reduce(): argument 'src' must be Tensor, not {type(src).__name__}")
    if src.dtype is not self.dtype:
        raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
    if reduce not in _REDUCTIONS:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    _check_gather_shapes(self, dim, index, src, "scatter")
    check_no_overlap(self, (index, src))
    launch_into("scatter_reduce", (index, src), (self,), (dim, reduce, bool(include_self)))
    return self


def scatter_reduce(input: Tensor, dim: int, index: Tensor, src: Tensor, reduce: str, *,
                   include_self: bool = True) -> Tensor:
    """A copy of `input` with `src` reduced into it at `index` along `dim`."""
    return scatter_reduce_(M.clone(input), dim, index, src, reduce, include_self=include_self)


def _identity(reduce: str, dtype: np.dtype):
    if reduce in ("sum", "mean"):
        return 0
    if reduce == "prod":
        return 1
    if dtype.kind == "f":
        return -np.inf if reduce == "amax" else np.inf
    if dtype.kind == "b":
        return reduce == "amin"
    info = np.iinfo(dtype)
    return info.min if reduce == "amax" else info.max


@register_kernel("scatter_reduce", "cpu")
def _scatter_reduce_kernel(ins, outs, attrs):
    dim, reduce, include_self = attrs
    dst, idx = _at_least_1d(outs[0]), _at_least_1d(ins[0])
    if not idx.size:
        return
    key = _scatter_key(checked_index(idx, dst.shape[dim], dim, exc=RuntimeError), dim)
    work = widened(dst).copy()
    if not include_self:
        work[key] = _identity(reduce, work.dtype)
    _REDUCTIONS[reduce].at(work, key, widened(_at_least_1d(ins[1])[_box(idx.shape)]).astype(work.dtype))
    if reduce == "mean":
        count = np.full(work.shape, int(include_self), np.int64)
        np.add.at(count, key, 1)
        count = np.maximum(count, 1)
        work = work / count if work.dtype.kind == "f" else work // count
    dst[...] = work


# -- index_select / index_add / index_copy / index_fill --------------------------------------
def index_select(input: Tensor, dim: int, index: Tensor, *, out: Tensor | None = None) -> Tensor:
    """The slices of `input` along `dim` at the positions in the vector `index`."""
    dim = input._dim(dim, "index_select")
    check_index_dtype(index, _INDEX_DTYPES, "index_select(): Expected dtype int32 or int64 for index")
    if index.ndim > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    if out is not None and out.dtype is not input.dtype:
        raise RuntimeError("index_select(): self and result must have the same scalar type")
    shape = list(input._v.shape)
    if shape:
        shape[dim] = index.numel()
    return emit("index_select", (input, index), tuple(shape), input.dtype, dim, out)


@register_kernel("index_select", "cpu")
def _index_select_kernel(ins, outs, dim):
    src = _at_least_1d(ins[0])
    idx = checked_index(ins[1].reshape(-1), src.shape[dim], dim, message="index out of range in self")
    outs[0][...] = np.take(src, idx, axis=dim).reshape(outs[0].shape)


def _check_vector_index(self: Tensor, dim: int, index: Tensor, source: Tensor, op: str) -> None:
    """The checks index_add_ and index_copy_ share: source is self with `dim` resized to len(index)."""
    if index.ndim > 1:
        raise IndexError(f"{op}(): Index is supposed to be a vector, but got dim: {index.ndim} with type: "
                         f"{torch_name(index.dtype)} and size: {list(index.shape)}")
    if source.ndim and self.ndim and source.ndim != self.ndim:
        raise IndexError(f"{op}(): When source and destination are not scalars, their dimensionality must "
                         f"match. Source dimensionality ({source.ndim}), destination dimensionality "
                         f"({self.ndim})")
    n = index.numel()
    if n != _size1(source, dim):
        if op == "index_copy_":
            raise IndexError(f"index_copy_(): Number of indices ({n}) should be equal to source.size(dim) "
                             f"({_size1(source, dim)})")
        raise RuntimeError(f"{op}(): Number of indices ({n}) should be equal to source.size(dim): "
                           f"({_size1(source, dim)}), for dim: {dim}")
    dst_slice = [s for d, s in enumerate(self._v.shape) if d != dim]
    src_slice = [s for d, s in enumerate(source._v.shape) if d != dim]
    if source.ndim and dst_slice != src_slice:
        if op == "index_copy_":
            raise RuntimeError(f"index_copy_(): Source/destination tensor must have same slice shapes. "
                               f"Destination slice shape: {' '.join(map(str, dst_slice))} at dimension {dim} and "
                               f"source slice shape: {' '.join(map(str, src_slice))} at dimension 0.")
        raise RuntimeError(f"source tensor shape must match self tensor shape, excluding the specified "
                               f"dimension. Got self.shape = {list(self.shape)} source.shape = "
                               f"{list(source.shape)}")


def index_add_(self: Tensor, dim: int, index: Tensor, source: Tensor, *, alpha=1) -> Tensor:
    """In place: self[index[i]] += alpha * source[i] along `dim` (repeated indices accumulate)."""
    dim = self._dim(dim, "index_add_")
    check_index_dtype(index, _INDEX_DTYPES, "index_add_(): Expected dtype int32/int64 for index but got: {got}")
    if source.dtype is not self.dtype:
        raise RuntimeError(f"index_add_(): self ({torch_name(self.dtype)}) and source "
                           f"({torch_name(source.dtype)}) must have the same scalar type")
    _check_vector_index(self, dim, index, source, "index_add_")
    check_no_overlap(self, (index, source))
    launch_into("index_add", (index, source), (self,), (dim, scalar_for(self.dtype, alpha)))
    return self


def index_add(input: Tensor, dim: int, index: Tensor, source: Tensor, *, alpha=1) -> Tensor:
    """A copy of `input` with alpha * source added at `index` along `dim`."""
    return index_add_(M.clone(input), dim, index, source, alpha=alpha)


def _along(a: np.ndarray, dim: int) -> np.ndarray:
    """A view of `a` (0-d as 1-d) with `dim` moved first."""
    return np.moveaxis(_at_least_1d(a), dim, 0)


@register_kernel("index_add", "cpu")
def _index_add_kernel(ins, outs, attrs):
    dim, alpha = attrs
    dst = _along(outs[0], dim)
    idx = checked_index(ins[0].reshape(-1), dst.shape[0], dim, exc=RuntimeError)
    src = widened(_along(ins[1], dim))
    accumulate_at(np.add, dst, idx, src if alpha == 1 else src * alpha)


def index_copy_(self: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor:
    """In place: self[index[i]] = source[i] along `dim`."""
    dim = self._dim(dim, "index_copy_")
    check_index_dtype(index, (dt.int64,), "index_copy_(): Expected a long tensor for index, but got {got}")
    if source.dtype is not self.dtype:
        raise RuntimeError(f"index_copy_(): self and source expected to have the same dtype, but got (self) "
                           f"{torch_name(self.dtype)} and (source) {torch_name(source.dtype)}")
    _check_vector_index(self, dim, index, source, "index_copy_")
    check_no_overlap(self, (index, source))
    launch_into("index_copy", (index, source), (self,), dim)
    return self


def index_copy(input: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor:
    """A copy of `input` with the slices at `index` along `dim` replaced by `source`."""
    return index_copy_(M.clone(input), dim, index, source)


@register_kernel("index_copy", "cpu")
def _index_copy_kernel(ins, outs, dim):
    dst = _along(outs[0], dim)
    idx = checked_index(ins[0].reshape(-1), dst.shape[0], dim,
                        message="index_copy_(): index {i} is out of bounds for dimension {d} with size {n}")
    dst[idx] = _along(ins[1], dim)


def index_fill_(self: Tensor, dim: int, index: Tensor, value) -> Tensor:
    """In place: the slices at `index` along `dim` set to `value` (a number or a 0-d tensor)."""
    dim = self._dim(dim, "index_fill_")
    check_index_dtype(index, (dt.int64,), "index_fill_(): Expected dtype int64 for index.", IndexError)
    if index.ndim > 1:
        raise RuntimeError("Index has to be a vector/scalar")
    if isinstance(value, Tensor) and value.ndim:
        raise RuntimeError(f"index_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                           f"{value.ndim} dimension(s).")
    if isinstance(value, Tensor):
        launch_into("index_fill", (index, value), (self,), (dim, None))
    else:
        launch_into("index_fill", (index,), (self,), (dim, scalar_for(self.dtype, value)))
    return self


def index_fill(input: Tensor, dim: int, index: Tensor, value) -> Tensor:
    """A copy of `input` with the slices at `index` along `dim` set to `value`."""
    return index_fill_(M.clone(input), dim, index, value)


@register_kernel("index_fill", "cpu")
def _index_fill_kernel(ins, outs, attrs):
    dim, value = attrs
    dst = _along(outs[0], dim)
    dst[checked_index(ins[0].reshape(-1), dst.shape[0], dim, negative_ok=True)] = \
        ins[1] if len(ins) > 1 else value


# -- flat indices: take, put_, take_along_dim --------------------------------------------------
_FLAT_MSG = "out of range: tried to access index {i} on a tensor of {n} elements."


def take(input: Tensor, index: Tensor, *, out: Tensor | None = None) -> Tensor:
    """Elements of `input` seen as 1-d, at `index` (negative indices count from the end)."""
    check_index_dtype(index, (dt.int64,), "take(): Expected a long tensor for index, but got {got}")
    if input.numel() == 0 and index.numel():
        raise IndexError("take(): tried to take from an empty tensor")
    return emit("take", (input, index), index._v.shape, input.dtype, None, out)


@register_kernel("take", "cpu")
def _take_kernel(ins, outs, attrs):
    flat = ins[0].reshape(-1)
    outs[0][...] = flat[checked_index(ins[1], flat.size, 0, negative_ok=True, message=_FLAT_MSG)]


def put_(self: Tensor, index: Tensor, source: Tensor, accumulate: bool = False) -> Tensor:
    """In place: self seen as 1-d gets source's values at `index` (summed when `accumulate`)."""
    check_index_dtype(index, (dt.int64,), "put_(): Expected a long tensor for index, but got {got}")
    if source.numel() != index.numel():
        raise IndexError(f"put_(): Expected source and index to have the same number of elements, but got "
                         f"source.numel() = {source.numel()}, index.numel() = {index.numel()}")
    if source.dtype is not self.dtype:
        raise RuntimeError(f"put_(): self and source expected to have the same dtype, but got self.dtype = "
                           f"{torch_name(self.dtype)} and source.dtype = {torch_name(source.dtype)}")
    if self.numel() == 0 and index.numel():
        raise IndexError("put_(): Tried to put elements into an empty tensor")
    check_no_overlap(self, (index, source))
    launch_into("put", (index, source), (self,), bool(accumulate))
    return self


def put(input: Tensor, index: Tensor, source: Tensor, accumulate: bool = False) -> Tensor:
    """A copy of `input` with source's values put at the flat `index`."""
    return put_(M.clone(input), index, source, accumulate)


@register_kernel("put", "cpu")
def _put_kernel(ins, outs, accumulate):
    dst = _at_least_1d(outs[0])
    idx = checked_index(ins[0].reshape(-1), dst.size, 0, negative_ok=True, message=_FLAT_MSG)
    key = np.unravel_index(idx, dst.shape)  # works for any strides, unlike a flat view
    if accumulate:
        accumulate_at(np.add, dst, key, ins[1].reshape(-1))
    else:
        dst[key] = ins[1].reshape(-1)


def take_along_dim(input: Tensor, indices: Tensor, dim: int | None = None, *, out: Tensor | None = None) -> Tensor:
    """Values of `input` at `indices` along `dim` (input and indices broadcast); flat when dim is None."""
    if not isinstance(indices, Tensor) or indices.dtype is not dt.int64:
        got = torch_name(indices.dtype) if isinstance(indices, Tensor) else type(indices).__name__
        raise RuntimeError(f"torch.take_along_dim(): dtype of indices should be Long but got {got}")
    if dim is None:
        return emit("take_along_dim", (input, indices), (indices.numel(),), input.dtype, None, out)
    if input.ndim == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    dim = input._dim(dim, "take_along_dim")
    if input.ndim != indices.ndim:
        raise RuntimeError(f"torch.take_along_dim(): input and indices should have the same number of "
                           f"dimensions, but got {input.ndim} dimensions for input, and {indices.ndim} "
                           "dimensions for indices")
    others = broadcast_shapes(tuple(1 if d == dim else s for d, s in enumerate(input._v.shape)),
                              tuple(1 if d == dim else s for d, s in enumerate(indices._v.shape)))
    shape = tuple(indices._v.shape[d] if d == dim else s for d, s in enumerate(others))
    return emit("take_along_dim", (input, indices), shape, input.dtype, dim, out)


@register_kernel("take_along_dim", "cpu")
def _take_along_dim_kernel(ins, outs, dim):
    out = outs[0]
    if dim is None:  # the flat form is gather on 1-d views: no negative indices
        flat = ins[0].reshape(-1)
        out[...] = flat[checked_index(ins[1].reshape(-1), flat.size, 0, exc=RuntimeError)]
        return
    src, idx, shape = _at_least_1d(ins[0]), _at_least_1d(ins[1]), _at_least_1d(out).shape
    idx = np.broadcast_to(checked_index(idx, src.shape[dim], dim, negative_ok=True, exc=RuntimeError), shape)
    src = np.broadcast_to(src, tuple(src.shape[d] if d == dim else n for d, n in enumerate(shape)))
    out[...] = np.take_along_axis(src, idx, axis=dim).reshape(out.shape)


METHODS.update(
    gather=gather, scatter=scatter, scatter_=scatter_, scatter_add=scatter_add, scatter_add_=scatter_add_,
    scatter_reduce=scatter_reduce, scatter_reduce_=scatter_reduce_, index_select=index_select,
    index_add=index_add, index_add_=index_add_, index_copy=index_copy, index_copy_=index_copy_,
    index_fill=index_fill, index_fill_=index_fill_, take=take, put_=put_, put=put, take_along_dim=take_along_dim)

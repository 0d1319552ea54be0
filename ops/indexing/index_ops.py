"""Indexing along one dim (index_select, index_add, index_copy, index_fill) and with flat indices
(take, put, take_along_dim), with their gradients.

Checks happen at the call, index values are checked by the kernels (see ops/indexing/scatter.py,
whose helpers these ops share). Gradients are written with these same ops, pairwise adjoint
(index_select <-> index_add, take <-> put), so double backward works.
"""
from __future__ import annotations

import numpy as np

from ...autograd.view_inplace import inplace_writer
from ...tensor import Tensor
from ...tensor import dtype as dt
from ...vm.codegen import kernel_module
from ..elementwise import copies, arithmetic as M
from ..dispatch.broadcast import broadcast_shapes
from ..dispatch.primitive import Primitive
from ..elementwise.plans import torch_name
from ..dispatch.factory_args import fill_scalar
from ..movement.view_grads import overload
from ..complex_numbers.half import fitted
from .scatter import (INDEX_DTYPES, accumulate_at, at_least_1d, check_index_dtype, check_no_overlap, check_now,
                      check_out_grad, checked_index, emit, filled, inplace_grad, input_shape_and, out_of_place,
                      picked_shapes, scalar_for, scatter_add, size1, wants, widened, written_only)
from ..dispatch.limited_dtypes import check as check_limited
from ..dispatch.mem_overlap import has_internal_overlap
from .expanded_writes import warn_expanded

__all__ = ["index_select", "index_add", "index_copy", "index_fill", "take", "take_along_dim", "put"]
METHODS: dict = {}


# -- index_select / index_add / index_copy / index_fill --------------------------------------
def index_select(input: Tensor, dim: int, index: Tensor, *, out: Tensor | None = None) -> Tensor:
    """The slices of `input` along `dim` at the positions in the vector `index`."""
    dim = input._dim(dim, "index_select")
    check_index_dtype(index, INDEX_DTYPES, "index_select(): Expected dtype int32 or int64 for index")
    if index.ndim > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    if input.ndim == 0 and index.numel() != 1:
        raise RuntimeError(f"index_select(): Index to scalar can have only 1 value, got {index.numel()} value(s)")
    if out is not None and out.dtype is not input.dtype:
        raise RuntimeError("index_select(): self and result must have the same scalar type")
    check_limited("index_select", input.dtype)
    check_out_grad("index_select", out, (input,))
    deferred = check_now(index, size1(input, dim), dim, **_select_bounds(input.ndim, dim))
    return emit(INDEX_SELECT, (input, index), dim, out, deferred)


def _select_shapes(inputs: tuple, dim: int) -> list:
    """The input's shape with `dim` (if any) resized to the number of indices."""
    x, index = inputs
    shape = x._v.shape
    return [(shape[:dim] + (index.numel(),) + shape[dim + 1:] if shape else shape, x.dtype)]


def _index_select_backward(node, g):
    shape, dim = node.attrs
    return index_add(filled(shape, g), dim, node.saved_tensors[0], g), None


def _select_bounds(ndim: int, dim: int) -> dict:
    """How torch's CPU index_select reports an index out of range: along dim 1 of an input of two or more
    dims it takes another kernel, whose check says RuntimeError in other words."""
    if ndim > 1 and dim == 1:
        return dict(exc=RuntimeError, message="INDICES element is out of DATA bounds, id={i} axis_dim={n}")
    return dict(message="index out of range in self")


def _index_select_kernel(ins, outs, dim):
    src = at_least_1d(ins[0])
    idx = checked_index(ins[1].reshape(-1), src.shape[dim], dim, **_select_bounds(ins[0].ndim, dim))
    outs[0][...] = np.take(src, idx, axis=dim).reshape(outs[0].shape)


def embedding_rows(weight: Tensor, indices: Tensor) -> Tensor:
    """The rows of the 2-d `weight` at the 1-d `indices` (no graph), issued as the op `embedding`: an index
    error found by the kernel names embedding, the op the user called."""
    deferred = check_now(indices, weight._v.shape[0], 0, message="index out of range in self")
    return EMBEDDING((weight, indices), 0, checks_data=deferred)


def _check_vector_index(self: Tensor, dim: int, index: Tensor, source: Tensor, op: str) -> None:
    """The checks index_add_ and index_copy_ share: source is self with `dim` resized to len(index)."""
    if index.ndim > 1:
        raise IndexError(f"{op}(): Index is supposed to be a vector, but got dim: {index.ndim} with type: "
                         f"{torch_name(index.dtype)} and size: {list(index.shape)}")
    if op == "index_copy_" and source.ndim and self.ndim and source.ndim != self.ndim:  # index_add_: the shape check
        raise IndexError(f"{op}(): When source and destination are not scalars, their dimensionality must "
                         f"match. Source dimensionality ({source.ndim}), destination dimensionality "
                         f"({self.ndim})")
    n = index.numel()
    if n != size1(source, dim):
        if op == "index_copy_":
            raise IndexError(f"index_copy_(): Number of indices ({n}) should be equal to source.size(dim) "
                             f"({size1(source, dim)})")
        raise RuntimeError(f"{op}(): Number of indices ({n}) should be equal to source.size(dim): "
                           f"({size1(source, dim)}), for dim: {dim}")
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


@inplace_writer
def index_add_(self: Tensor, dim: int, index: Tensor, source: Tensor, *, alpha=1) -> Tensor:
    """In place: self[index[i]] += alpha * source[i] along `dim` (repeated indices accumulate)."""
    dim = self._dim(dim, "index_add_")
    check_index_dtype(index, INDEX_DTYPES, "index_add_(): Expected dtype int32/int64 for index but got: {got}")
    if source.dtype is not self.dtype:
        raise RuntimeError(f"index_add_(): self ({torch_name(self.dtype)}) and source "
                           f"({torch_name(source.dtype)}) must have the same scalar type")
    _check_vector_index(self, dim, index, source, "index_add_")
    check_limited("index_add", self.dtype)
    check_no_overlap(self, (index, source))
    alpha = scalar_for(self.dtype, alpha)
    bounds = _add_bounds(self.ndim, dim, index.dtype, alpha)
    deferred = check_now(index, size1(self, dim), dim, **bounds)
    inplace_grad(self, (source,))  # (torch's error on a leaf, before anything is queued)
    INDEX_ADD.write((index, source), (self,), (dim, alpha, bounds), checks_data=deferred)
    return self


def _add_bounds(ndim: int, dim: int, index_dtype, alpha) -> dict:
    """How torch's CPU index_add_ reports an index out of range: past 1-d, along the first or last dim, with
    int64 indices and alpha 1 it runs index_put_ (RuntimeError naming the index); otherwise its own loop's
    IndexError."""
    if ndim > 1 and dim in (0, ndim - 1) and index_dtype is dt.int64 and alpha == 1 and alpha is not True:
        return dict(exc=RuntimeError)
    return dict(message="index out of range in self")


def _index_add_backward(node, g):
    dim, alpha = node.attrs[:2]
    if not wants(node, 2):
        return g, None, None
    picked = index_select(g, dim, node.saved_tensors[0])
    return g, None, picked if alpha == 1 else picked * alpha


def index_add(input: Tensor, dim: int, index: Tensor, source: Tensor, *, alpha=1) -> Tensor:
    """A copy of `input` with alpha * source added at `index` along `dim`."""
    return out_of_place(index_add_, input, dim, index, source, alpha=alpha)


def _along(a: np.ndarray, dim: int) -> np.ndarray:
    """A view of `a` (0-d as 1-d) with `dim` moved first."""
    return np.moveaxis(at_least_1d(a), dim, 0)


def _index_add_kernel(ins, outs, attrs):
    dim, alpha, bounds = attrs
    target = outs[0]
    if target.dtype.kind in "iu" and not isinstance(alpha, bool):  # torch casts alpha to the dtype: -1 is 255 in uint8
        alpha = int(np.array(alpha).astype(target.dtype))
    idx = checked_index(ins[0].reshape(-1), at_least_1d(target).shape[dim], dim, **bounds)
    kernels = kernel_module('.index_kernels', __package__)  # (None until compiled: then NumPy's add.at)
    if kernels is not None and target.flags.c_contiguous and target.size and target.dtype.kind in "iufc" \
            and target.dtype.itemsize > 2:
        # (outer, dim, inner) views: the compiled loop adds slices in index order, as torch's kernel
        shape = at_least_1d(target).shape
        outer, inner = int(np.prod(shape[:dim])), int(np.prod(shape[dim + 1:]))
        src = np.ascontiguousarray(ins[1], target.dtype).reshape(outer, len(idx), inner)
        # torch multiplies by alpha and adds in one rounding (a fused multiply-add) for tensors of 2 or more
        # dims: float32's alpha in float64 does the same; 1-d tensors round the product first
        wide = np.float64 if target.dtype == np.float32 and target.ndim > 1 else target.dtype.type
        kernels.add_slices(target.reshape(outer, shape[dim], inner), idx, src, wide(alpha), alpha != 1)
        return
    dst = _along(target, dim)
    src = widened(_along(ins[1], dim))
    accumulate_at(np.add, dst, idx, src if alpha == 1 else src * alpha)


@inplace_writer
def index_copy_(self: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor:
    """In place: self[index[i]] = source[i] along `dim`."""
    dim = self._dim(dim, "index_copy_")
    check_index_dtype(index, (dt.int64,), "index_copy_(): Expected a long tensor for index, but got {got}")
    if source.dtype is not self.dtype:
        raise RuntimeError(f"index_copy_(): self and source expected to have the same dtype, but got (self) "
                           f"{torch_name(self.dtype)} and (source) {torch_name(source.dtype)}")
    _check_vector_index(self, dim, index, source, "index_copy_")
    check_limited("index_copy", self.dtype)
    check_no_overlap(self, (index, source))
    deferred = check_now(index, size1(self, dim), dim,
              message="index_copy_(): index {i} is out of bounds for dimension {d} with size {n}")
    inplace_grad(self, (source,))  # (torch's error on a leaf, before anything is queued)
    INDEX_COPY.write((index, source), (self,), dim, checks_data=deferred)
    return self


def _index_copy_backward(node, g):
    dim, (index,) = node.attrs, node.saved_tensors
    return (index_fill(g, dim, index, 0) if wants(node, 0) else None, None,
            index_select(g, dim, index) if wants(node, 2) else None)


def index_copy(input: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor:
    """A copy of `input` with the slices at `index` along `dim` replaced by `source`."""
    return out_of_place(index_copy_, input, dim, index, source)


def _index_copy_kernel(ins, outs, dim):
    dst = _along(outs[0], dim)
    idx = checked_index(ins[0].reshape(-1), dst.shape[0], dim,
                        message="index_copy_(): index {i} is out of bounds for dimension {d} with size {n}")
    dst[idx] = _along(ins[1], dim)


@inplace_writer
def index_fill_(self: Tensor, dim: int, index: Tensor, value) -> Tensor:
    """In place: the slices at `index` along `dim` set to `value` (a number or a 0-d tensor)."""
    dim = self._dim(dim, "index_fill_")
    check_index_dtype(index, (dt.int64,), "index_fill_(): Expected dtype int64 for index.", IndexError)
    if index.ndim > 1:
        raise RuntimeError("Index has to be a vector/scalar")
    if isinstance(value, Tensor) and value.ndim:
        raise RuntimeError(f"index_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                           f"{value.ndim} dimension(s).")
    value_tensor = value if isinstance(value, Tensor) else None
    if isinstance(value, (complex, np.complexfloating)) and not self.dtype.is_complex:
        raise RuntimeError("index_fill_(): Converting complex Scalar to non-complex type is not supported")
    check_limited("index_fill", self.dtype)
    if 0 in self._v.strides and has_internal_overlap(self):  # (torch warns, then fills: each location once)
        warn_expanded("index_fill_")
    if value_tensor is None:  # a number outside the dtype's range (-0.5 into uint8) is torch's error, not wrapped
        fill_scalar("index_fill_", value, self.dtype)
    deferred = check_now(index, size1(self, dim), dim, negative_ok=True)
    inplace_grad(self, (value_tensor,))  # (torch's error on a leaf, before anything is queued)
    if value_tensor is not None:  # torch's class per overload: IndexFillBackward1
        INDEX_FILL.write((index, value), (self,), (dim, None), None, overload("index_fill", 1),
                         checks_data=deferred)
    else:
        INDEX_FILL.write((index,), (self,), (dim, scalar_for(self.dtype, value)), checks_data=deferred)
    return self


def _index_fill_backward(node, g):
    dim, (index,) = node.attrs[0], node.saved_tensors
    kept = index_fill(g, dim, index, 0)
    if len(node.next_functions) < 3:  # a number filled: the node's inputs are (self, index), or self alone
        return kept, None
    # the value's gradient: g summed over the filled slices (each once, even if indexed twice); the engine sums
    return kept if wants(node, 0) else None, None, g - kept if wants(node, 2) else None


def index_fill(input: Tensor, dim: int, index: Tensor, value) -> Tensor:
    """A copy of `input` with the slices at `index` along `dim` set to `value`."""
    return out_of_place(index_fill_, input, dim, index, value)


def _index_fill_kernel(ins, outs, attrs):
    dim, value = attrs
    dst = _along(outs[0], dim)
    dst[checked_index(ins[0].reshape(-1), dst.shape[0], dim, negative_ok=True)] = \
        fitted(dst, ins[1] if len(ins) > 1 else value)


# -- flat indices: take, put_, take_along_dim --------------------------------------------------
_FLAT_MSG = "out of range: tried to access index {i} on a tensor of {n} elements."


def take(input: Tensor, index: Tensor, *, out: Tensor | None = None) -> Tensor:
    """Elements of `input` seen as 1-d, at `index` (negative indices count from the end)."""
    check_index_dtype(index, (dt.int64,), "take(): Expected a long tensor for index, but got {got}")
    if input.numel() == 0 and index.numel():
        raise IndexError("take(): tried to take from an empty tensor")
    check_out_grad("take", out, (input,))
    check_limited("take", input.dtype)
    deferred = check_now(index, input.numel(), 0, negative_ok=True, message=_FLAT_MSG)
    return emit(TAKE, (input, index), None, out, deferred)


def _take_backward(node, g):
    return put(filled(node.attrs[0], g), node.saved_tensors[0], g, accumulate=True), None


def _take_kernel(ins, outs, attrs):
    flat = ins[0].reshape(-1)
    outs[0][...] = flat[checked_index(ins[1], flat.size, 0, negative_ok=True, message=_FLAT_MSG)]


@inplace_writer
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
    check_limited("put_", self.dtype)
    deferred = check_now(index, self.numel(), 0, negative_ok=True, message=_FLAT_MSG)
    inplace_grad(self, (source,))  # (torch's error on a leaf, before anything is queued)
    PUT.write((index, source), (self,), bool(accumulate), checks_data=deferred)
    return self


def _put_backward(node, g):
    accumulate, source_shape = node.attrs
    (index,) = node.saved_tensors
    grad_self = grad_source = None
    if wants(node, 0):
        grad_self = g if accumulate else put(g, index, filled(source_shape, g), accumulate=False)
    if wants(node, 2):
        grad_source = take(g, index.reshape(source_shape))
    return grad_self, None, grad_source


def put(input: Tensor, index: Tensor, source: Tensor, accumulate: bool = False) -> Tensor:
    """A copy of `input` with source's values put at the flat `index`."""
    return out_of_place(put_, input, index, source, accumulate)


def _put_kernel(ins, outs, accumulate):
    dst = at_least_1d(outs[0])
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
    check_out_grad("take_along_dim", out, (input,))
    check_limited("gather", input.dtype)  # (torch's take_along_dim gathers)
    if dim is None:
        deferred = check_now(indices, input.numel(), 0, exc=RuntimeError)
        return emit(TAKE_ALONG_DIM, (input, indices), None, out, deferred, "gather")  # (torch's node: gather's)
    if input.ndim != indices.ndim:  # (checked first, as torch: a 0-d input with 2-D indices is this error)
        raise RuntimeError(f"torch.take_along_dim(): input and indices should have the same number of "
                           f"dimensions, but got {input.ndim} dimensions for input, and {indices.ndim} "
                           "dimensions for indices")
    if input.ndim == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    dim = input._dim(dim, "take_along_dim")
    _take_along_shapes((input, indices), dim)  # (the broadcast's error, before the index check)
    deferred = check_now(indices, size1(input, dim), dim, negative_ok=True, exc=RuntimeError)
    return emit(TAKE_ALONG_DIM, (input, indices), dim, out, deferred, "gather")  # (torch's node: gather's)


def _take_along_shapes(inputs: tuple, dim: int | None) -> list:
    """Flat (dim None): the indices' count; else input and indices broadcast apart from `dim`, which the
    indices size."""
    input, indices = inputs
    if dim is None:
        return [((indices.numel(),), input.dtype)]
    others = broadcast_shapes(tuple(1 if d == dim else s for d, s in enumerate(input._v.shape)),
                              tuple(1 if d == dim else s for d, s in enumerate(indices._v.shape)))
    return [(tuple(indices._v.shape[d] if d == dim else s for d, s in enumerate(others)), input.dtype)]


def _take_along_dim_backward(node, g):
    shape, dim = node.attrs
    indices = node.saved_tensors[0]
    if dim is None:
        return put(filled(shape, g), indices, g, accumulate=True), None
    # scatter-add into input broadcast to the result (the engine sums the broadcast away); negatives wrapped
    wrapped = M.where(M.lt(indices, 0), indices + shape[dim], indices).expand(g._v.shape)
    spread = tuple(shape[d] if d == dim else n for d, n in enumerate(g._v.shape))
    return scatter_add(filled(spread, g), dim, wrapped, g), None


def _take_along_dim_kernel(ins, outs, dim):
    out = outs[0]
    if dim is None:  # the flat form is gather on 1-d views: no negative indices
        flat = ins[0].reshape(-1)
        out[...] = flat[checked_index(ins[1].reshape(-1), flat.size, 0, exc=RuntimeError)]
        return
    src, idx, shape = at_least_1d(ins[0]), at_least_1d(ins[1]), at_least_1d(out).shape
    idx = np.broadcast_to(checked_index(idx, src.shape[dim], dim, negative_ok=True, exc=RuntimeError), shape)
    src = np.broadcast_to(src, tuple(src.shape[d] if d == dim else n for d, n in enumerate(shape)))
    out[...] = np.take_along_axis(src, idx, axis=dim).reshape(out.shape)


# -- the records (the in-place ones' nodes take self, then the index and the source: no edge for the index) -----
def _embedding_shapes(inputs: tuple, attrs) -> list:
    weight, indices = inputs
    return [((indices.numel(), weight._v.shape[1]), weight.dtype)]


def _written(name: str, kernel, backward, node_attrs=None) -> Primitive:
    """The record of an op writing self at an index (node input 1), reading a source or value (2) if any."""
    return Primitive(name, written_only, cpu=kernel, cuda=None, backward=backward, saved=("input1",),
                     node_attrs=node_attrs, grad_inputs=(0, 2), checks_data=True, inplace=True)


def _picking(name: str, shapes, kernel, backward, saved: tuple = ("input1",)) -> Primitive:
    """The record of an op reading input0 at the indices input1 (saved: the indices, and input0 where torch saves it:
    a later write into it is then refused at backward, as torch's)."""
    return Primitive(name, shapes, cpu=kernel, cuda=None, backward=backward, saved=saved,
                     node_attrs=input_shape_and, grad_inputs=(0,), checks_data=True)


INDEX_SELECT = _picking("index_select", _select_shapes, _index_select_kernel, _index_select_backward)
TAKE = _picking("take", picked_shapes, _take_kernel, _take_backward, ("input1", "input0"))
TAKE_ALONG_DIM = _picking("take_along_dim", _take_along_shapes, _take_along_dim_kernel, _take_along_dim_backward,
                          ("input1", "input0"))
# the rows of a weight for nn.functional.embedding (index_select's kernel; embedding's gradient is its own op)
EMBEDDING = Primitive("embedding", _embedding_shapes, cpu=_index_select_kernel, cuda=None, checks_data=True)
INDEX_ADD = _written("index_add", _index_add_kernel, _index_add_backward)
INDEX_COPY = _written("index_copy", _index_copy_kernel, _index_copy_backward)
INDEX_FILL = _written("index_fill", _index_fill_kernel, _index_fill_backward)
PUT = _written("put", _put_kernel, _put_backward, lambda inputs, accumulate: (accumulate, inputs[2]._v.shape))

METHODS.update(index_select=index_select, index_add=index_add, index_add_=index_add_, index_copy=index_copy,
               index_copy_=index_copy_, index_fill=index_fill, index_fill_=index_fill_, take=take, put_=put_, put=put,
               take_along_dim=take_along_dim)

"""Repeating: repeat, tile and repeat_interleave (and its adjoint, the segment sums).

`tidal.ops.movement.shape_ops` re-exports these names (its `__all__` and `METHODS` include this module's).
repeat copies a stride-0 view once and records its node (RepeatBackward0: the copies summed back);
repeat_interleave by counts and its gradient are kernels (records at the bottom of the file), each the
other's adjoint, so gradients of any order are more of the two.
"""
from __future__ import annotations

import numpy as np

from ...tensor import Tensor
from ...tensor import dtype as dt
from ...tensor.tensor import contiguous_strides
from ..dispatch.dim_args import as_int, exporter, size_args, wrap_dim
from ..dispatch.primitive import Primitive
from ..elementwise import copies
from ..elementwise.plans import torch_name
from .views import expand, flatten, make_view, reshape, unsqueeze, view

__all__: list = []
METHODS: dict = {}
_public = exporter(__all__, METHODS, globals())


# -- kernels -------------------------------------------------------------------------------------
def _repeat_interleave_kernel(ins, outs, attrs):
    x, repeats = ins
    dim = attrs[0]
    if (repeats < 0).any():
        raise RuntimeError("repeats can not be negative")
    if int(repeats.sum()) != outs[0].shape[dim]:
        raise RuntimeError("allocated size does not match required size")
    outs[0][...] = np.repeat(x, repeats, axis=dim)


def _segment_sum_kernel(ins, outs, attrs):
    g, repeats = ins  # repeat_interleave's adjoint: consecutive runs of repeats[i] slices summed
    dim = attrs[0]
    out = outs[0]
    out[...] = 0
    if not g.size:
        return
    starts = np.concatenate(([0], np.cumsum(repeats)[:-1]))
    nonempty = repeats > 0
    lead = (slice(None),) * dim
    # reduceat sums from each start to the next one given: empty runs are left out so they stay zero
    sums = np.add.reduceat(g.astype(np.float32) if g.dtype.itemsize < 4 else g, starts[nonempty], axis=dim)
    out[lead + (nonempty,)] = sums


# -- repeat and tile -----------------------------------------------------------------------------
def repeat(self: Tensor, *repeats, **kwargs) -> Tensor:
    """The tensor tiled `repeats[i]` times along each dim (leading dims are added as needed)."""
    repeats = size_args("repeat", (kwargs.pop("repeats"),) if "repeats" in kwargs else repeats, "repeats")
    if kwargs:
        raise TypeError(f"repeat() got an unexpected keyword argument '{next(iter(kwargs))}'")
    n = self.ndim
    if len(repeats) < n:
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number of dimensions "
                           "of tensor")
    lead = len(repeats) - n
    shape = (1,) * lead + tuple(self._v.shape)
    strides = (0,) * lead + tuple(self._v.strides)
    out_shape = tuple(r * s for r, s in zip(repeats, shape))
    for s in out_shape:
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: {list(out_shape)}")
    # (r0, s0, r1, s1, ...) with stride 0 on the r's, copied once, is the repeated tensor.
    pair_shape = sum(((r, s) for r, s in zip(repeats, shape)), ())
    pairs = make_view(self, pair_shape, sum(((0, st) for st in strides), ()), self._v.offset)
    copy = copies.convert(pairs, self.dtype)
    out = make_view(copy, out_shape, contiguous_strides(out_shape), 0)
    REPEAT.attach((self,), (out,), (pair_shape, self._v.shape))
    return out


def _repeat_backward(node, g):
    pair_shape, shape = node.attrs  # the copies of each element are the even dims of the pairs view
    return (reshape(reshape(g, pair_shape).sum(dim=tuple(range(0, len(pair_shape), 2))), shape),)


METHODS["repeat"] = repeat


@_public
def tile(input: Tensor, dims) -> Tensor:
    """repeat, with `dims` padded by leading 1s to the tensor's rank."""
    dims = size_args("tile", (dims,), "dims")
    return repeat(input, (1,) * (input.ndim - len(dims)) + dims)


def _tile_method(self: Tensor, *dims, **kwargs) -> Tensor:
    return tile(self, kwargs["dims"] if "dims" in kwargs else dims[0] if len(dims) == 1 else dims)


METHODS["tile"] = _tile_method


# -- repeat_interleave ---------------------------------------------------------------------------
@_public
def repeat_interleave(input: Tensor, repeats=None, dim: int | None = None, *,
                      output_size: int | None = None) -> Tensor:
    """Each element repeated `repeats` times (an int, or a tensor of counts per slice of `dim`)."""
    if repeats is None:  # repeat_interleave(counts): indices 0..n-1 each repeated counts[i] times
        counts = input
        if counts.ndim != 1:
            raise RuntimeError("repeat_interleave only accept 1D vector as repeat")
        _check_counts_dtype(counts)
        index = Tensor._from_array(np.arange(counts.numel(), dtype=np.int64)).to(counts.device)
        return repeat_interleave(index, counts, 0, output_size=output_size)
    if dim is None:
        input, dim = flatten(input), 0
    d = wrap_dim(dim, input.ndim, "repeat_interleave")
    if isinstance(repeats, Tensor):
        if repeats.ndim > 1:
            raise RuntimeError("repeats must be 0-dim or 1-dim tensor")
        _check_counts_dtype(repeats)
        if repeats.numel() != 1:
            return _repeat_counts(input, repeats, d, output_size)
        repeats = repeats.item()
    repeats = as_int(repeats, "repeat_interleave", "repeats")
    if repeats < 0:
        raise RuntimeError("Repeats must be non-negative")
    shape = input._v.shape if input.ndim else (1,)
    if output_size is not None and output_size != shape[d] * repeats:
        raise RuntimeError(f"repeat_interleave: Invalid output_size, expected {shape[d] * repeats} but got "
                           f"{output_size}")
    x = unsqueeze(input if input.ndim else flatten(input), d + 1)
    sizes = list(x._v.shape)
    sizes[d + 1] = repeats
    copy = copies.convert(expand(x, sizes), x.dtype)
    return view(copy, shape[:d] + (shape[d] * repeats,) + shape[d + 1:])


def _check_counts_dtype(counts: Tensor) -> None:
    if counts.dtype.category != dt.INT:
        raise NotImplementedError(f"\"repeat_interleave_cpu\" not implemented for '{torch_name(counts.dtype)}'")


def _repeat_counts(input: Tensor, repeats: Tensor, d: int, output_size: int | None) -> Tensor:
    n = input._v.shape[d]
    if repeats.numel() != n:
        raise RuntimeError(f"repeats must have the same size as input along dim, but got repeats.size(0) = "
                           f"{repeats.numel()} and input.size({d}) = {n}")
    if output_size is None:  # the output size depends on the counts: a sync point
        counts = repeats._host_array()
        if (counts < 0).any():
            raise RuntimeError("repeats can not be negative")
        output_size = int(counts.sum())
    # PyTorch's node: repeat_interleave is an index_select there
    return REPEAT_INTERLEAVE((input, repeats), (d, output_size), node="index_select")


def _repeat_counts_backward(node, g):
    d, n = node.attrs
    return (_segment_sum(g, node.saved_tensors[0], d, n), None)


def _segment_sum(g: Tensor, repeats: Tensor, d: int, n: int) -> Tensor:
    """The sums of consecutive runs of `repeats[i]` slices of `g` along `d` (repeat_interleave's adjoint)."""
    return SEGMENT_SUM((g, repeats), (d, n))


def _segment_sum_backward(node, g):
    d, size = node.attrs
    return (_repeat_counts(g, node.saved_tensors[0], d, size), None)


# -- records -------------------------------------------------------------------------------------
def _resized(inputs: tuple, attrs: tuple) -> list:
    # attrs (dim, size): the first input's shape with dim `dim` of extent `size`
    d, size = attrs
    shape = list(inputs[0]._v.shape)
    shape[d] = size
    return [(shape, inputs[0].dtype)]


def _dim_and_input_extent(inputs: tuple, attrs: tuple) -> tuple:
    # each node keeps (dim, the input's extent there): the size its adjoint gives back
    return attrs[0], inputs[0]._v.shape[attrs[0]]


REPEAT = Primitive("repeat", None, cpu=None, backward=_repeat_backward)
REPEAT_INTERLEAVE = Primitive("repeat_interleave", _resized, cpu=_repeat_interleave_kernel,
                              backward=_repeat_counts_backward, saved=("input1",), grad_inputs=(0,),
                              node_attrs=_dim_and_input_extent)
SEGMENT_SUM = Primitive("segment_sum", _resized, cpu=_segment_sum_kernel, backward=_segment_sum_backward,
                        saved=("input1",), grad_inputs=(0,), node_attrs=_dim_and_input_extent)

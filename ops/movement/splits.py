"""Splits: split, chunk, tensor_split, hsplit/vsplit/dsplit and unbind. Every piece is a view.

split and unbind have one node for all pieces (records without a kernel, at the bottom of the file),
whose backward joins the pieces' gradients (zeros for pieces that got none) with cat or stack;
tensor_split records a slice per piece.
"""
from __future__ import annotations

from ...tensor import Tensor
from ...tensor import dtype as dt
from ..factories.creation import zeros
from ..dispatch.dim_args import as_int, exporter, size_args, wrap_dim
from ..dispatch.primitive import Primitive
from ..elementwise.plans import torch_name
from .shape_ops import cat, stack
from .view_grads import window_node
from .slicing import selected, slice_dim

__all__: list = []
METHODS: dict = {}
_public = exporter(__all__, METHODS, globals())


# -- splitting (views) ---------------------------------------------------------------------------
def _pieces(input: Tensor, d: int, sizes, name: str = "split") -> tuple:
    out, start = [], 0
    for n in sizes:
        out.append(slice_dim(input, d, start, n))
        start += n
    return _joined_back(name, input, tuple(out), d, "cat")


def _joined_back(name: str, input: Tensor, pieces: tuple, d: int, join: str) -> tuple:
    """Record one node for all `pieces` of `input`: its backward joins their gradients with `join` along `d`."""
    (SPLIT if join == "cat" else UNBIND).attach((input,), pieces, (join, d, pieces), node=name)
    return pieces


def _join_attrs(inputs: tuple, attrs: tuple) -> tuple:
    join, d, pieces = attrs
    return join, d, tuple([p._v.shape for p in pieces])


def _join_backward(node, *grads):
    join, d, shapes = node.attrs
    some = next(g for g in grads if g is not None)  # the engine calls only when a piece got a gradient
    filled = [zeros(shape, dtype=some.dtype, device=some.device) if g is None else g for g, shape in zip(grads, shapes)]
    return ((cat if join == "cat" else stack)(filled, d),)


@_public(method=False)
def split_with_sizes(input: Tensor, split_sizes, dim: int = 0) -> tuple:
    """Views of consecutive pieces of dim `dim` with the given sizes (which must sum to its size)."""
    if input.ndim == 0:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    d = wrap_dim(dim, input.ndim, "split_with_sizes")
    sizes = size_args("split_with_sizes", (split_sizes,), "split_sizes")
    n = input._v.shape[d]
    if any(s < 0 for s in sizes):
        raise RuntimeError(f"split_with_sizes expects split_sizes have only non-negative entries, but got "
                           f"split_sizes={list(sizes)}")
    if sum(sizes) != n:
        raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {n} (input tensor's size at "
                           f"dimension {d}), but got split_sizes={list(sizes)}")
    return _pieces(input, d, sizes, "split_with_sizes")


METHODS["split_with_sizes"] = split_with_sizes


@_public
def split(tensor: Tensor, split_size_or_sections, dim: int = 0) -> tuple:
    """Views of pieces of `split_size` elements (the last may be smaller), or of the given sizes."""
    if isinstance(split_size_or_sections, (tuple, list)):
        return split_with_sizes(tensor, split_size_or_sections, dim)
    size = as_int(split_size_or_sections, "split", "split_size")
    if tensor.ndim == 0:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    d = wrap_dim(dim, tensor.ndim, "split")
    n = tensor._v.shape[d]
    if size < 0:
        raise RuntimeError(f"split expects split_size be non-negative, but got split_size={size}")
    if size == 0 and n != 0:
        raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got dimension size of {n}")
    count = max(-(-n // size), 1) if size else 1
    return _pieces(tensor, d, [size] * (count - 1) + [n - size * (count - 1)])


def _split_method(self: Tensor, split_size, dim: int = 0) -> tuple:
    return split(self, split_size, dim)


METHODS["split"] = _split_method


@_public
def chunk(input: Tensor, chunks: int, dim: int = 0) -> tuple:
    """At most `chunks` views of equal size (the last may be smaller)."""
    chunks = as_int(chunks, "chunk", "chunks")
    if input.ndim == 0:
        raise RuntimeError("chunk expects at least a 1-dimensional tensor")
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    d = wrap_dim(dim, input.ndim, "chunk")
    n = input._v.shape[d]
    size = -(-n // chunks)
    if size == 0:
        return _pieces(input, d, [0] * chunks)
    return split(input, size, d)


@_public
def tensor_split(input: Tensor, indices_or_sections=None, dim: int = 0, *, sections=None, indices=None) -> tuple:
    """Views: `sections` nearly equal pieces, or pieces cut at `indices` (Python slice rules)."""
    given = [a for a in (indices_or_sections, sections, indices) if a is not None]
    if len(given) != 1:
        raise TypeError("tensor_split() expects one of indices_or_sections, sections or indices")
    arg = given[0]
    if input.ndim == 0:
        raise RuntimeError("tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 dims")
    if isinstance(arg, Tensor):
        if arg.dtype is not dt.int64:
            raise RuntimeError("tensor_split expected tensor_indices_or_sections to have dtype of long, but got "
                               f"{torch_name(arg.dtype)}")
        if arg.ndim > 1:
            raise RuntimeError("tensor_split expected tensor_indices_or_sections to be a zero-dimensional or "
                               f"one-dimensional tensor, but got a tensor with {arg.ndim} dims")
        arg = arg.tolist()  # the cut points decide the output views: a sync point
    d = wrap_dim(dim, input.ndim, "tensor_split")
    n = input._v.shape[d]
    if isinstance(arg, (tuple, list)):
        cuts = size_args("tensor_split", (arg,), "indices") + (n,)
        out, prev = [], 0  # (start, length) of each piece
        for cut in cuts:
            start, stop, _ = slice(prev, cut).indices(n)
            out.append((start, max(stop - start, 0)))
            prev = cut
    else:
        sections = as_int(arg, "tensor_split", "sections")
        if sections <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {sections}")
        small, extra = divmod(n, sections)
        out = [(k * small + min(k, extra), small + (k < extra)) for k in range(sections)]
    # each piece is its own slice, with its own node (as in PyTorch)
    return tuple(window_node("slice", slice_dim, input, slice_dim(input, d, start, length), d, start, length)
                 for start, length in out)


def _split_along(op: str, min_dims: int, dim_of, which: str):
    def fn(input: Tensor, indices_or_sections=None, *, sections=None, indices=None) -> tuple:
        # torch's keyword names: `sections` (an int) and `indices` (a list); positional, either
        indices_or_sections = next((v for v in (indices_or_sections, sections, indices) if v is not None), None)
        if indices_or_sections is None:
            raise TypeError(f"{op}() missing 1 required positional arguments: \"sections\"")
        if input.ndim < min_dims:
            raise RuntimeError(f"torch.{op} requires a tensor with at least {min_dims} dimension, but got a "
                               f"tensor with {input.ndim} dimensions!")
        d = dim_of(input)
        if not isinstance(indices_or_sections, (tuple, list, Tensor)):
            sections = as_int(indices_or_sections, op, "sections")
            n = input._v.shape[d]
            if sections == 0 or n % sections:
                raise RuntimeError(f"torch.{op} attempted to split along dimension {d}, but the size of the "
                                   f"dimension {n} is not divisible by the split_size {sections}!")
        return tensor_split(input, indices_or_sections, d)
    fn.__name__ = fn.__qualname__ = op
    fn.__doc__ = f"tensor_split along {which}; an int must divide that dim evenly."
    return _public(fn)


_split_along("hsplit", 1, lambda x: 1 if x.ndim > 1 else 0, "dim 1 (dim 0 for 1-d tensors)")
_split_along("vsplit", 2, lambda x: 0, "dim 0")
_split_along("dsplit", 3, lambda x: 2, "dim 2")


@_public
def unbind(input: Tensor, dim: int = 0) -> tuple:
    """Views of every slice along `dim`, that dim removed."""
    if input.ndim == 0:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    d = wrap_dim(dim, input.ndim, "unbind")
    pieces = tuple(selected(input, d, i) for i in range(input._v.shape[d]))
    return _joined_back("unbind", input, pieces, d, "stack")


def _chunk_cat(tensors, dim: int, num_chunks: int, *, out: Tensor | None = None) -> Tensor:
    """torch._chunk_cat: each tensor cut into num_chunks chunks along dim (zero-padded to equal chunks), each chunk
    flattened from dim on, and the chunks joined: (*sizes before dim, num_chunks, total)."""
    if not tensors:
        raise RuntimeError("_chunk_cat expects a non-empty input tensor list")
    if num_chunks < 1:
        raise RuntimeError("_chunk_cat expects positive num_chunks")
    if any(t.numel() == 0 for t in tensors):
        raise RuntimeError("_chunk_cat expects non-empty tensor")
    if dim < 0 and len({t.ndim for t in tensors}) > 1:
        raise RuntimeError("_chunk_cat expects non-negative dim when input tensors have different ndims")
    if any(dim >= t.ndim for t in tensors):
        raise RuntimeError("_chunk_cat expects dim < ndim for all input tensors")
    d = wrap_dim(dim, tensors[0].ndim, "_chunk_cat")
    lead = tuple(tensors[0].shape[:d])
    if any(tuple(t.shape[:d]) != lead for t in tensors):
        raise RuntimeError("_chunk_cat expects same sizes of 0,...,dim-1 dimensions for all tensors")
    rows = []
    for t in tensors:
        size = t.shape[d]
        chunk = -(-size // num_chunks)
        if chunk * num_chunks != size:  # zeros after the last element of dim
            pad = zeros(lead + (chunk * num_chunks - size,) + tuple(t.shape[d + 1:]), dtype=t.dtype, device=t.device)
            t = cat([t, pad], d)
        rows.append(t.reshape(lead + (num_chunks, -1)))
    result = cat(rows, d + 1)
    return result if out is None else out.copy_(result)


# -- records (the nodes of the pieces) -----------------------------------------------------------
SPLIT = Primitive("split", None, cpu=None, backward=_join_backward, node_attrs=_join_attrs)  # (split_with_sizes too)
UNBIND = Primitive("unbind", None, cpu=None, backward=_join_backward, node_attrs=_join_attrs)

"""Shape ops: joining, splitting, flipping, rolling, repeating, triangles and broadcasting.

Ops that move data are views plus one copy (`convert` of a strided view) or one registered
kernel, never a loop over elements. The splits (views) live in `splits.py` and are re-exported.
Each op records its node (named as PyTorch's) with a backward in tidal ops: cat narrows the
gradient per input, stack unbinds it, flip/roll/rot90 undo themselves, repeat sums the copies.
"""
from __future__ import annotations

import numpy as np

from ...autograd.graph import needs_grad, record
from ...tensor import Size, Tensor
from ...tensor import dtype as dt
from ...tensor.tensor import contiguous_strides
from ...vm import View
from ..elementwise import copies
from . import splits
from ..dispatch.broadcast import broadcast_shapes as _broadcast_pair
from ..factories.conversion import detach
from ..factories.creation import zeros
from ..dispatch.dim_args import as_int, dims_arg, exporter, size_args, wrap_dim
from ..dispatch.kernel_launch import launch
from ..dispatch.kernel_launch import launch_into, register_kernel, same_device
from ..elementwise.plans import check_leaf_inplace, torch_name
from ..dispatch.factory_args import empty_like_tensor, empty_strided_tensor
from ..dispatch.mem_overlap import check_out
from .memory_format import CONTIGUOUS, cat_memory_format, format_strides
from .splits import chunk, dsplit, hsplit, split, split_with_sizes, tensor_split, unbind, vsplit
from .view_grads import record_view, window_node
from .views import expand, expanded, flatten, make_view, reshape, transpose, unsqueeze, unsqueezed, view, view_strides
from .slicing import narrow, slice_dim
from ..dispatch.limited_dtypes import check as check_limited
from ..complex_numbers.half import fitted

__all__: list = list(splits.__all__)  # the splits live in their own file; they are shape ops too
METHODS: dict = dict(splits.METHODS)
_public = exporter(__all__, METHODS, globals())


# -- kernels -------------------------------------------------------------------------------------
@register_kernel("cat", "cpu")
def _cat_kernel(ins, outs, dim):
    out = outs[0]
    lead = (slice(None),) * dim
    start = 0
    for x in ins:
        n = x.shape[dim]
        out[lead + (slice(start, start + n),)] = fitted(out, x)  # (NumPy would copy a number into both complex32 parts)
        start += n


@register_kernel("repeat_interleave", "cpu")
def _repeat_interleave_kernel(ins, outs, dim):
    x, repeats = ins
    if (repeats < 0).any():
        raise RuntimeError("repeats can not be negative")
    if int(repeats.sum()) != outs[0].shape[dim]:
        raise RuntimeError("allocated size does not match required size")
    outs[0][...] = np.repeat(x, repeats, axis=dim)


@register_kernel("segment_sum", "cpu")
def _segment_sum_kernel(ins, outs, dim):
    g, repeats = ins  # repeat_interleave's adjoint: consecutive runs of repeats[i] slices summed
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


@register_kernel("triu", "cpu")
@register_kernel("tril", "cpu")
def _triangle_kernel(ins, outs, attrs):
    diagonal, upper = attrs
    x = ins[0]
    rows, cols = x.shape[-2:]
    keep = np.tri(rows, cols, diagonal - 1 if upper else diagonal, dtype=bool)
    outs[0][...] = np.where(~keep if upper else keep, x, np.zeros((), x.dtype))


# -- joining -------------------------------------------------------------------------------------
def _tensor_list(op: str, tensors) -> list:
    if isinstance(tensors, Tensor) or not isinstance(tensors, (tuple, list)):
        raise TypeError(f"{op}(): argument 'tensors' (position 1) must be tuple of Tensors, not "
                        f"{type(tensors).__name__}")
    for k, x in enumerate(tensors):
        if not isinstance(x, Tensor):
            raise TypeError(f"expected Tensor as element {k} in argument 0, but got {type(x).__name__}")
    return list(tensors)


def _result_dtype(tensors: list) -> dt.dtype:
    out = tensors[0].dtype
    for x in tensors[1:]:
        out = dt.promote_types(out, x.dtype)
    return out


@_public(method=False, aliases=("concat",))
def cat(tensors, dim: int = 0, *, out: Tensor | None = None) -> Tensor:
    """Tensors joined along an existing dim, promoted to a common dtype."""
    tensors = _tensor_list("cat", tensors)
    if not tensors:
        raise ValueError("torch.cat(): expected a non-empty list of Tensors")
    for k, x in enumerate(tensors):
        if x.ndim == 0:
            raise RuntimeError(f"zero-dimensional tensor (at position {k}) cannot be concatenated")
    dtype = _result_dtype(tensors)
    dev = same_device("cat", tensors)
    # 1-d empty tensors are skipped whatever the other shapes, as in PyTorch
    skipped = [x.ndim == 1 and x._v.shape[0] == 0 for x in tensors]
    parts = [x for x, skip in zip(tensors, skipped) if not skip]
    ref = parts[0] if parts else tensors[0]
    d = wrap_dim(dim, ref.ndim, "cat")
    shape = list(ref._v.shape)
    total = 0
    for k, (x, skip) in enumerate(zip(tensors, skipped)):
        if skip and parts:
            continue
        if x.ndim != ref.ndim:
            raise RuntimeError(f"Tensors must have same number of dimensions: got {ref.ndim} and {x.ndim}")
        for i, (a, b) in enumerate(zip(ref._v.shape, x._v.shape)):
            if i != d and a != b:
                raise RuntimeError(f"Sizes of tensors must match except in dimension {d}. Expected size {a} but "
                                   f"got size {b} for tensor number {k} in the list.")
        total += x._v.shape[d]
    shape[d] = total
    ins = tuple(x for x in parts if x.numel())  # the kernel casts each part as it copies
    grad = needs_grad(tensors)
    if out is not None:
        if grad:
            _no_out_grad("cat")
        check_out(out, tensors)
        if tuple(out._v.shape) != tuple(shape):
            raise RuntimeError(f"cat(): expected out of shape {shape}, but got {list(out._v.shape)}")
        if ins:
            launch_into("cat", ins, (out,), d)
        return out
    fmt = cat_memory_format(tensors)
    if fmt == CONTIGUOUS:
        result = launch("cat", ins, [(shape, dtype)], d)[0] if ins else Tensor._empty(tuple(shape), dtype, dev)
    else:  # torch lays the result out in the format all the inputs suggest
        result = empty_strided_tensor(tuple(shape), format_strides(tuple(shape), fmt), dtype, dev)
        if ins:
            launch_into("cat", ins, (result,), d)
            result._v.blob.version = 0  # a new tensor: its first write is not an in-place change
    if grad:
        extents = [(None if skip and parts else x._v.shape[d]) for x, skip in zip(tensors, skipped)]
        record("cat", _cat_backward, tuple(tensors), (result,), attrs=(d, extents))
    return result


def _cat_backward(node, g):
    d, extents = node.attrs
    grads, start = [], 0
    for (edge, _), n in zip(node.next_functions, extents):
        if n is None:  # a skipped 1-d empty input
            grads.append(None if edge is None else zeros(0, dtype=g.dtype, device=g.device))
            continue
        grads.append(None if edge is None else narrow(g, d, start, n))
        start += n
    return tuple(grads)


def _no_out_grad(op: str) -> None:
    raise RuntimeError(f"{op}(): functions with out=... arguments don't support automatic differentiation, but one "
                       "of the arguments requires grad.")


@_public(method=False)
def concatenate(tensors, dim: int = 0, *, axis: int | None = None, out: Tensor | None = None) -> Tensor:
    """Alias of cat (NumPy's name); torch takes the dim as `dim` or, as NumPy, `axis`."""
    return cat(tensors, dim if axis is None else axis, out=out)


@_public(method=False)
def stack(tensors, dim: int = 0, *, out: Tensor | None = None) -> Tensor:
    """Equal-shaped tensors joined along a new dim."""
    tensors = _tensor_list("stack", tensors)
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    first = tensors[0]._v.shape
    for k, x in enumerate(tensors):
        if x._v.shape != first:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got {list(first)} at entry 0 "
                               f"and {list(x._v.shape)} at entry {k}")
    d = wrap_dim(dim, len(first) + 1, "stack")
    grad = needs_grad(tensors)
    if grad and out is not None:
        _no_out_grad("stack")
    if d < len(first) and out is None:  # torch: cat along d, then d split in two by a view (cat's layout kept)
        joined = cat(tensors, d)
        v, stacked = joined._v, first[:d] + (len(tensors),) + first[d:]
        result = Tensor._make(View(v.blob, stacked, view_strides(v.shape, v.strides, stacked), v.offset, v.dtype),
                              joined.dtype, joined.device, joined._vm)  # a new tensor, not a view of `joined`
    else:  # the unsqueezed inputs record nothing: the stack node links straight to the inputs
        result = cat([unsqueezed(x, d) for x in tensors], d, out=out)
    if grad:
        record("stack", lambda node, g: unbind(g, node.attrs), tuple(tensors), (result,), attrs=d)
    return result


def _stack_along(op: str, tensors, lift, dim_of) -> Tensor:
    tensors = _tensor_list(op, tensors)
    if not tensors:
        raise RuntimeError(f"{op} expects a non-empty TensorList")
    lifted = [lift(x) for x in tensors]
    return cat(lifted, dim_of(lifted))


@_public(method=False)
def hstack(tensors) -> Tensor:
    """Tensors joined column-wise (along dim 0 for 1-d inputs, else dim 1)."""
    return _stack_along("hstack", tensors, atleast_1d, lambda ts: 0 if ts[0].ndim == 1 else 1)


@_public(method=False, aliases=("row_stack",))
def vstack(tensors) -> Tensor:
    """Tensors made at least 2-d and joined along dim 0."""
    return _stack_along("vstack", tensors, atleast_2d, lambda ts: 0)


@_public(method=False)
def dstack(tensors) -> Tensor:
    """Tensors made at least 3-d and joined along dim 2."""
    return _stack_along("dstack", tensors, atleast_3d, lambda ts: 2)


@_public(method=False)
def column_stack(tensors) -> Tensor:
    """0-d and 1-d tensors become columns; everything is joined along dim 1."""
    return _stack_along("column_stack", tensors,
                        lambda x: reshape(x, (x.numel(), 1)) if x.ndim <= 1 else x, lambda ts: 1)


# -- reordering data (copies) --------------------------------------------------------------------
def _reversed_view(input: Tensor, dims: tuple) -> Tensor:
    # Internal only: negative strides never reach the user, the caller copies at once.
    shape, strides = input._v.shape, list(input._v.strides)
    offset = input._v.offset
    for d in dims:
        if shape[d] > 1:
            offset += (shape[d] - 1) * strides[d]
            strides[d] = -strides[d]
    return make_view(input, shape, strides, offset)


@_public
def flip(input: Tensor, dims) -> Tensor:
    """A copy with the order of elements reversed along `dims` (laid out like `input`)."""
    dims = dims_arg(dims, input.ndim, "flip")
    check_limited("flip", input.dtype)
    out = copies.convert(_reversed_view(input, dims), input.dtype,
                         out=empty_like_tensor(input, input.dtype, input.device))
    return record_view("flip", input, out, lambda node, g: (flip(g, node.attrs),), dims)


def _flip_method(self: Tensor, *dims, **kwargs) -> Tensor:
    if "dims" in kwargs:
        return flip(self, kwargs["dims"])
    return flip(self, dims[0] if len(dims) == 1 and isinstance(dims[0], (tuple, list)) else dims)


METHODS["flip"] = _flip_method


@_public
def fliplr(input: Tensor) -> Tensor:
    """Columns (dim 1) reversed."""
    if input.ndim < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return flip(input, (1,))


@_public
def flipud(input: Tensor) -> Tensor:
    """Rows (dim 0) reversed."""
    if input.ndim < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return flip(input, (0,))


@_public
def roll(input: Tensor, shifts, dims=None) -> Tensor:
    """Elements shifted along `dims` with wrap-around; without dims, over the flattened tensor."""
    shifts = (shifts,) if not isinstance(shifts, (tuple, list)) else tuple(shifts)
    dims = () if dims is None else (dims,) if not isinstance(dims, (tuple, list)) else tuple(dims)
    out = _roll(detach(input), shifts, dims)  # built untracked: one node for the whole op
    return record_view("roll", input, out, _roll_backward, (shifts, dims))


def _roll_backward(node, g):
    shifts, dims = node.attrs
    return (roll(g, tuple(-as_int(s, "roll", "shifts") for s in shifts), dims or None),)


def _roll(input: Tensor, shifts: tuple, dims: tuple) -> Tensor:
    if not shifts:
        raise RuntimeError("`shifts` required")
    if not dims:
        if len(shifts) != 1:
            raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:0")
        return reshape(_roll(flatten(input), shifts, (0,)), input._v.shape)
    if len(shifts) != len(dims):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:{len(dims)}")
    if input.ndim == 0:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    out = input
    for shift, dim in zip(shifts, dims):
        d = wrap_dim(dim, input.ndim, "roll", "dims")
        n = out._v.shape[d]
        s = as_int(shift, "roll", "shifts") % n if n else 0
        if s:
            out = cat([slice_dim(out, d, n - s, s), slice_dim(out, d, 0, n - s)], d)
    return out if out is not input else copies.convert(input, input.dtype)


@_public
def rot90(input: Tensor, k: int = 1, dims=(0, 1)) -> Tensor:
    """A copy rotated by k quarter turns in the plane of `dims`, from the first towards the second."""
    dims = tuple(dims)
    n = input.ndim
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if n < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {n}")
    a, b = dims
    if a == b or abs(a - b) == n:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {a} and dim1 = {b}")
    k = as_int(k, "rot90", "k") % 4
    x = detach(input)  # built untracked: one node for the whole op
    if k == 1:
        out = transpose(flip(x, (b,)), a, b)
    elif k == 2:
        out = flip(x, dims)
    elif k == 3:
        out = transpose(flip(x, (a,)), a, b)
    else:
        out = copies.convert(x, x.dtype)
    return record_view("rot90", input, out, lambda node, g: (rot90(g, -node.attrs[0], node.attrs[1]),), (k, dims))


# -- repeating -----------------------------------------------------------------------------------
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
    return record_view("repeat", self, out, _repeat_backward, (pair_shape, self._v.shape))


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
    shape = list(input._v.shape)
    shape[d] = output_size
    out = launch("repeat_interleave", (input, repeats), [(shape, input.dtype)], d)[0]
    if needs_grad((input,)):  # PyTorch's node: repeat_interleave is an index_select there
        record("index_select", _repeat_counts_backward, (input, None), (out,), saved=(repeats,), attrs=(d, n))
    return out


def _repeat_counts_backward(node, g):
    d, n = node.attrs
    return (_segment_sum(g, node.saved_tensors[0], d, n), None)


def _segment_sum(g: Tensor, repeats: Tensor, d: int, n: int) -> Tensor:
    """The sums of consecutive runs of `repeats[i]` slices of `g` along `d` (repeat_interleave's adjoint)."""
    shape = list(g._v.shape)
    shape[d] = n
    out = launch("segment_sum", (g, repeats), [(shape, g.dtype)], d)[0]
    if needs_grad((g,)):
        record("segment_sum", _segment_sum_backward, (g, None), (out,), saved=(repeats,), attrs=(d, g._v.shape[d]))
    return out


def _segment_sum_backward(node, g):
    d, size = node.attrs
    return (_repeat_counts(g, node.saved_tensors[0], d, size), None)


# -- triangles -----------------------------------------------------------------------------------
def _triangle(name: str, upper: bool):
    def fn(input: Tensor, diagonal: int = 0, *, out: Tensor | None = None) -> Tensor:
        if input.ndim < 2:
            raise RuntimeError(f"{name}: input tensor must have at least 2 dimensions")
        diagonal = as_int(diagonal, name, "diagonal")
        check_limited(name, input.dtype)
        grad = needs_grad((input,))
        if out is not None and out is not input and grad:
            _no_out_grad(name)
        if out is input and grad:
            check_leaf_inplace(out)
        if out is not None:
            launch_into(name, (input,), (out,), (diagonal, upper))
        else:
            out = launch(name, (input,), [(input._v.shape, input.dtype)], (diagonal, upper))[0]
        if grad:  # the gradient is masked like the values (in place too: the node's input is the old value)
            record(name, lambda node, g: (fn(g, node.attrs),), (input,), (out,), attrs=diagonal)
        return out

    def inplace(self: Tensor, diagonal: int = 0) -> Tensor:
        return fn(self, diagonal, out=self)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"A copy with the elements {'below' if upper else 'above'} the `diagonal`-th diagonal zeroed."
    inplace.__name__ = name + "_"
    METHODS[name + "_"] = inplace
    return _public(fn)


tril = _triangle("tril", upper=False)
triu = _triangle("triu", upper=True)


# -- broadcasting and rank -----------------------------------------------------------------------
@_public
def broadcast_to(input: Tensor, size) -> Tensor:
    """A view of `input` expanded to `size` (-1 keeps a size)."""
    return expanded(input, size_args("broadcast_to", (size,)))


def _broadcast_to_method(self: Tensor, *size, **kwargs) -> Tensor:
    """self.broadcast_to(size): the sizes may also come as separate arguments, as torch's method takes them."""
    if "size" in kwargs:
        size = (kwargs.pop("size"),) + size
    if kwargs:
        raise TypeError(f"broadcast_to() got an unexpected keyword argument '{next(iter(kwargs))}'")
    if not size:
        raise TypeError('broadcast_to() missing 1 required positional arguments: "size"')
    return broadcast_to(self, size[0] if len(size) == 1 else size)


METHODS["broadcast_to"] = _broadcast_to_method


@_public(method=False)
def broadcast_tensors(*tensors) -> tuple:
    """Views of every tensor expanded to their common broadcast shape."""
    if len(tensors) == 1 and isinstance(tensors[0], (tuple, list)):
        tensors = tuple(tensors[0])
    if not tensors:
        return ()
    shape = _broadcast_pair(*(x._v.shape for x in tensors))
    return tuple(x if x._v.shape == shape else broadcast_to(x, shape) for x in tensors)  # as PyTorch


@_public(method=False)
def broadcast_shapes(*shapes) -> Size:
    """The shape that tensors of all `shapes` (ints or sequences) broadcast to."""
    shapes = [(s,) if not isinstance(s, (tuple, list)) else tuple(s) for s in shapes]
    result = [1] * max((len(s) for s in shapes), default=0)
    for k, shape in enumerate(shapes):
        for i in range(-1, -len(shape) - 1, -1):
            size = as_int(shape[i], "broadcast_shapes", "shapes")
            if size < 0:
                raise ValueError("Attempting to broadcast a dimension with negative length!")
            if size == 1 or size == result[i]:
                continue
            if result[i] != 1:
                raise RuntimeError(f"Attempting to broadcast a dimension of length {size} at {i}! Mismatching "
                                   f"argument at index {k} had {shape}; but expected shape should be "
                                   f"broadcastable to {result}")
            result[i] = size
    return Size(result)


def _at_least(rank: int, lift):
    def fn(*tensors):
        single = len(tensors) == 1 and isinstance(tensors[0], Tensor)
        if len(tensors) == 1 and isinstance(tensors[0], (tuple, list)):
            tensors = tuple(tensors[0])
        out = tuple(x if x.ndim >= rank else lift(x) for x in tensors)
        return out[0] if single else out
    fn.__name__ = fn.__qualname__ = f"atleast_{rank}d"
    fn.__doc__ = f"Tensors with fewer than {rank} dims viewed with size-1 dims added (one tensor or a tuple)."
    return _public(fn, method=False)


def _lift2(x: Tensor) -> Tensor:
    return reshape(x, (1, 1)) if x.ndim == 0 else unsqueeze(x, 0)


def _lift3(x: Tensor) -> Tensor:
    if x.ndim == 0:
        return reshape(x, (1, 1, 1))
    return unsqueeze(unsqueeze(x, 0) if x.ndim == 1 else x, -1)


atleast_1d = _at_least(1, lambda x: reshape(x, (1,)))
atleast_2d = _at_least(2, _lift2)
atleast_3d = _at_least(3, _lift3)


@_public
def narrow_copy(input: Tensor, dim: int, start: int, length: int) -> Tensor:
    """A contiguous copy of `narrow(input, dim, start, length)`."""
    if input.ndim == 0:  # (before the dim check, as torch)
        raise RuntimeError("narrow_copy: narrow() cannot be applied to a 0-dim tensor.")
    if isinstance(dim, int) and dim >= input.ndim:  # torch checks this before wrapping the dim (RuntimeError)
        raise RuntimeError("Expected dim < static_cast<int64_t>(self_sizes.size()) to be true, but got false.")
    out = copies.convert(narrow(detach(input), dim, start, length), input.dtype)
    return window_node("narrow_copy", narrow, input, out, dim, start, length)


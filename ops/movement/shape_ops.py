"""Shape ops: joining, splitting, flipping, rolling, repeating, triangles and broadcasting.

Ops that move data are views plus one copy (`convert` of a strided view) or one kernel (cat, the
triangles), never a loop over elements. The splits (views) live in `splits.py`, above this file (their
nodes join with cat and stack); repeat and repeat_interleave in `repeats.py`, re-exported here. Each op's
node (named as PyTorch's) is a record at the bottom of the file, its backward in tidal ops: cat narrows the gradient per input,
stack unbinds it, flip/roll/rot90 undo themselves; stack, flip, roll and rot90 are composites whose
records have no kernel (their nodes are attached to the composite's result).
"""
from __future__ import annotations

import numpy as np

from ...autograd.graph import needs_grad
from ...tensor import Size, Tensor
from ...tensor import dtype as dt
from ...tensor.tensor import numel_of
from ...vm import View
from ..elementwise import copies
from . import repeats
from ..dispatch.broadcast import broadcast_shapes as _broadcast_pair
from ..factories.conversion import detach
from ..factories.creation import zeros
from ..dispatch.dim_args import as_int, dims_arg, exporter, size_args, wrap_dim
from ..dispatch.kernel_launch import same_device
from ..dispatch.primitive import Primitive
from ..elementwise.plans import check_leaf_inplace
from ..dispatch.factory_args import empty_like_tensor, empty_strided_tensor
from ..dispatch.mem_overlap import check_out
from .memory_format import CONTIGUOUS, cat_memory_format, format_strides
from .repeats import repeat, repeat_interleave, tile  # noqa: F401 (re-exported)
from .view_grads import window_node
from .views import (expanded, flatten, make_view, reshape, transpose, unsqueeze, unsqueezed, unsqueezed_geometry,
                    view_strides)
from .slicing import narrow, slice_dim
from ..dispatch.limited_dtypes import check as check_limited
from ..complex_numbers.half import fitted

__all__: list = list(repeats.__all__)  # (ops in their own file; they are shape ops too)
METHODS: dict = {**repeats.METHODS}
_public = exporter(__all__, METHODS, globals())


# -- kernels -------------------------------------------------------------------------------------
def _cat_kernel(ins, outs, attrs):
    out, dim = outs[0], attrs[0]
    parts = [x for x in ins if x.size]  # (an empty input adds nothing; a skipped 1-d one may lack the dim)
    dtype = out.dtype
    for x in parts:
        if x.dtype != dtype:
            break
    else:  # inputs of the result's dtype (the usual case): one NumPy call, not one assignment per input
        if parts:
            np.concatenate(parts, axis=dim, out=out)
        return
    lead = (slice(None),) * dim
    start = 0
    for x in parts:
        n = x.shape[dim]
        out[lead + (slice(start, start + n),)] = fitted(out, x)  # (NumPy would copy a number into both complex32 parts)
        start += n


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
    for x in tensors:
        if x.dtype is not out:
            out = dt.promote_types(out, x.dtype)
    return out


@_public(method=False, aliases=("concat",))
def cat(tensors, dim: int = 0, *, out: Tensor | None = None) -> Tensor:
    """Tensors joined along an existing dim, promoted to a common dtype."""
    tensors = _tensor_list("cat", tensors)
    if not tensors:
        raise ValueError("torch.cat(): expected a non-empty list of Tensors")
    for k, x in enumerate(tensors):
        if not x._v.shape:
            raise RuntimeError(f"zero-dimensional tensor (at position {k}) cannot be concatenated")
    dtype = _result_dtype(tensors)
    dev = same_device("cat", tensors)
    # 1-d empty tensors are skipped whatever the other shapes, as in PyTorch
    skipped = [x._v.shape == (0,) for x in tensors]
    parts = [x for x, skip in zip(tensors, skipped) if not skip]
    ref = parts[0] if parts else tensors[0]
    ref_shape = ref._v.shape
    d = wrap_dim(dim, len(ref_shape), "cat")
    shape = list(ref_shape)
    total = 0
    for k, (x, skip) in enumerate(zip(tensors, skipped)):
        if skip and parts:
            continue
        x_shape = x._v.shape
        if x_shape != ref_shape:  # (the same shape, as stack's inputs: nothing to compare dim by dim)
            if len(x_shape) != len(ref_shape):
                raise RuntimeError(f"Tensors must have same number of dimensions: got {len(ref_shape)} and "
                                   f"{len(x_shape)}")
            for i, (a, b) in enumerate(zip(ref_shape, x_shape)):
                if i != d and a != b:
                    raise RuntimeError(f"Sizes of tensors must match except in dimension {d}. Expected size {a} but "
                                       f"got size {b} for tensor number {k} in the list.")
        total += x_shape[d]
    shape[d] = total
    attrs = (d, tuple(shape), dtype)  # the kernel casts each input as it copies
    if out is not None:
        if needs_grad(tensors):
            _no_out_grad("cat")
        check_out(out, tensors)
        if dtype.category > out.dtype.category:  # (torch's can_cast: never to a lower kind)
            raise TypeError("torch.cat(): input types can't be cast to the desired output type "
                            f"{out.dtype.scalar_name}")
        if tuple(out._v.shape) != tuple(shape):
            raise RuntimeError(f"cat(): expected out of shape {shape}, but got {list(out._v.shape)}")
        if numel_of(shape):  # (nothing to write: out's version stays)
            CAT.write(tuple(tensors), (out,), attrs)
        return out
    fmt = cat_memory_format(tensors)
    if fmt == CONTIGUOUS:
        return CAT(tuple(tensors), attrs)
    # torch lays the result out in the format all the inputs suggest
    result = empty_strided_tensor(tuple(shape), format_strides(tuple(shape), fmt), dtype, dev)
    CAT.write(tuple(tensors), (result,), attrs)
    result._v.blob.version = 0  # a new tensor: its first write is not an in-place change
    return result


def _cat_node_attrs(inputs: tuple, attrs: tuple) -> tuple:
    # (dim, each input's extent along it; None for a skipped 1-d empty input, whose gradient is empty)
    d = attrs[0]
    skipped = [x.ndim == 1 and x._v.shape[0] == 0 for x in inputs]
    parts = not all(skipped)
    return d, [(None if skip and parts else x._v.shape[d]) for x, skip in zip(inputs, skipped)]


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
    if out is not None and needs_grad(tensors):
        _no_out_grad("stack")
    if d < len(first) and out is None:  # torch: cat along d, then d split in two by a view (cat's layout kept)
        joined = cat(tensors, d)
        v, stacked = joined._v, first[:d] + (len(tensors),) + first[d:]
        result = Tensor._make(View(v.blob, stacked, view_strides(v.shape, v.strides, stacked), v.offset, v.dtype),
                              joined.dtype, joined.device, joined._vm)  # a new tensor, not a view of `joined`
    else:  # the lifted inputs record nothing: the stack node links straight to the inputs
        result = cat([_lifted(x, d) for x in tensors], d, out=out)
    STACK.attach(tuple(tensors), (result,), d)
    return result


def _lifted(x: Tensor, d: int) -> Tensor:
    # x with a size-1 dim at d for stack's cat to read: a bare tensor over x's memory (no base, no view tracking:
    # cat's kernel is its only reader) where x is plain; a tracked view otherwise (a conj view's bit stays)
    if x.__class__ is not Tensor:
        return unsqueezed(x, d)
    v = x._v
    shape, strides = unsqueezed_geometry(v.shape, v.strides, d)
    return Tensor._make(View(v.blob, shape, strides, v.offset, v.dtype), x.dtype, x.device, x._vm)


def _stack_backward(node, g):
    return g.unbind(node.attrs)  # (Tensor.unbind: splits.py's, which sits above this file)


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
    FLIP.attach((input,), (out,), dims)
    return out


def _flip_backward(node, g):
    return (flip(g, node.attrs),)


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
    ROLL.attach((input,), (out,), (shifts, dims))
    return out


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
    ROT90.attach((input,), (out,), (k, dims))
    return out


def _rot90_backward(node, g):
    k, dims = node.attrs
    return (rot90(g, -k, dims),)


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
        triangle = TRIU if upper else TRIL
        if out is None:
            return triangle((input,), (diagonal, upper))
        # (in place too, the gradient is masked like the values: the node's input is the old value)
        triangle.write((input,), (out,), (diagonal, upper))
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


# -- records -------------------------------------------------------------------------------------
def _planned(inputs: tuple, attrs: tuple) -> list:
    # (the front end has checked the inputs and planned the result: attrs (dim, shape, dtype))
    return [(attrs[1], attrs[2])]


def _same_shape(inputs: tuple, attrs) -> list:
    return [(inputs[0]._v.shape, inputs[0].dtype)]


def _tril_backward(node, g):
    return (tril(g, node.attrs[0]),)  # (attrs: diagonal, upper)


def _triu_backward(node, g):
    return (triu(g, node.attrs[0]),)


CAT = Primitive("cat", _planned, cpu=_cat_kernel, backward=_cat_backward, node_attrs=_cat_node_attrs, sbp="concat")
TRIL = Primitive("tril", _same_shape, cpu=_triangle_kernel, backward=_tril_backward)
TRIU = Primitive("triu", _same_shape, cpu=_triangle_kernel, backward=_triu_backward)
# composites with a node of their own (no kernel: their results come from other ops)
STACK = Primitive("stack", None, cpu=None, backward=_stack_backward)
FLIP = Primitive("flip", None, cpu=None, backward=_flip_backward)
ROLL = Primitive("roll", None, cpu=None, backward=_roll_backward)
ROT90 = Primitive("rot90", None, cpu=None, backward=_rot90_backward)

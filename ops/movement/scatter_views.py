"""The out-of-place forms of view ops: *_scatter (a copy of input with src written through a view) and *_copy
(a view op's result as a new contiguous tensor).

Both are composites: clone + view + copy_ for the scatters (autograd's view/in-place rules then give the
gradients PyTorch's formulas give: g with the view zeroed for input, g through the view for src), and view +
clone for the copies.
"""
from __future__ import annotations

from ...tensor import Tensor
from ..elementwise import copies
from . import splits, slicing, views
from ..factories.conversion import detach
from ..dispatch.mem_overlap import has_internal_overlap

__all__ = ["slice_scatter", "select_scatter", "diagonal_scatter", "as_strided_scatter", "alias_copy",
           "as_strided_copy", "detach_copy", "diagonal_copy", "expand_copy", "permute_copy",
           "select_copy", "slice_copy", "split_copy", "split_with_sizes_copy", "squeeze_copy", "t_copy",
           "transpose_copy", "unbind_copy", "unfold_copy", "unsqueeze_copy", "view_copy"]
METHODS: dict = {}


def _check(op: str, input, src) -> None:
    for arg, pos, value in (("input", 1, input), ("src", 2, src)):
        if not isinstance(value, Tensor):
            raise TypeError(f"{op}(): argument '{arg}' (position {pos}) must be Tensor, not {type(value).__name__}")


def _scatter(op: str, input: Tensor, src: Tensor, view_of, clone=copies.clone) -> Tensor:
    _check(op, input, src)
    out = clone(input)
    region = view_of(out)
    if tuple(region.shape) != tuple(src.shape):
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = {list(src.shape)}, "
                           f"slice size = {list(region.shape)}")
    region.copy_(src)
    return out


def slice_scatter(input: Tensor, src: Tensor, dim: int = 0, start: int | None = None, end: int | None = None,
                  step: int = 1) -> Tensor:
    """A copy of input with src written into input[..., start:end:step, ...] along `dim`."""
    if input.ndim == 0:
        raise IndexError("slice_scatter: slice() cannot be applied to a 0-dim tensor.")

    def view_of(t: Tensor) -> Tensor:
        d = dim % t.ndim if t.ndim else 0
        return t[(slice(None),) * d + (slice(start, end, step),)]
    return _scatter("slice_scatter", input, src, view_of)


def select_scatter(input: Tensor, src: Tensor, dim: int, index: int) -> Tensor:
    """A copy of input with src written into input.select(dim, index)."""
    return _scatter("select_scatter", input, src, lambda t: slicing.select(t, dim, index))


def diagonal_scatter(input: Tensor, src: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """A copy of input with src written into input.diagonal(offset, dim1, dim2)."""
    return _scatter("diagonal_scatter", input, src, lambda t: slicing.diagonal(t, offset, dim1, dim2))


def as_strided_scatter(input: Tensor, src: Tensor, size, stride, storage_offset: int | None = None) -> Tensor:
    """A copy of input with src written into input.as_strided(size, stride, storage_offset)."""
    return _scatter("as_strided_scatter", input, src, lambda t: slicing.as_strided(t, size, stride, storage_offset),
                    _clone_preserving_strides)


def _clone_preserving_strides(input: Tensor) -> Tensor:
    """torch's clone_preserve_strides: a copy of input's whole storage seen with input's sizes, strides and offset,
    so that as_strided addresses the same storage positions in the copy (gaps and offset included). An input with
    internal overlap (it could not be written through), or one in the graph (torch asserts it is contiguous there;
    a plain clone keeps the graph), gets a plain clone."""
    if input._requires_grad or has_internal_overlap(input):
        return copies.clone(input)
    v = input._v
    whole = slicing.as_strided(input, (v.blob.nbytes // input.dtype.itemsize,), (1,), 0)
    return slicing.as_strided(copies.clone(whole), v.shape, v.strides, v.offset)


METHODS.update(slice_scatter=slice_scatter, select_scatter=select_scatter, diagonal_scatter=diagonal_scatter,
               as_strided_scatter=as_strided_scatter)


# -- *_copy: a view's values in a fresh tensor ---------------------------------------------------
def _copy_of(view_fn, name: str, doc: str):
    def fn(input: Tensor, *args, out: Tensor | None = None, **kwargs):
        result = view_fn(input, *args, **kwargs)
        if isinstance(result, (tuple, list)):
            return [copies.clone(r) for r in result]  # clone is a contiguous copy
        copied = copies.clone(result)
        return copied if out is None else out.copy_(copied)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return fn


def _alias(input: Tensor) -> Tensor:
    return input.view(input.shape)


def _slice(input: Tensor, dim: int = 0, start: int | None = None, end: int | None = None, step: int = 1) -> Tensor:
    d = dim % input.ndim if input.ndim else 0
    return input[(slice(None),) * d + (slice(start, end, step),)]


def _expand(input: Tensor, size, *, implicit: bool = False) -> Tensor:
    return views.expand(input, *size) if isinstance(size, (list, tuple)) else views.expand(input, size)


def _permute(input: Tensor, dims) -> Tensor:
    return views.permute(input, *dims)


def _view(input: Tensor, size) -> Tensor:
    # torch's view_copy takes any strides (its result is a new tensor): a reshape, which views where it can
    return input.reshape(*size) if isinstance(size, (list, tuple)) else views.view(input, dtype=size)


_COPIES = {
    "alias_copy": (_alias, "A new tensor equal to input."),
    "as_strided_copy": (slicing.as_strided, "input.as_strided(size, stride, storage_offset), copied."),
    "detach_copy": (detach, "input.detach(), copied."),
    "diagonal_copy": (slicing.diagonal, "input.diagonal(offset, dim1, dim2), copied."),
    "expand_copy": (_expand, "input.expand(size), copied."),
    "permute_copy": (_permute, "input.permute(dims), copied."),
    "select_copy": (slicing.select, "input.select(dim, index), copied."),
    "slice_copy": (_slice, "input[start:end:step] along dim, copied."),
    "split_copy": (splits.split, "torch.split, each piece copied."),
    "split_with_sizes_copy": (splits.split_with_sizes, "torch.split_with_sizes, each piece copied."),
    "squeeze_copy": (views.squeeze, "input.squeeze(dim), copied."),
    "t_copy": (views.t, "input.t(), copied."),
    "transpose_copy": (views.transpose, "input.transpose(dim0, dim1), copied."),
    "unbind_copy": (splits.unbind, "torch.unbind, each piece copied."),
    "unfold_copy": (slicing.unfold, "input.unfold(dimension, size, step), copied."),
    "unsqueeze_copy": (views.unsqueeze, "input.unsqueeze(dim), copied."),
    "view_copy": (_view, "input.view(size) (or view(dtype)), copied."),
}
for _name, (_fn, _doc) in _COPIES.items():
    globals()[_name] = _copy_of(_fn, _name, _doc)
# narrow_copy is ops/movement/shape_ops.py's (with torch's NarrowCopyBackward0)

"""Views that pick elements: narrow, select, diagonal, Tensor.unfold and as_strided, with their gradients.

Each is a new (shape, strides, offset) over the same blob, as in views.py; the gradient goes back through
the nodes of view_grads.py (a window of the input, or any strided pick of it).
"""
from __future__ import annotations

from ...tensor import Tensor
from ...tensor import dtype as dt
from ...tensor.tensor import numel_of
from ..dispatch.dim_args import as_int, exporter, size_args, wrap_dim
from .view_grads import strided_node, window_node
from .views import _inplace, _restride

__all__: list = []
METHODS: dict = {}
_public = exporter(__all__, METHODS, globals())



# -- windows into the data -----------------------------------------------------------------------
@_public
def narrow(input: Tensor, dim: int, start, length: int) -> Tensor:
    """Elements start..start+length of dim `dim` (a view); `start` may be a one-element tensor."""
    if input.ndim == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    d = wrap_dim(dim, input.ndim, "narrow")
    if isinstance(start, Tensor) and (start.ndim != 0 or start.dtype.category != dt.INT):
        raise RuntimeError("start must be an 0-dim integral Tensor.")
    start, length = as_int(start, "narrow", "start"), as_int(length, "narrow", "length")
    if length < 0:
        raise RuntimeError("narrow(): length must be non-negative.")
    n = input._v.shape[d]
    if start < -n or start > n:
        raise IndexError(f"start out of range (expected to be in range of [{-n}, {n}], but got {start})")
    if start < 0:
        start += n
    if start + length > n:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({n}).")
    return window_node("slice", slice_dim, input, slice_dim(input, d, start, length), d, start, length)


def slice_dim(t: Tensor, d: int, start: int, length: int, step: int = 1) -> Tensor:
    """`length` elements of dim `d` from `start`, every `step`-th (no checks: callers validate)."""
    shape, strides = list(t._v.shape), list(t._v.strides)
    offset = t._v.offset + start * strides[d] if length else t._v.offset
    shape[d], strides[d] = length, strides[d] * step
    return _restride(t, shape, strides, offset)


@_public
def select(input: Tensor, dim: int, index) -> Tensor:
    """The slice at `index` of dim `dim`, that dim removed (a view)."""
    if input.ndim == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = wrap_dim(dim, input.ndim, "select")
    index = as_int(index, "select", "index")
    n = input._v.shape[d]
    if index < -n or index >= n:
        raise IndexError(f"select(): index {index} out of range for tensor of size {list(input._v.shape)} at "
                         f"dimension {dim}")
    if index < 0:
        index += n
    return window_node("select", selected, input, selected(input, d, index), d, index)


def selected(t: Tensor, d: int, index: int) -> Tensor:
    """Slice `index` of dim `d` without that dim (no checks, no node: callers validate and record)."""
    shape, strides = list(t._v.shape), list(t._v.strides)
    offset = t._v.offset + index * strides[d]
    del shape[d], strides[d]
    return _restride(t, shape, strides, offset)


@_public
def diagonal(input: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """The diagonal of the (dim1, dim2) planes, as a new last dim (a view)."""
    n = input.ndim
    a, b = wrap_dim(dim1, n, "diagonal", "dim1"), wrap_dim(dim2, n, "diagonal", "dim2")
    if a == b:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    offset = as_int(offset, "diagonal", "offset")
    shape, strides = input._v.shape, input._v.strides
    start = input._v.offset
    if offset >= 0:
        size = max(min(shape[a], shape[b] - offset), 0)
        if size:
            start += offset * strides[b]
    else:
        size = max(min(shape[a] + offset, shape[b]), 0)
        if size:
            start -= offset * strides[a]
    keep = [i for i in range(n) if i not in (a, b)]
    out = _restride(input, [shape[i] for i in keep] + [size], [strides[i] for i in keep] + [strides[a] + strides[b]],
                    start)
    return window_node("diagonal", diagonal, input, out, offset, a, b)


@_public(function=False)
def unfold(self: Tensor, dimension: int, size: int, step: int) -> Tensor:
    """Windows of `size` elements every `step` along `dimension`, as a new last dim (a view)."""
    n = self.ndim
    d = wrap_dim(dimension, n, "unfold", "dimension")
    size, step = as_int(size, "unfold", "size"), as_int(step, "unfold", "step")
    length = self._v.shape[d] if n else 1
    if size > length:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {length} but size is {size}")
    if size < 0:
        raise RuntimeError(f"size is {size} but must be >= 0")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    if n == 0:
        out = _restride(self, (size,), (1,))
    else:
        shape, strides = list(self._v.shape), list(self._v.strides)
        stride = strides[d]
        shape[d], strides[d] = (length - size) // step + 1, stride * step
        out = _restride(self, shape + [size], strides + [stride])
    return window_node("unfold", unfold, self, out, d, size, step)


@_public
def as_strided(input: Tensor, size, stride, storage_offset: int | None = None) -> Tensor:
    """A view with the given geometry over `input`'s memory (bounds checked)."""
    size = size_args("as_strided", (size,))
    stride = size_args("as_strided", (stride,), "stride")
    if len(size) != len(stride):
        raise RuntimeError("mismatch in length of strides and shape")
    if any(s < 0 for s in stride):
        raise RuntimeError(f"as_strided: Negative strides are not supported at the moment, got strides: "
                           f"{list(stride)}")
    offset = input._v.offset if storage_offset is None else as_int(storage_offset, "as_strided",
                                                                   "storage_offset")
    if offset < 0:
        raise RuntimeError(f"Tensor: invalid storage offset {offset}")
    item = input.dtype.itemsize
    if numel_of(size):
        needed = (offset + 1 + sum((n - 1) * s for n, s in zip(size, stride))) * item
        have = input._v.blob.nbytes
        if needed > have:
            raise RuntimeError(f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset {offset},"
                               f" and itemsize {item} requiring a storage size of {needed} are out of bounds for "
                               f"storage of size {have}")
    return strided_node("as_strided", input, _restride(input, size, stride, offset))


METHODS["as_strided_"] = as_strided_ = _inplace(as_strided, "as_strided")
__all__.append("as_strided_")

"""NestedTensor: a batch of tensors whose sizes differ, as torch.nested makes them.

Two layouts, both held as one packed buffer (the tensor's own memory) plus metadata:
- jagged (torch.jagged): components (j_i, *D) share their other dims; the buffer is `values()`, their
  concatenation (sum j_i, *D), and `offsets()` (B + 1) marks where each starts. The shape is (B, j, *D) with a
  ragged size `j` (a NestedInt, printed j1, j2...: two nested tensors share one only when made from the same
  offsets). After transpose(1, 2) the ragged dim is dim 2 (`_ragged_idx`): values() is then (D0, sum j_i, ...),
  the ragged dim at `_ragged_idx - 1`, as torch keeps it. With `lengths()` (nested_tensor_from_jagged(values,
  offsets, lengths), torch.nested.narrow) component k is the `lengths[k]` rows from `offsets[k]`: the rows between
  are holes, still in values(). Such a tensor is not contiguous; torch refuses what would read the holes.
- strided (torch.strided, the default): components of the same rank and any sizes; the buffer is their
  flattened concatenation and `_nested_sizes` their shapes.

Torch functions, methods and operators reach `__torch_function__` (ops/dispatch/torch_function.py's subclass protocol):
pointwise ops and ops over the trailing dims run once on the jagged values, or once per strided component, and
come back nested with the same structure; gradients flow through the buffer to what made it.
"""
from __future__ import annotations

import itertools

from ..ops.dispatch import torch_function as tf
from ..ops.factories.tensor_memory import as_subclass
from ..tensor import Size, Tensor
from ..tensor import layout as _layout

__all__ = ["NestedTensor", "NestedInt"]

# What NestedTensor hands on to the modules built on this one, which the nested package registers when it loads:
# "call" (dispatch.call: a torch function on nested arguments) and "to_padded_tensor" (nested.to_padded_tensor)
HANDLERS: dict = {}


def register(**handlers) -> None:
    """Set NestedTensor's handlers (tidal.nested does this once, at import)."""
    HANDLERS.update(handlers)

_ids = itertools.count(1)


class NestedInt:
    """The ragged size of a jagged nested tensor (torch's nested SymInt `j1`): equal only to itself."""

    __slots__ = ("id",)

    def __init__(self):
        self.id = next(_ids)

    def __repr__(self) -> str:
        return f"j{self.id}"

    __str__ = __repr__


def _alias(t: Tensor, cls: type) -> Tensor:
    """`t` seen as class `cls`: an alias in the autograd graph (the default protocol off while it is made)."""
    with tf.DisableTorchFunction():
        return as_subclass(t, cls)


class NestedTensor(Tensor):
    """A nested tensor of layout jagged or strided (see the module docstring)."""

    # -- structure ----------------------------------------------------------------------------------------
    @property
    def is_nested(self) -> bool:
        """True: a nested tensor."""
        return True

    @property
    def layout(self):
        """torch.jagged or torch.strided."""
        return _layout.jagged if self._jagged else _layout.strided

    @property
    def shape(self) -> Size:
        """(B, j, *D) for the jagged layout; the strided layout's sizes are not one shape (torch's error)."""
        return self.size()

    def size(self, dim: int | None = None):
        """The sizes: the batch, the ragged size, the trailing dims (jagged); strided: only dims all share."""
        if self._jagged:
            inner = list(self._buffer_shape)
            inner[self._ragged_idx - 1] = self._ragged
            sizes = (len(self._offsets_list) - 1,) + tuple(inner)
        else:
            sizes = self._common_sizes()
            if dim is None:
                raise RuntimeError("Internal error: NestedTensorImpl doesn't support sizes. Please file an issue.")
            if sizes[_wrap(dim, len(sizes), "size")] is None:
                raise RuntimeError(f"Given dimension {_wrap(dim, len(sizes), 'size')} is irregular and does not have "
                                   "a size.")
        if dim is None:
            return Size(sizes)
        return sizes[_wrap(dim, len(sizes), "size")]

    def _common_sizes(self) -> tuple:
        shapes = self._nested_sizes
        dims = [None if len({s[k] for s in shapes}) > 1 else shapes[0][k] for k in range(len(shapes[0]))]
        return (len(shapes),) + tuple(dims)

    def dim(self) -> int:
        """The number of dims, the batch dim included."""
        return len(self._buffer_shape) + 1 if self._jagged else len(self._nested_sizes[0]) + 1

    ndimension = dim

    @property
    def ndim(self) -> int:
        """The number of dims, the batch dim included."""
        return self.dim()

    def numel(self) -> int:
        """The number of elements of all components (the holes of a jagged tensor with lengths left out)."""
        if self._jagged and self._lengths is not None:
            rows = self._buffer_shape[self._ragged_idx - 1]
            return Tensor.numel(self) // max(rows, 1) * sum(self._lengths_list) if rows else 0
        return Tensor.numel(self)

    def __len__(self) -> int:
        return len(self._offsets_list) - 1 if self._jagged else len(self._nested_sizes)

    def is_contiguous(self, memory_format=None) -> bool:
        """Whether the components are packed without holes in row-major memory (a strided one always is)."""
        if not self._jagged:
            return True
        with tf.DisableTorchFunction():
            return self._lengths is None and _alias(self, Tensor).is_contiguous()

    def values(self) -> Tensor:
        """The jagged layout's packed components (sum j, *D): a view sharing this tensor's memory."""
        if not self._jagged:
            raise RuntimeError("values(): expected a nested tensor of layout torch.jagged, got torch.strided")
        return _alias(self, Tensor)

    def offsets(self) -> Tensor:
        """Where each component starts in values() (B + 1 int64), for the jagged layout."""
        if not self._jagged:
            raise RuntimeError("offsets(): expected a nested tensor of layout torch.jagged, got torch.strided")
        return self._offsets

    def lengths(self) -> Tensor | None:
        """Each component's length for a jagged tensor with holes; None when the offsets alone split values()."""
        if not self._jagged:
            raise RuntimeError("lengths(): expected a nested tensor of layout torch.jagged, got torch.strided")
        return self._lengths

    def unbind(self, dim: int = 0) -> tuple:
        """The components, as views of this tensor's memory (in the graph)."""
        if _wrap(dim, self.dim(), "unbind") != 0:
            raise RuntimeError("unbind(): only supported for NestedTensor on dim=0")
        if self._jagged and self._lengths is not None:
            rows = self._buffer_shape[self._ragged_idx - 1]
            if any(n < 0 or n > rows or o + n > rows for o, n in zip(self._offsets_list, self._lengths_list)) or \
                    sum(self._lengths_list) > rows:
                raise RuntimeError("unbind(): nested tensor offsets and lengths do not match ragged_idx dimension")
        return tuple(_components(self))

    def to_padded_tensor(self, padding: float, output_size=None) -> Tensor:
        """A dense tensor: the components, each padded with `padding` to the largest size (or `output_size`)."""
        return HANDLERS["to_padded_tensor"](self, padding, output_size)

    @property
    def grad(self):
        """The gradient, nested as this tensor (a jagged tensor's holds values())."""
        g = self.__dict__.get("_nested_grad")
        return None if g is None else _wrap_like(self, g)

    @grad.setter
    def grad(self, value) -> None:
        if isinstance(value, NestedTensor):
            value = _alias(value, Tensor)
        self.__dict__["_nested_grad"] = value

    def __repr__(self) -> str:
        if self._jagged:
            sizes = ", ".join(str(s) for s in self.size())
            return f"NestedTensor(size=({sizes}), offsets={self._offsets!r}, contiguous={self.is_contiguous()})"
        inner = ",\n  ".join(repr(c).replace("\n", "\n  ") for c in _components(self, False))
        return f"nested_tensor([\n  {inner}\n])"

    __str__ = __repr__

    def __reduce_ex__(self, protocol):
        raise RuntimeError("tidal cannot pickle nested tensors yet")

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        """Run `func` on the packed values (jagged) or on each component (strided) and nest the results."""
        return HANDLERS["call"](func, args, kwargs or {})


def _wrap(dim: int, n: int, name: str) -> int:
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    return dim % n


def make_jagged(values: Tensor, offsets: Tensor, ragged: NestedInt | None = None, ragged_idx: int = 1,
                lengths: Tensor | None = None) -> NestedTensor:
    """A jagged nested tensor over `values` (an alias of it in the graph) with `offsets` (int64, B + 1), its ragged
    dim at `ragged_idx` (values' dim ragged_idx - 1), and with `lengths` (B) when components leave holes."""
    _activate()
    nt = _alias(values, NestedTensor)
    nt._jagged, nt._offsets, nt._ragged_idx, nt._lengths = True, offsets, ragged_idx, lengths
    nt._offsets_list = [int(o) for o in offsets.tolist()]
    nt._lengths_list = None if lengths is None else [int(n) for n in lengths.tolist()]
    nt._buffer_shape = tuple(values.shape)
    nt._ragged = ragged if ragged is not None else _ragged_for(offsets if lengths is None else lengths)
    return nt


def rejag(nt: NestedTensor, values: Tensor, ragged_idx: int | None = None) -> NestedTensor:
    """`values` nested with `nt`'s offsets, lengths and ragged size (its ragged dim at `ragged_idx`, or `nt`'s)."""
    return make_jagged(values, nt._offsets, nt._ragged, nt._ragged_idx if ragged_idx is None else ragged_idx,
                       nt._lengths)


def has_holes(nt) -> bool:
    """Whether `nt` is a jagged nested tensor with lengths (rows of values() outside every component)."""
    return isinstance(nt, NestedTensor) and nt._jagged and nt._lengths is not None


# id(tensor) -> (tensor, its NestedInt): nested tensors made from the same offsets (or, with holes, the same
# lengths) share their j, as torch's do
_RAGGED: dict = {}


def _ragged_for(source: Tensor) -> NestedInt:
    hit = _RAGGED.get(id(source))
    if hit is not None and hit[0] is source:
        return hit[1]
    j = NestedInt()
    if len(_RAGGED) > 4096:
        _RAGGED.clear()
    _RAGGED[id(source)] = (source, j)
    return j


def make_strided(buffer: Tensor, sizes: list) -> NestedTensor:
    """A strided nested tensor over the 1-d `buffer` (an alias of it in the graph) with components `sizes`."""
    _activate()
    nt = _alias(buffer, NestedTensor)
    nt._jagged, nt._nested_sizes, nt._buffer_shape = False, [tuple(s) for s in sizes], tuple(buffer.shape)
    return nt


def _wrap_like(nt: NestedTensor, packed: Tensor) -> NestedTensor:
    """`packed` (values or buffer of `nt`'s structure) nested as `nt`."""
    if nt._jagged:
        return rejag(nt, packed)
    return make_strided(packed, nt._nested_sizes)


def _components(nt: NestedTensor, graph: bool = True) -> list:
    """The components as views of `nt`'s memory (in the graph unless `graph` is False)."""
    flat = _alias(nt, Tensor)
    with tf.DisableTorchFunction():
        if not graph:
            flat = flat.detach()
        if nt._jagged:
            o, d = nt._offsets_list, nt._ragged_idx - 1
            n = nt._lengths_list or [o[k + 1] - o[k] for k in range(len(o) - 1)]
            return [flat.narrow(d, o[k], n[k]) for k in range(len(o) - 1)]
        out, start = [], 0
        for s in nt._nested_sizes:
            n = 1
            for d in s:
                n *= d
            out.append(flat[start:start + n].view(s))
            start += n
        return out


_ACTIVE = [False]


def _activate() -> None:
    """Give NestedTensor the subclass protocol on first use: torch functions then look at their first argument
    (a cost every call pays once a user's subclass exists, so not at import). The hook skips tidal's own classes,
    so it is called with the class shown under torch's module name."""
    if _ACTIVE[0]:
        return
    module = NestedTensor.__module__
    NestedTensor.__module__ = "torch.nested._internal.nested_tensor"
    try:
        tf._subclass_methods(NestedTensor)
    finally:
        NestedTensor.__module__ = module
    _ACTIVE[0] = True

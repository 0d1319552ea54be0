"""torch.nested: batches of tensors whose sizes differ (nested_tensor, as_nested_tensor, nested_tensor_from_jagged,
narrow, to_padded_tensor), in torch's jagged and strided layouts; nested/nested_tensor.py holds the tensor."""
from __future__ import annotations

import numpy as np

from .. import ops
from ..autograd import no_grad
from ..nn import functional as F
from ..ops.dispatch.node_names import torch_node
from ..ops.factories.tensor_memory import not_nested_kernel
from ..tensor import Tensor
from . import dispatch
from .holes import HOLES_TO_PADDED
from .nested_tensor import NestedInt, NestedTensor, _components, has_holes, make_jagged, make_strided
from .nested_tensor import register as _register_handlers
from ..tensor import layout as _layout
from ..tensor import dtype as dt

__all__ = ["nested_tensor", "as_nested_tensor", "nested_tensor_from_jagged", "narrow", "to_padded_tensor",
           "NestedTensor", "NestedInt"]

_JAGGED_ONLY_ONE = ("Cannot represent given tensor list as a nested tensor with the jagged layout. Note that the "
                    "jagged layout only allows for a single ragged dimension. For example: (B, *, D_0, D_1, ..., D_N), "
                    "with ragged * dim.")


def _is_jagged(layout, fn: str) -> bool:
    name = getattr(layout, "name", None)
    if layout is None or name == "strided":
        return False
    if name == "jagged":
        return True
    raise RuntimeError(f"{fn}(): Specified layout is unsupported for nested tensors: {layout}")


def _as_tensors(items, dtype, device) -> list:
    out = []
    for t in items:
        if not isinstance(t, Tensor):
            t = ops.tensor(t, dtype=dtype, device=device)
        out.append(t)
    return out


def _build(components: list, jagged: bool, dtype, device, fn: str) -> NestedTensor:
    """The nested tensor over `components` (kept in the graph: the caller detaches for a copy)."""
    if not components:
        raise RuntimeError(f"{fn}(): expected a non-empty list of tensors")
    if dtype is not None or device is not None:
        components = [c.to(dtype=dtype or c.dtype, device=device or c.device) for c in components]
    first = components[0]
    for k, c in enumerate(components[1:], 1):
        if c.dim() != first.dim():
            raise RuntimeError("All Tensors given to nested_tensor must have the same dimension. Found dimension "
                               f"{c.dim()} for Tensor at index {k} and dimension {first.dim()} for Tensor at index 0.")
        if c.dtype is not first.dtype:
            raise RuntimeError(f"{fn}(): all tensors must have the same dtype, got {first.dtype} and {c.dtype}")
    if jagged:
        if first.dim() == 0 or any(tuple(c.shape[1:]) != tuple(first.shape[1:]) for c in components):
            raise RuntimeError(_JAGGED_ONLY_ONE)
        lengths = [c.shape[0] for c in components]
        offsets = ops.tensor(np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64), device=first.device)
        return make_jagged(ops.cat(components), offsets)
    return make_strided(ops.cat([c.reshape(-1) for c in components]), [tuple(c.shape) for c in components])


def nested_tensor(tensor_list, *, dtype=None, layout=None, device=None, requires_grad: bool = False,
                  pin_memory: bool = False) -> NestedTensor:
    """A nested tensor holding copies of `tensor_list` (tensors or nested lists of numbers): a leaf."""
    jagged = _is_jagged(layout, "nested_tensor")
    with no_grad():
        components = [c.detach() for c in _as_tensors(tensor_list, dtype, device)]
        nt = _build(components, jagged, dtype, device, "nested_tensor")
    if requires_grad:
        nt.requires_grad_(True)
    return nt


def as_nested_tensor(ts, dtype=None, device=None, layout=None) -> NestedTensor:
    """A nested tensor of the tensors `ts` (a list, or a tensor's slices along dim 0) that keeps their graph:
    gradients flow back to them."""
    jagged = _is_jagged(layout, "as_nested_tensor")
    if isinstance(ts, NestedTensor):
        if ts._jagged == jagged and dtype in (None, ts.dtype) and device in (None, ts.device):
            return ts
        ts = list(ts.unbind())
    if isinstance(ts, Tensor):
        if ts.dim() == 0:
            raise RuntimeError("as_nested_tensor(): expected a tensor of at least one dimension")
        ts = list(ts.unbind(0))
    if not isinstance(ts, (list, tuple)) or not all(isinstance(t, Tensor) for t in ts):
        raise TypeError("as_nested_tensor(): Expected a list of tensors or a tensor")
    return _build(list(ts), jagged, dtype, device, "as_nested_tensor")


def nested_tensor_from_jagged(values: Tensor, offsets: Tensor | None = None, lengths: Tensor | None = None,
                              jagged_dim: int | None = None, min_seqlen=None, max_seqlen=None) -> NestedTensor:
    """A jagged nested tensor viewing `values` (sum j, *D; the packed dim at `jagged_dim` - 1), its components split
    at `offsets` (B + 1), or contiguous runs of `lengths` (B); with both, component k is the lengths[k] rows from
    offsets[k] (a tensor with holes)."""
    if offsets is None:
        if lengths is None:
            raise RuntimeError("nested_tensor_from_jagged(): At least one of offsets or lengths is required.")
        offsets = ops.cat([ops.zeros(1, dtype=lengths.dtype, device=lengths.device), lengths.cumsum(0)])
        lengths = None
    if jagged_dim is None:
        jagged_dim = 1
    elif jagged_dim < 1:
        raise ValueError(f"Expected jagged_dim >=1, but got {jagged_dim}.")
    if values.dim() < jagged_dim or offsets.dim() != 1:
        raise RuntimeError(f"nested_tensor_from_jagged(): expected values of at least {jagged_dim} dims and 1-d "
                           f"offsets, got values of shape {tuple(values.shape)} and offsets of shape "
                           f"{tuple(offsets.shape)}")
    offsets = offsets.to(dt.int64)
    rows = values.shape[jagged_dim - 1]
    bounds = offsets.tolist()
    if lengths is None:
        if bounds[0] != 0 or bounds[-1] != rows or any(b > a for a, b in zip(bounds[1:], bounds)):
            raise RuntimeError(f"nested_tensor_from_jagged(): offsets {bounds} do not split values of {rows} rows")
    elif lengths.dim() != 1 or lengths.shape[0] != offsets.shape[0] - 1:
        raise RuntimeError(f"nested_tensor_from_jagged(): expected lengths of shape ({offsets.shape[0] - 1},) to go "
                           f"with offsets of shape {tuple(offsets.shape)}, got {tuple(lengths.shape)}")
    return make_jagged(values, offsets, ragged_idx=jagged_dim, lengths=lengths)


def narrow(tensor: Tensor, dim: int, start, length, layout=None) -> NestedTensor:
    """A nested tensor of `tensor`'s rows narrowed along `dim` to [start, start + length), start and length per row
    (ints or tensors of B): the jagged layout views `tensor` (dim 1 only); the strided layout copies (dim 0 only)."""
    if not isinstance(start, (int, Tensor)) or isinstance(start, bool):
        raise RuntimeError("start must be an integer or a tensor")
    if not isinstance(length, (int, Tensor)) or isinstance(length, bool):
        raise RuntimeError("length must be an integer or a tensor")
    if layout is None or layout is _layout.strided:
        if isinstance(start, Tensor) or isinstance(length, Tensor):
            raise RuntimeError("start and length must be integers for the strided layout NT impl")
        return as_nested_tensor(list(tensor.unbind(0))).narrow(dim, start, length)
    if layout is not _layout.jagged:
        raise RuntimeError(f"Specified layout is unsupported for nested narrow: {layout}")
    if dim != 1:
        raise RuntimeError("jagged layout only supports dim=1")
    if tensor.dim() < 2:
        raise AssertionError("tensor must at least be 2D for the nested narrow op to work")
    batch, width = tensor.shape[0], tensor.shape[1]
    as_rows = [np.broadcast_to(np.asarray(x.tolist() if isinstance(x, Tensor) else [x], dtype=np.int64), (batch,))
               if _broadcasts(x, batch) else None for x in (start, length)]
    if as_rows[0] is None or as_rows[1] is None:
        raise RuntimeError("When constructing a jagged nested tensor using narrow(), your start and length must be "
                           "Tensors that broadcast to input.shape[0]")
    starts, lengths = as_rows
    firsts = starts + width * np.arange(batch, dtype=np.int64)
    bounds = np.concatenate([firsts, [firsts[-1] + lengths[-1]]])
    values = tensor.view(-1, *tensor.shape[2:])
    if np.all(firsts[:-1] + lengths[:-1] == firsts[1:]):  # no holes: a packed view of the rows it covers
        offsets = ops.tensor(bounds - bounds[0], dtype=dt.int64, device=tensor.device)
        return make_jagged(values[int(bounds[0]):int(bounds[-1])], offsets)
    offsets = ops.tensor(bounds, dtype=dt.int64, device=tensor.device)
    return make_jagged(values, offsets, lengths=ops.tensor(lengths.copy(), dtype=dt.int64, device=tensor.device))


def _broadcasts(x, batch: int) -> bool:
    shape = tuple(x.shape) if isinstance(x, Tensor) else (1,)
    return len(shape) <= 1 and (not shape or shape[0] in (1, batch))


def to_padded_tensor(input: NestedTensor, padding: float, output_size=None) -> Tensor:
    """A dense tensor of `input`'s components, each padded with `padding` to the largest size in every dim (or
    to `output_size`); gradients flow back to the components."""
    if not isinstance(input, NestedTensor):
        raise not_nested_kernel("to_padded_tensor", input)
    if has_holes(input):
        raise RuntimeError(HOLES_TO_PADDED)
    parts = _components(input)
    ndim = parts[0].dim()
    target = [max(p.shape[k] for p in parts) for k in range(ndim)]
    if output_size is not None:
        output_size = list(output_size)
        if len(output_size) != ndim + 1 or any(o < t for o, t in zip(output_size[1:], target)):
            raise RuntimeError(f"to_padded_tensor(): output_size {output_size} is smaller than the nested tensor's "
                               f"largest sizes {[len(parts)] + target} or of another rank")
        target = output_size[1:]
    padded = []
    for p in parts:
        widths = []
        for k in reversed(range(ndim)):
            widths += [0, target[k] - p.shape[k]]
        padded.append(F.pad(p, widths, value=padding) if any(widths) else p)
    return torch_node(ops.stack(padded), "to_padded_tensor", *parts)


_register_handlers(call=dispatch.call, to_padded_tensor=to_padded_tensor)  # (they build on nested_tensor.py)

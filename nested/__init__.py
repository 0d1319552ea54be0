"""torch.nested: batches of tensors whose sizes differ (nested_tensor, as_nested_tensor, nested_tensor_from_jagged,
to_padded_tensor), in torch's jagged and strided layouts; nested/nested_tensor.py holds the tensor."""
from __future__ import annotations

import numpy as np

from ..autograd import no_grad
from ..ops.node_names import torch_node
from ..tensor import Tensor
from .nested_tensor import NestedInt, NestedTensor, _components, make_jagged, make_strided

__all__ = ["nested_tensor", "as_nested_tensor", "nested_tensor_from_jagged", "to_padded_tensor", "NestedTensor",
           "NestedInt"]

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
    import tidal
    out = []
    for t in items:
        if not isinstance(t, Tensor):
            t = tidal.tensor(t, dtype=dtype, device=device)
        out.append(t)
    return out


def _build(components: list, jagged: bool, dtype, device, fn: str) -> NestedTensor:
    """The nested tensor over `components` (kept in the graph: the caller detaches for a copy)."""
    import tidal
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
        offsets = tidal.tensor(np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64), device=first.device)
        return make_jagged(tidal.cat(components), offsets)
    return make_strided(tidal.cat([c.reshape(-1) for c in components]), [tuple(c.shape) for c in components])


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
    """A jagged nested tensor viewing `values` (sum j, *D), its components split at `offsets` (B + 1), or
    contiguous runs of `lengths`."""
    import tidal
    if jagged_dim not in (None, 1):
        raise RuntimeError("nested_tensor_from_jagged(): tidal supports jagged_dim=1 only")
    if offsets is None:
        if lengths is None:
            raise RuntimeError("nested_tensor_from_jagged(): At least one of offsets or lengths is required.")
        offsets = tidal.cat([tidal.zeros(1, dtype=lengths.dtype, device=lengths.device), lengths.cumsum(0)])
    elif lengths is not None:
        raise RuntimeError("nested_tensor_from_jagged(): tidal's jagged tensors are packed: give offsets or lengths")
    if values.dim() < 1 or offsets.dim() != 1:
        raise RuntimeError("nested_tensor_from_jagged(): expected values of at least 1 dim and 1-d offsets")
    bounds = offsets.tolist()
    if bounds[0] != 0 or bounds[-1] != values.shape[0] or any(b > a for a, b in zip(bounds[1:], bounds)):
        raise RuntimeError(f"nested_tensor_from_jagged(): offsets {bounds} do not split values of "
                           f"{values.shape[0]} rows")
    return make_jagged(values, offsets.to(tidal.int64))


def to_padded_tensor(input: NestedTensor, padding: float, output_size=None) -> Tensor:
    """A dense tensor of `input`'s components, each padded with `padding` to the largest size in every dim (or
    to `output_size`); gradients flow back to the components."""
    import tidal
    from ..nn import functional as F
    if not isinstance(input, NestedTensor):
        from ..ops.tensor_memory import not_nested_kernel
        raise not_nested_kernel("to_padded_tensor", input)
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
    return torch_node(tidal.stack(padded), "to_padded_tensor", *parts)

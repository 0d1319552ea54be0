"""Jagged nested tensors with holes (made with `lengths`): what torch runs on them and what it refuses.

Component k of such a tensor is the `lengths[k]` rows of values() from `offsets[k]`; the rows between are holes.
Pointwise ops, reductions over dense dims, softmax/layer_norm over the last dims, matmul by a dense matrix, view,
transpose, unsqueeze, expand, cat and stack run on the whole values() buffer (holes included, as torch's do) and keep
offsets and lengths. Ops that would read the packed rows as if they were the components are refused with torch's
errors; contiguous() and reshape() first pack the components into a new tensor without holes.
"""
from __future__ import annotations

from .. import ops
from ..ops.dispatch import torch_function as tf
from ..tensor import Tensor
from ..tensor import dtype as dt
from .nested_tensor import NestedTensor, _components, _wrap, has_holes, make_jagged
from .shape_ops import view

# ops torch runs only on contiguous jagged tensors: its handler's name and schema, and the argument it checks.
# (torch refuses F.linear and F.dropout too; tidal's run them on values() like matmul, keeping the holes.)
_CONTIGUOUS_ONLY = {
    "narrow": ("narrow", "self: jt, dim: any, start: any, length: any", "self"),
    "chunk": ("chunk_default", "self: jt, chunks: any, dim: any?", "self"),
    "split": ("split_tensor", "self: jt, split_size: any, dim: any?", "self"),
    "split_with_sizes": ("split_with_sizes_default", "self: jt, split_sizes: any, dim: any?", "self"),
    "squeeze": ("squeeze_dim", "self: jt, dim: any", "self"),
    "masked_select": ("masked_select_default", "self: jt, mask: any", "self"),
    "embedding": ("embedding_default", "weight: t, indices: jt, padding_idx: any?, scale_grad_by_freq: any?, "
                                       "sparse: any?", "indices"),
    "getitem": ("slice_tensor", "self: jt, dim: any?, start: any?, end: any?, step: any?", "self"),
}
_SPLIT_NAMES = {"split_method": "split"}

HOLES_TO_PADDED = "to_padded_tensor(): not supported for nested tensors with holes"


def _contiguous_only(name: str) -> ValueError:
    handler, schema, arg = _CONTIGUOUS_ONLY[name]
    return ValueError(f"NestedTensor {handler}({schema}): expected {arg} to be a contiguous jagged layout "
                      "NestedTensor")


def pack(nt: NestedTensor) -> NestedTensor:
    """A contiguous copy of `nt`: its components packed one after another, new offsets (and a new ragged size)."""
    parts = _components(nt)
    d = nt._ragged_idx - 1
    with tf.DisableTorchFunction():
        values = ops.cat(parts, d).contiguous()
        lengths = ops.tensor(nt._lengths_list, dtype=dt.int64, device=nt._offsets.device)
        offsets = ops.cat([ops.zeros(1, dtype=dt.int64, device=lengths.device), lengths.cumsum(0)])
    return make_jagged(values, offsets, ragged_idx=nt._ragged_idx)


def run(func, name: str, args: tuple, kwargs: dict):
    """torch's behaviour for an op whose nested arguments include a tensor with holes: the result of contiguous()
    and reshape(), a refusal, or None when the op runs as on any jagged tensor."""
    name = _SPLIT_NAMES.get(name, name)
    if name == "split" and isinstance(args[1] if len(args) > 1 else kwargs.get("split_size"), (list, tuple)):
        name = "split_with_sizes"
    if name == "getitem" and isinstance(args[1], int) and not isinstance(args[1], bool):
        return None
    if name in _CONTIGUOUS_ONLY and has_holes(args[0]):
        raise _contiguous_only(name)
    nt = args[0]
    if name == "contiguous" and has_holes(nt):
        return pack(nt)
    if name in ("reshape", "reshape_method") and has_holes(nt):
        return view(func, (pack(nt),) + tuple(args[1:]), kwargs)
    if name == "select" and has_holes(nt):
        dim = args[1] if len(args) > 1 else kwargs["dim"]
        if _wrap(dim, nt.dim(), "dim") != 0:
            raise ValueError("select(): not yet supported on dim != 0 for non-contiguous nested tensor with holes")
    if name == "permute" and has_holes(nt):
        raise ValueError("permute(): not supported on jagged layout nested tensor with holes")
    if name == "bmm" and has_holes(nt):
        raise RuntimeError(HOLES_TO_PADDED)
    if name == "scaled_dot_product_attention":  # (the math backend needs q, k, v contiguous after the transpose)
        raise RuntimeError("No viable backend for scaled_dot_product_attention was found.")
    return None


def check_dense_operand(name: str, nt: NestedTensor, dense: Tensor) -> None:
    """A (B, 1, *D) dense operand is spread over the packed rows of a contiguous tensor only: torch refuses it
    against a tensor with holes."""
    if has_holes(nt):
        sizes = ", ".join(str(s) for s in nt.size())
        raise RuntimeError(f"cannot call binary pointwise function {name} with inputs of shapes ({sizes}) and "
                           f"{tuple(dense.shape)}")

"""Nested-tensor ops that move dims: transpose (the ragged dim included), flatten and unflatten of the dense dims,
and scaled_dot_product_attention on (B, H, j, D) jagged tensors, each component attending over its own length
(torch's way of running attention on sequences of different lengths without padding)."""
from __future__ import annotations

from .. import ops
from ..ops.dispatch import torch_function as tf
from ..tensor import Tensor
from .nested_tensor import NestedTensor, _alias, _components, _wrap, rejag


def _refuse(name: str, dim: int) -> RuntimeError:
    return RuntimeError(f"{name}(): not supported for NestedTensor on dim={dim}")


def transpose(func, args: tuple, kwargs: dict):
    """nt.transpose(d0, d1): the packed values transposed; the ragged dim may move (torch's _ragged_idx)."""
    nt, d0, d1 = (list(args) + [kwargs.get("dim0"), kwargs.get("dim1")])[:3]
    n = nt.dim()
    w0, w1 = _wrap(d0, n, "transpose"), _wrap(d1, n, "transpose")
    if 0 in (w0, w1):
        raise _refuse("transpose", 0)
    with tf.DisableTorchFunction():
        values = _alias(nt, Tensor).transpose(w0 - 1, w1 - 1)
    r = nt._ragged_idx
    r = w1 if r == w0 else w0 if r == w1 else r
    return rejag(nt, values, r)


def flatten(func, args: tuple, kwargs: dict):
    """nt.flatten(start_dim, end_dim) over dims that are all after the ragged dim, or all between it and the
    batch dim."""
    nt = args[0]
    start = args[1] if len(args) > 1 else kwargs.get("start_dim", 0)
    end = args[2] if len(args) > 2 else kwargs.get("end_dim", -1)
    n, r = nt.dim(), nt._ragged_idx
    s, e = _wrap(start, n, "flatten"), _wrap(end, n, "flatten")
    if s == 0 or s <= r <= e:
        raise _refuse("flatten", 0 if s == 0 else r)
    with tf.DisableTorchFunction():
        values = _alias(nt, Tensor).flatten(s - 1, e - 1)
    return rejag(nt, values, r - (e - s) if e < r else r)


def unflatten(func, args: tuple, kwargs: dict):
    """nt.unflatten(dim, sizes) of a dense dim."""
    nt = args[0]
    dim = args[1] if len(args) > 1 else kwargs["dim"]
    sizes = args[2] if len(args) > 2 else kwargs["sizes"]
    d, r = _wrap(dim, nt.dim(), "unflatten"), nt._ragged_idx
    if d in (0, r):
        raise _refuse("unflatten", d)
    with tf.DisableTorchFunction():
        values = _alias(nt, Tensor).unflatten(d - 1, sizes)
    return rejag(nt, values, r + len(sizes) - 1 if d < r else r)


def cat(func, args: tuple, kwargs: dict):
    """torch.cat / torch.stack of jagged tensors of one structure (equal offsets) along a dense dim."""
    items = list(args[0] if args else kwargs["tensors"])
    dim = args[1] if len(args) > 1 else kwargs.get("dim", 0)
    name = getattr(func, "__name__", "cat")
    stacking = name == "stack"
    first = items[0]
    for t in items:
        if not (isinstance(t, NestedTensor) and t._jagged and t._ragged_idx == first._ragged_idx
                and t._offsets_list == first._offsets_list and t.dim() == first.dim()):
            raise RuntimeError(f"{name}(): expected jagged nested tensors of the same structure")
        if stacking and t._ragged is not first._ragged:  # (torch's stack asks for the same ragged size; cat does not)
            raise RuntimeError("stack(): expected all nested tensors to have the same nested structure")
    n, r = first.dim() + stacking, first._ragged_idx
    d = _wrap(dim, n, name)
    if d == 0 or d == r or (stacking and d < r):
        raise _refuse(name, d)
    with tf.DisableTorchFunction():
        values = func([_alias(t, Tensor) for t in items], d - 1)
    return rejag(first, values, r)


_SDPA_ARGS = ("query", "key", "value", "attn_mask", "dropout_p", "is_causal", "scale", "enable_gqa")


def scaled_dot_product_attention(func, args: tuple, kwargs: dict):
    """Attention of (B, H, j, D) jagged query, key and value: each sample's query attends over its own keys."""
    bound = dict(zip(_SDPA_ARGS, args), **kwargs)
    q, k, v = bound["query"], bound["key"], bound["value"]
    for name, t in (("query", q), ("key", k), ("value", v)):
        if not (isinstance(t, NestedTensor) and t._jagged and t._ragged_idx == 2 and t.dim() == 4):
            raise RuntimeError(f"scaled_dot_product_attention(): expected {name} to be a jagged nested tensor of "
                               "shape (B, H, j, D) (transpose(1, 2) of a (B, j, H, D) one)")
    if len(q) != len(k) or len(k) != len(v):
        raise RuntimeError("scaled_dot_product_attention(): query, key and value must have the same batch size")
    if bound.get("is_causal"):  # (torch's CPU math backend refuses causal masks of nested query / key)
        raise RuntimeError("No viable backend for scaled_dot_product_attention was found.")
    if bound.get("attn_mask") is not None:  # (torch's words and type: its jagged attention takes no mask)
        raise ValueError("Masks are not yet supported!")
    rest = {key: bound[key] for key in ("dropout_p", "is_causal", "scale", "enable_gqa") if key in bound}
    outs = []
    with tf.DisableTorchFunction():
        for qi, ki, vi in zip(_components(q), _components(k), _components(v)):
            outs.append(func(qi, ki, vi, **rest))
        values = ops.cat(outs, 1)
    return rejag(q, values, 2)


OPS = {"cat": cat, "concat": cat, "concatenate": cat, "stack": cat, "transpose": transpose, "swapaxes": transpose,
       "swapdims": transpose, "flatten": flatten, "unflatten": unflatten,
       "scaled_dot_product_attention": scaled_dot_product_attention}

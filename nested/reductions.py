"""Reductions of jagged nested tensors over a `dim` (int or list), as torch's jagged layout runs them:
- over dense dims only: once on the packed values, nested again (the ragged dim moves left past reduced dims);
- over the batch and ragged dims together (others too): once on the packed values, a dense result;
- over the ragged dim alone: each component reduced over its own length, stacked into a dense (B, ...) result
  (torch pads with the reduction's identity and reduces the padded tensor: the same numbers);
- the batch dim without the ragged one, or the ragged dim with a dense one but not the batch: torch's refusals.
softmax over the ragged dim normalizes each component over its own length (a nested result); log_softmax there is
refused, as torch does."""
from __future__ import annotations

from .. import ops
from ..ops.dispatch import torch_function as tf
from ..tensor import Tensor
from .nested_tensor import NestedTensor, _alias, _components, _wrap, rejag

REDUCTIONS = {"sum", "mean", "prod", "any", "all", "amax", "amin", "argmax", "argmin", "max", "min"}
NORMALIZERS = {"softmax", "log_softmax"}


def _arguments(args: tuple, kwargs: dict) -> tuple:
    """(dim, keepdim, the other keyword arguments) of a reduction call."""
    rest = dict(kwargs)
    dim = args[1] if len(args) > 1 else rest.pop("dim", None)
    keepdim = args[2] if len(args) > 2 else rest.pop("keepdim", False)
    rest.pop("dim", None)
    return dim, bool(keepdim), rest


def _call(func, values: Tensor, dim, keepdim: bool, rest: dict):
    with tf.DisableTorchFunction():
        return func(values, dim, keepdim=keepdim, **rest)


def _map(result, fn):
    """`fn` applied to a result, or to each field of a (values, indices) result."""
    if isinstance(result, tuple):
        items = [fn(r) for r in result]
        return type(result)(*items) if hasattr(result, "_fields") else tuple(items)
    return fn(result)


def reduce(func, name: str, args: tuple, kwargs: dict):
    """`func(nt, dim, keepdim, ...)` for a jagged `nt` (see the module docstring)."""
    nt = args[0]
    dim, keepdim, rest = _arguments(args, kwargs)
    values = _alias(nt, Tensor)
    if dim is None or isinstance(dim, (list, tuple)) and not dim:  # the whole tensor: the packed values
        with tf.DisableTorchFunction():
            out = func(values, **rest) if dim is None and not keepdim else func(values, dim, keepdim=keepdim, **rest)
        return out
    listed = isinstance(dim, (list, tuple))
    n, r = nt.dim(), nt._ragged_idx
    dims = [_wrap(d, n, "dim") for d in (dim if listed else [dim])]
    on_batch, on_ragged = 0 in dims, r in dims
    on_dense = any(d not in (0, r) for d in dims)
    inner = list(dict.fromkeys(r - 1 if d == 0 else d - 1 for d in dims))
    if on_ragged and nt._lengths is not None:
        raise RuntimeError(f"{name}(): reducing across the ragged dimension is not supported for non-contiguous "
                           "nested tensors with holes")
    if on_ragged and on_batch:  # raggedness reduced away on the packed values (keepdim: one more leading 1, as torch)
        out = _call(func, values, inner if listed else inner[0], keepdim, rest)
        if keepdim:
            with tf.DisableTorchFunction():
                out = _map(out, lambda t: t.unsqueeze(0))
        return out
    if on_ragged:
        if on_dense:
            raise RuntimeError(f"{name}(): reducing along a ragged and non-batch dimension is not supported for "
                               "nested tensors")
        return _per_component(func, nt, [r - 1] if listed else r - 1, keepdim, rest)
    if on_batch:
        raise RuntimeError(f"{name}(): reducing along the batch dimension but not the ragged dimension is not "
                           "supported for nested tensors")
    out = _call(func, values, inner if listed else inner[0], keepdim, rest)
    moved = 0 if keepdim else sum(1 for d in inner if d < r - 1)
    return _map(out, lambda t: rejag(nt, t, r - moved))


def _per_component(func, nt: NestedTensor, dim, keepdim: bool, rest: dict):
    """Each component reduced over its ragged dim, stacked along a new batch dim."""
    parts = [_call(func, c, dim, keepdim, rest) for c in _components(nt)]
    with tf.DisableTorchFunction():
        if isinstance(parts[0], tuple):
            fields = [ops.stack([p[k] for p in parts]) for k in range(len(parts[0]))]
            return type(parts[0])(*fields) if hasattr(parts[0], "_fields") else tuple(fields)
        return ops.stack(parts)


def normalize(func, name: str, args: tuple, kwargs: dict):
    """softmax over the ragged dim: each component over its own length, nested again (log_softmax: torch's
    refusal)."""
    if name == "softmax" and args[0]._lengths is not None:
        raise RuntimeError("softmax(): not supported where lengths is not None if reducing across the ragged "
                           "dimension for NestedTensor")
    if name != "softmax":
        raise RuntimeError(f"{name}(): not supported when reducing along the ragged dimension for NestedTensor")
    nt = args[0]
    rest = dict(kwargs)
    rest.pop("dim", None)
    parts = [func(c, nt._ragged_idx - 1, *args[2:], **rest) for c in _components(nt)]
    with tf.DisableTorchFunction():
        values = ops.cat(parts, nt._ragged_idx - 1)
    return rejag(nt, values)


def over_ragged_dim(nt: NestedTensor, args: tuple, kwargs: dict) -> bool:
    """Whether a softmax-like call's dim is `nt`'s ragged dim."""
    dim = kwargs.get("dim", args[1] if len(args) > 1 else None)
    return isinstance(dim, int) and not isinstance(dim, bool) and _wrap(dim, nt.dim(), "dim") == nt._ragged_idx

"""embedding_bag: sums, means or maxima of bags of embedding rows, without materializing each bag."""
from __future__ import annotations

import warnings

import numpy as np

from .. import ops
from ..tensor import Tensor
from ..tensor import dtype as dt
from .functional_shape import _options_name, _renorm_rows, embedding

__all__ = ["embedding_bag"]


def _flatten_bags(input: Tensor, offsets: Tensor | None, per_sample_weights, include_last_offset: bool) -> tuple:
    """The 1-D indices, offsets and per-sample weights of 1-D (with offsets) or 2-D (fixed bags) input."""
    if input.dim() == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated is a mini-batch of "
                             f"fixed length sequences. However, found offsets of type {type(offsets)}")
        offsets = np.arange(0, input.numel(), input.shape[1], dtype=np.int64)
        flat = input.reshape(-1)
        if per_sample_weights is not None:
            per_sample_weights = per_sample_weights.reshape(-1)
        return flat, offsets, per_sample_weights, False
    if input.dim() == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.dim() != 1:
            raise ValueError("offsets has to be a 1D Tensor")
        return input, offsets.numpy().astype(np.int64), per_sample_weights, include_last_offset
    raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.dim()}")


def _promoted_indices(input: Tensor, offsets: Tensor | None) -> tuple:
    """Indices and offsets in their common dtype, which must be int64 or int32 (torch promotes them: int16 indices
    with int64 offsets are taken; 2-D input's offsets are an arange of the input's own dtype)."""
    if input.dim() == 2 and offsets is None:
        if input.dtype is dt.bool_:
            raise NotImplementedError("\"arange_cpu\" not implemented for 'Bool'")
        common = input.dtype
    elif offsets is None or not isinstance(offsets, Tensor):
        return input, offsets
    else:
        common = dt.promote_types(input.dtype, offsets.dtype)
    if common not in (dt.int64, dt.int32):
        raise RuntimeError("Expected tensor for argument #1 'indices' to have one of the following scalar types: "
                           f"Long, Int; but got {_options_name(input.to(common))} instead "
                           "(while checking arguments for embedding_bag)")
    input = input if input.dtype is common else input.to(common)
    return input, offsets if offsets is None or offsets.dtype is common else offsets.to(common)


def _bag_of_each(offsets: np.ndarray, length: int, include_last_offset: bool) -> tuple:
    """Per input position its bag (-1 when in none), and the number of bags."""
    bags = len(offsets) - 1 if include_last_offset else len(offsets)
    if len(offsets) and offsets[0] != 0:
        raise RuntimeError("offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start from "
                           f"position 0. However, got {offsets[0]}")
    if len(offsets) and offsets[-1] > length:
        raise RuntimeError(f"offsets[-1] can not be greater than input's length {length} but got offsets[-1] of "
                           f"{offsets[-1]}")
    ends = offsets[1:] if include_last_offset else np.append(offsets[1:], length)
    bag = np.searchsorted(offsets[:bags], np.arange(length), side="right") - 1
    in_bag = (bag >= 0) & (np.arange(length) < (ends[bag] if bags else 0))
    return np.where(in_bag, bag, -1), max(bags, 0)


def embedding_bag(input: Tensor, weight: Tensor, offsets: Tensor | None = None, max_norm: float | None = None,
                  norm_type: float = 2, scale_grad_by_freq: bool = False, mode: str = "mean", sparse: bool = False,
                  per_sample_weights: Tensor | None = None, include_last_offset: bool = False,
                  padding_idx: int | None = None) -> Tensor:
    """Per bag of indices, the sum, mean or maximum of their embedding rows (padding_idx left out of bags)."""
    if weight.dtype in (dt.int64, dt.int32) and input.dtype.is_floating_point:
        warnings.warn("Argument order of nn.functional.embedding_bag was changed. Usage `embedding_bag(weight, "
                      "input, ...)` is deprecated, and should now be `embedding_bag(input, weight, ...)`.",
                      stacklevel=2)
        weight, input = input, weight
    input, offsets = _promoted_indices(input, offsets)
    if per_sample_weights is not None and tuple(input.shape) != tuple(per_sample_weights.shape):
        raise ValueError(f"embedding_bag: If per_sample_weights ({per_sample_weights.shape}) is not None, then it "
                         f"must have the same shape as the input ({input.shape})")
    if weight.dim() != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension {weight.dim()}")
    flat, offsets, per_sample_weights, include_last_offset = _flatten_bags(input, offsets, per_sample_weights,
                                                                          include_last_offset)
    if mode not in ("sum", "mean", "max"):
        raise ValueError("mode has to be one of sum, mean or max")
    if mode == "max" and scale_grad_by_freq:
        raise ValueError("max mode does not support scaling the gradient by the frequency")
    if mode == "max" and sparse:
        raise ValueError("max mode does not support sparse weights")
    if max_norm is not None:
        _renorm_rows(weight, flat, max_norm, norm_type)
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError("embedding_bag: per_sample_weights was not None. per_sample_weights is only "
                                  f"supported for mode='sum' (got mode='{mode}'). Please open a feature request on "
                                  "GitHub.")
    num = weight.shape[0]
    if padding_idx is not None and not -num <= padding_idx < num:
        raise RuntimeError(f"padding_idx must be within the number of embeddings, -{num} through {num - 1}, but "
                           f"got {padding_idx}")
    indices = flat.numpy()
    outside = np.nonzero((indices < 0) | (indices >= num))[0]
    if len(outside):  # torch's bag kernel names the first bad position (embedding's own error differs)
        raise RuntimeError(f"Index {outside[0]} of input takes value {indices[outside[0]]} which is not in the valid "
                           f"range [0, {num})")
    if np.any(np.diff(offsets) < 0):
        raise RuntimeError("Expected i < index_size to be true, but got false.  (Could this error message be "
                           "improved?  If so, please report an enhancement request to PyTorch.)")
    bag, bags = _bag_of_each(offsets, len(indices), include_last_offset)
    keep = bag >= 0
    if padding_idx is not None:
        keep &= indices != padding_idx % num
    # (L, D); with `sparse`, the weight's gradient is torch's sparse_coo one (padding_idx's entries left out)
    rows = embedding(flat, weight, padding_idx=padding_idx, scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)
    dim = weight.shape[1]
    if mode == "max":
        return _bag_max(rows, bag, keep, bags, dim)
    counts = np.bincount(bag[keep], minlength=bags)
    scale = keep / np.maximum(counts[bag], 1) if mode == "mean" else keep.astype(np.float64)
    scale = ops.tensor(scale, dtype=weight.dtype, device=weight.device)
    if per_sample_weights is not None:
        scale = scale * per_sample_weights
    target = ops.tensor(np.maximum(bag, 0), device=weight.device)
    out = ops.zeros((bags, dim), dtype=weight.dtype, device=weight.device)
    return out.index_add(0, target, rows * scale.unsqueeze(1))


def _bag_max(rows: Tensor, bag: np.ndarray, keep: np.ndarray, bags: int, dim: int) -> Tensor:
    """Elementwise maxima of each bag's kept rows; empty bags give zeros."""
    members = [np.flatnonzero(keep & (bag == b)) for b in range(bags)]
    width = max([len(m) for m in members] + [1])
    table = np.zeros((bags, width), np.int64)
    valid = np.zeros((bags, width), bool)
    for b, m in enumerate(members):
        table[b, :len(m)], valid[b, :len(m)] = m, True
    picked = rows.index_select(0, ops.tensor(table.reshape(-1), device=rows.device)).reshape(bags, width, dim)
    blocked = ops.tensor(~valid, device=rows.device).unsqueeze(-1)
    best = picked.masked_fill(blocked, float("-inf")).max(1)[0]
    empty = ops.tensor(~valid.any(1), device=rows.device).unsqueeze(-1)
    return best.masked_fill(empty, 0.0)

"""index_reduce (index_add's prod/mean/amax/amin siblings) and nonzero_static (nonzero at a fixed size).

index_reduce is scatter_reduce with its 1-D index spread over source's shape, so it shares scatter_reduce's
kernel and gradient.
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from ...tensor import Tensor
from ...tensor import dtype as dt
from ..elementwise import arithmetic as M
from ..factories.creation import full, tensor
from .masked import nonzero
from .scatter import scatter_reduce, scatter_reduce_
from ..movement.shape_ops import cat
from ..dispatch.limited_dtypes import check as check_limited

__all__ = ["index_reduce", "nonzero_static", "segment_reduce"]
METHODS: dict = {}
_REDUCES = ("prod", "mean", "amax", "amin")
_warned = False


def _spread(input: Tensor, dim: int, index: Tensor, source: Tensor, reduce: str) -> tuple:
    if reduce not in _REDUCES:
        raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got {reduce}.")
    if index.ndim > 1:
        raise IndexError("index_reduce_(): Index is supposed to be a vector")
    if index.dtype not in (dt.int64, dt.int32):
        raise IndexError("index_reduce_(): Expected dtype int32/int64 for index")
    if source.dtype is not input.dtype:
        raise RuntimeError(f"index_reduce_(): self ({input.dtype}) and source ({source.dtype}) must have the same "
                           "scalar type")
    d = input._dim(dim, "index_reduce") if input.ndim else 0
    check_limited("index_reduce", input.dtype)
    if source.ndim and index.numel() != source.shape[d]:  # (an index of 1 would broadcast over an empty source)
        raise RuntimeError(f"index_reduce_(): Number of indices ({index.numel()}) should be equal to "
                           f"source.size(dim): ({source.shape[d]}), for dim: {d}")
    shape = [1] * source.ndim
    if source.ndim:
        shape[d] = index.numel()
    spread = index.to(dt.int64).reshape(shape).expand(*source.shape) if source.ndim else index.reshape(())
    return d, spread


def index_reduce(input: Tensor, dim: int, index: Tensor, source: Tensor, reduce: str, *,
                 include_self: bool = True) -> Tensor:
    """A copy of input with the rows of source reduced into the rows index names along dim."""
    global _warned
    if not _warned:  # once per process, as torch's TORCH_WARN_ONCE
        _warned = True
        warnings.warn("index_reduce() is in beta and the API may change at any time.", UserWarning, stacklevel=2)
    d, spread = _spread(input, dim, index, source, reduce)
    return scatter_reduce(input, d, spread, source, reduce, include_self=include_self)


def _index_reduce_(self: Tensor, dim: int, index: Tensor, source: Tensor, reduce: str, *,
                   include_self: bool = True) -> Tensor:
    d, spread = _spread(self, dim, index, source, reduce)
    return scatter_reduce_(self, d, spread, source, reduce, include_self=include_self)


def nonzero_static(input: Tensor, *, size: int, fill_value: int = -1) -> Tensor:
    """nonzero's (n, ndim) indices cut or padded with fill_value to exactly `size` rows."""
    if size < 0:
        raise RuntimeError(f"nonzero_static: 'size' must be an non-negative integer, but got {size}")
    found = nonzero(input)[:size]
    missing = size - found.shape[0]
    if missing == 0:
        return found
    return cat([found, full((missing, found.shape[1]), fill_value, dtype=dt.int64, device=input.device)])


# segment_reduce's reduction -> (scatter_reduce's name, the identity an empty segment gets)
_SEGMENT = {"sum": ("sum", 0.0), "prod": ("prod", 1.0), "max": ("amax", -math.inf), "min": ("amin", math.inf),
            "mean": ("sum", 0.0)}


def segment_reduce(data: Tensor, reduce: str, *, lengths: Tensor | None = None, indices: Tensor | None = None,
                   offsets: Tensor | None = None, axis: int = 0, unsafe: bool = False, initial=None) -> Tensor:
    """Reduce consecutive segments of data along axis (their lengths, or the offsets between them); an empty
    segment gives `initial`, else the reduction's identity (NaN for mean). `initial` joins every segment."""
    if reduce not in _SEGMENT:
        raise RuntimeError(f"segment_reduce(): reduce must be one of sum, prod, max, min or mean, got {reduce}")
    if indices is not None or (lengths is None) == (offsets is None):
        raise RuntimeError("segment_reduce(): exactly one of lengths or offsets must be given (indices is not "
                           "supported)")
    axis = data._dim(axis, "segment_reduce")
    counts = lengths._host_array() if lengths is not None else np.diff(offsets._host_array(), axis=-1)
    if data.ndim < counts.ndim:
        given = "lengths" if lengths is not None else "offsets"
        raise RuntimeError(f"segment_reduce(): Expected data.dim() >= {given}_value.dim() to be true, but got false.")
    if counts.ndim != axis + 1 or counts.shape[:-1] != tuple(data.shape[:axis]):
        raise RuntimeError(f"segment_reduce(): lengths or offsets must have shape {list(data.shape[:axis])} + "
                           f"[segments] for axis {axis}, got {list(counts.shape)}")
    if not unsafe and ((counts < 0).any() or (counts.sum(-1) != data.shape[axis]).any()):
        raise RuntimeError("segment_reduce(): expected lengths to be non-negative and to sum to data.size(axis)")
    segments = np.zeros(counts.shape[:-1] + (data.shape[axis],), np.int64)
    for lead in np.ndindex(*counts.shape[:-1]):
        segments[lead] = np.repeat(np.arange(counts.shape[-1]), counts[lead])
    trailing = (1,) * (data.ndim - axis - 1)
    index = tensor(segments, device=data.device).reshape(segments.shape + trailing).expand(*data.shape)
    name, identity = _SEGMENT[reduce]
    start = full(counts.shape + tuple(data.shape[axis + 1:]), identity if initial is None else initial,
                 dtype=data.dtype, device=data.device)
    out = scatter_reduce(start, axis, index, data, name, include_self=True)
    if reduce == "mean":
        count = counts.astype(np.float64) if initial is None else np.maximum(counts, 1).astype(np.float64)
        out = M.div(out, tensor(count, device=data.device).reshape(counts.shape + trailing).to(data.dtype))
    return out


METHODS.update(index_reduce=index_reduce, index_reduce_=_index_reduce_, nonzero_static=nonzero_static)
_ = M  # composites only

"""Grids of coordinates and indices: meshgrid, cartesian_prod, triu_indices and tril_indices.

meshgrid's grids are expanded views of its inputs; the triangle indices are built on the host (their size
depends only on the arguments) as torch builds them.
"""
from __future__ import annotations

import warnings

import numpy as np

from ...tensor import Tensor
from ...tensor import dtype as dt
from ..movement.shape_ops import stack
from ..dispatch.dim_args import tensor_list

__all__ = ["meshgrid", "cartesian_prod", "triu_indices", "tril_indices"]
METHODS: dict = {}


def meshgrid(*tensors, indexing: str | None = None) -> tuple:
    """Coordinate grids (expanded views) from 0-D/1-D tensors; indexing 'ij' (default) or 'xy'."""
    tensors = tensor_list("meshgrid", tensors)
    if indexing is None:
        warnings.warn("torch.meshgrid: in an upcoming release, it will be required to pass the indexing "
                      "argument.", UserWarning, stacklevel=2)
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f'torch.meshgrid: indexing must be one of "xy" or "ij", but received: {indexing}')
    if not tensors:
        raise RuntimeError("meshgrid expects a non-empty TensorList")
    for t in tensors:
        if t.ndim > 1:
            raise RuntimeError("torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: " + str(t))
    if len({t.dtype for t in tensors}) > 1:
        raise RuntimeError("meshgrid expects all tensors to have the same dtype")
    swap = indexing == "xy" and len(tensors) >= 2  # 'xy' is 'ij' with the first two inputs swapped
    if swap:
        tensors[0], tensors[1] = tensors[1], tensors[0]
    sizes = tuple(t.numel() for t in tensors)
    grids = []
    for k, t in enumerate(tensors):
        shape = [1] * len(tensors)
        shape[k] = sizes[k]
        grids.append(t.reshape(shape).expand(*sizes))
    if swap:
        grids[0], grids[1] = grids[1], grids[0]
    return tuple(grids)


def cartesian_prod(*tensors) -> Tensor:
    """Every combination of the 1-D inputs' elements, one per row (the input itself for one tensor)."""
    tensors = tensor_list("cartesian_prod", tensors)
    for t in tensors:
        if t.ndim != 1:
            raise RuntimeError(f"Expect a 1D vector, but got shape {list(t.shape)}")
    if len(tensors) == 1:
        return tensors[0]
    return stack([g.flatten() for g in meshgrid(tensors, indexing="ij")], 1)


def triu_indices(row: int, col: int, offset: int = 0, *, dtype: dt.dtype = dt.int64, device=None,
                 layout=None) -> Tensor:
    """The 2 x N (row, col) coordinates of the upper triangle (diagonal `offset`) of a row x col matrix."""
    return _tri_indices("triu_indices", np.triu_indices(row, offset, col), dtype, device)


def tril_indices(row: int, col: int, offset: int = 0, *, dtype: dt.dtype = dt.int64, device=None,
                 layout=None) -> Tensor:
    """The 2 x N (row, col) coordinates of the lower triangle (diagonal `offset`) of a row x col matrix."""
    return _tri_indices("tril_indices", np.tril_indices(row, offset, col), dtype, device)


def _tri_indices(name: str, rows_cols: tuple, dtype: dt.dtype, device) -> Tensor:
    if dtype not in (dt.int64, dt.int32):  # (torch's kernels have int32 and int64 loops only)
        raise NotImplementedError(f"\"{name}\" not implemented for '{dtype.scalar_name}'")
    t = Tensor._from_array(np.stack(rows_cols).astype(dtype.np).reshape(2, -1), dtype)
    return t if device is None else t.to(device)



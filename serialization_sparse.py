"""Sparse COO tensors in checkpoints, as torch writes them: `torch._utils._rebuild_sparse_tensor(layout, (indices,
values, size, is_coalesced))`, the layout named through `torch.serialization._get_layout("torch.sparse_coo")`."""
from __future__ import annotations

import pickle

from .ops.factories.sparse_coo import SparseCooTensor
from .tensor import Size, Tensor

__all__ = ["LayoutName", "get_layout", "rebuild_sparse_tensor", "sparse_arguments"]


class LayoutName:
    """A layout as a checkpoint names it ('torch.sparse_coo'); pickled as torch's `_get_layout` call."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __eq__(self, other) -> bool:
        return isinstance(other, LayoutName) and other.name == self.name

    def __hash__(self) -> int:
        return hash(self.name)

    def __repr__(self) -> str:
        return self.name


SPARSE_COO = LayoutName("torch.sparse_coo")


def get_layout(name: str) -> LayoutName:
    """torch.serialization._get_layout on load: the layout a checkpoint names."""
    if not isinstance(name, str):
        raise pickle.UnpicklingError(f"_get_layout: expected a layout name, got {type(name).__name__}")
    return LayoutName(name)


def rebuild_sparse_tensor(layout, data) -> Tensor:
    """torch._utils._rebuild_sparse_tensor on load: a sparse COO tensor from its indices, values and size."""
    if layout != SPARSE_COO:
        raise NotImplementedError(f"rebuilding sparse tensor for layout {layout}")
    if not isinstance(data, tuple) or len(data) not in (3, 4):
        raise pickle.UnpicklingError("_rebuild_sparse_tensor: expected (indices, values, size[, is_coalesced])")
    indices, values, size = data[:3]
    is_coalesced = data[3] if len(data) == 4 else None
    if not isinstance(indices, Tensor) or not isinstance(values, Tensor):
        raise pickle.UnpicklingError("_rebuild_sparse_tensor: the indices and values must be tensors")
    from .ops.factories.sparse_coo import sparse_coo_tensor  # (ops sits above this module: import on use)
    return sparse_coo_tensor(indices, values, tuple(size), is_coalesced=is_coalesced)


def sparse_arguments(t: Tensor) -> tuple | None:
    """(layout, (indices, values, size, is_coalesced)) for a sparse COO tensor, as torch pickles it; else None."""
    if not isinstance(t, SparseCooTensor):
        return None
    return SPARSE_COO, (t._indices(), t._values(), Size(tuple(t.shape)), t.is_coalesced())

"""torch.sparse: the products on sparse COO tensors (held dense by tidal: ops/factories/sparse_coo.py)."""
from __future__ import annotations

from ..ops.factories.sparse_coo import sparse_coo_tensor, spmm
from ..tensor import Tensor

__all__ = ["mm", "addmm", "sum", "sparse_coo_tensor", "spmm"]


def mm(mat1: Tensor, mat2: Tensor, reduce: str = "sum") -> Tensor:
    """mat1 @ mat2 where mat1 (or both) may be sparse."""
    if reduce != "sum":
        raise RuntimeError(f"torch.sparse.mm: tidal supports reduce='sum' only, not {reduce!r}")
    return mat1.mm(mat2)


def addmm(mat: Tensor, mat1: Tensor, mat2: Tensor, *, beta: float = 1, alpha: float = 1) -> Tensor:
    """beta * mat + alpha * (mat1 @ mat2), mat1 sparse."""
    return mat.addmm(mat1, mat2, beta=beta, alpha=alpha)


def sum(input: Tensor, dim=None, dtype=None) -> Tensor:  # noqa: A001 - torch's name
    """The sum of a sparse tensor's values (over `dim`: a dense tensor here, where torch keeps it sparse)."""
    out = input.sum() if dim is None else input.sum(dim)
    return out if dtype is None else out.to(dtype)



"""torch's older norm spellings, kept for JIT-era code: frobenius_norm, nuclear_norm, norm_except_dim.
Each is one call into tidal.linalg's norms, so it shares their values and gradients.
"""
from __future__ import annotations

import warnings

from ...tensor import Tensor
from .namespace import matrix_norm, vector_norm

__all__ = ["frobenius_norm", "nuclear_norm", "norm_except_dim"]
METHODS: dict = {}


def frobenius_norm(input: Tensor, dim=(), keepdim: bool = False, *, out: Tensor | None = None) -> Tensor:
    """The 2-norm over dim (deprecated in torch: use linalg.vector_norm)."""
    warnings.warn("at::frobenius_norm is deprecated and it is just left for JIT compatibility. It will be removed "
                  "in a future PyTorch release. Please use `linalg.vector_norm(A, 2., dim, keepdim)` instead",
                  UserWarning, stacklevel=2)
    result = vector_norm(input, 2, dim=tuple(dim) if dim else None, keepdim=keepdim)
    return result if out is None else out.copy_(result)


def nuclear_norm(input: Tensor, dim=None, keepdim: bool = False, *, out: Tensor | None = None) -> Tensor:
    """The sum of singular values over two dims (deprecated in torch: use linalg.matrix_norm(A, 'nuc'))."""
    if isinstance(dim, bool):  # nuclear_norm(input, keepdim)
        dim, keepdim = None, dim
    warnings.warn("at::nuclear_norm is deprecated and it is just left for JIT compatibility. It will be removed "
                  "in a future PyTorch release. Please use `linalg.matrix_norm(A, 'nuc', dim, keepdim)` instead",
                  UserWarning, stacklevel=2)
    if input.ndim != 2 and dim is None:
        raise RuntimeError(f"Expected a tensor with 2 dimensions, but got a tensor with {input.ndim} dimension"
                           f"{'' if input.ndim == 1 else 's'} instead.")
    result = matrix_norm(input, "nuc", dim=(-2, -1) if dim is None else tuple(dim), keepdim=keepdim)
    return result if out is None else out.copy_(result)


def norm_except_dim(v: Tensor, pow: float = 2, dim: int = 0) -> Tensor:
    """The pow-norm over every dim but dim, shaped to broadcast against v (dim -1: the norm of all of v)."""
    if dim == -1:
        return vector_norm(v, pow)
    d = dim % v.ndim
    others = tuple(k for k in range(v.ndim) if k != d)
    return vector_norm(v, pow, dim=others, keepdim=True) if others else v.abs() if pow else v

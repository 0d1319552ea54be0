"""Diagonals: diag, diag_embed, diagflat, fill_diagonal_ and block_diag.

Composites of tidal ops, so they differentiate: diag_embed selects its input where a mask marks the diagonal,
block_diag concatenates rows of blocks padded with zeros.
"""
from __future__ import annotations

from ...tensor import Tensor
from ...tensor import dtype as dt
from ..elementwise import arithmetic as M
from ..factories.creation import zeros
from ..factories.ranges import arange
from .shape_ops import cat
from ..dispatch.dim_args import need_tensor, tensor_list

__all__ = ["diag", "diag_embed", "diagflat", "block_diag"]


def diag_embed(input: Tensor, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """Matrices (in dims dim1, dim2 of the result) whose `offset` diagonal holds the last dim of `input`."""
    need_tensor("diag_embed", "input", 1, input)
    nd = input.ndim + 1
    a, b = _wrap(dim1, nd), _wrap(dim2, nd)
    if a == b:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    length = input.shape[-1] if input.ndim else 1
    v = input.reshape(1) if input.ndim == 0 else input
    n = length + abs(offset)
    # v padded to n: v[i] sits at row i (offset >= 0) or column i (offset < 0)
    v = cat([v, zeros(*v.shape[:-1], abs(offset), dtype=v.dtype, device=v.device)], -1)
    idx = arange(n, device=input.device)
    on_diag = M.eq(M.sub(idx.unsqueeze(0), idx.unsqueeze(1)), offset)  # [row, col]: col - row == offset
    along = v.unsqueeze(-1) if offset >= 0 else v.unsqueeze(-2)  # value indexed by row (or by column)
    out = M.where(on_diag, along, zeros((), dtype=v.dtype, device=v.device))
    return out.movedim((-2, -1), (a, b)) if (a, b) != (nd - 2, nd - 1) else out


def _wrap(d: int, n: int) -> int:
    if not -n <= d < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {d})")
    return d % n


def diag(input: Tensor, diagonal: int = 0, *, out: Tensor | None = None) -> Tensor:
    """1-D input: a matrix with it on the `diagonal`; 2-D input: a copy of that diagonal."""
    need_tensor("diag", "input", 1, input)
    if input.ndim == 1:
        res = diag_embed(input, diagonal)
    elif input.ndim == 2:
        res = input.diagonal(diagonal).clone()
    else:
        raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {input.ndim}D")
    if out is not None:
        out.copy_(res)
        return out
    return res


def diagflat(input: Tensor, offset: int = 0) -> Tensor:
    """A matrix with the flattened input on diagonal `offset`."""
    need_tensor("diagflat", "input", 1, input)
    return diag_embed(input.reshape(-1), offset)


def fill_diagonal_(self: Tensor, fill_value, wrap: bool = False) -> Tensor:
    """Fill the main diagonal in place (all dims equal when ndim > 2; `wrap` repeats it down tall matrices)."""
    if self.ndim < 2:
        raise RuntimeError("dimensions must larger than 1")
    if self.ndim > 2 and len(set(self.shape)) > 1:
        raise RuntimeError("all dimensions of input must be of equal length")
    if self.ndim == 2:
        rows, cols = self.shape
        step = cols + 1 if wrap else rows  # torch's wrap restarts the diagonal one row below its end
        for start in range(0, rows, max(step, 1)):
            self[start:].diagonal().fill_(fill_value)
        return self
    d = self
    while d.ndim > 1:  # the diagonal of n equal dims, folded in pairwise: still a view of self
        d = d.diagonal(0, 0, -1)
    d.fill_(fill_value)
    return self


def block_diag(*tensors) -> Tensor:
    """A block-diagonal matrix of the 0-D/1-D/2-D inputs (0-D is 1x1, 1-D is one row), promoted dtype."""
    tensors = tensor_list("block_diag", tensors)
    for k, t in enumerate(tensors):
        if t.ndim > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input {k} has "
                               f"{t.ndim} dimensions")
    if not tensors:
        return zeros(1, 0)
    out_dtype = tensors[0].dtype
    for t in tensors[1:]:
        out_dtype = dt.promote_types(out_dtype, t.dtype)
    blocks = [t.reshape(1, -1) if t.ndim < 2 else t for t in tensors]
    width = sum(b.shape[1] for b in blocks)
    rows, left = [], 0
    device = tensors[0].device
    for b in blocks:
        h, w = b.shape
        pieces = [zeros(h, left, dtype=out_dtype, device=device), b.to(out_dtype),
                  zeros(h, width - left - w, dtype=out_dtype, device=device)]
        rows.append(cat(pieces, 1))
        left += w
    return cat(rows, 0)


METHODS = dict(diag=diag, diag_embed=diag_embed, diagflat=diagflat, fill_diagonal_=fill_diagonal_)

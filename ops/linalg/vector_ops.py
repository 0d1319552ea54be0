"""Small vector and sequence ops built from tidal ops: dist, addr, renorm, combinations, and the deprecated
inclusive torch.range. All are composites, so they differentiate as PyTorch's do.
"""
from __future__ import annotations

import builtins
import itertools
import math
import warnings

import numpy as np

from ...tensor import Tensor
from ...tensor import dtype as dt
from ..elementwise import arithmetic as M, copies
from ..dispatch.broadcast import broadcast_shapes
from ..factories.ranges import arange
from ..reductions.stats import norm
from ..dispatch.user_frame import user_stacklevel
from ..dispatch.dim_args import need_tensor
from ..dispatch.node_names import torch_node

__all__ = ["dist", "addr", "renorm", "combinations", "range"]
METHODS: dict = {}


def dist(input: Tensor, other: Tensor, p: float = 2) -> Tensor:
    """The p-norm of input - other."""
    return torch_node(norm(M.sub(input, other), p), "dist", input, other)


def addr(input: Tensor, vec1: Tensor, vec2: Tensor, *, beta=1, alpha=1, out: Tensor | None = None) -> Tensor:
    """beta * input + alpha * outer(vec1, vec2)."""
    if vec1.ndim != 1 or vec2.ndim != 1:
        raise RuntimeError(f"addr: Expected 1-D argument vec1, but got {vec1.ndim}-D" if vec1.ndim != 1 else
                           f"addr: Expected 1-D argument vec2, but got {vec2.ndim}-D")
    if input.dtype is vec1.dtype is vec2.dtype is dt.bool_:  # bool: the scalars are truth values, as in torch
        alpha, beta = bool(alpha), bool(beta)
    outer = M.mul(vec1.unsqueeze(1), vec2.unsqueeze(0))
    outer = outer if alpha == 1 else M.mul(outer, alpha)
    if beta == 0:  # input is ignored, NaN included, as in torch
        result = copies.clone(outer.expand(*broadcast_shapes(tuple(input.shape), tuple(outer.shape))))
    else:
        result = M.add(input if beta == 1 else M.mul(input, beta), outer)
    return result if out is None else out.copy_(result)


def _addr_(self: Tensor, vec1: Tensor, vec2: Tensor, *, beta=1, alpha=1) -> Tensor:
    return self.copy_(addr(self, vec1, vec2, beta=beta, alpha=alpha))


def renorm(input: Tensor, p: float, dim: int, maxnorm: float) -> Tensor:
    """input with each slice along dim whose p-norm exceeds maxnorm scaled down to norm maxnorm."""
    if input.ndim < 2:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {input.ndim} dimensions")
    if p <= 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
    d = input._dim(dim, "renorm")
    others = tuple(k for k in builtins.range(input.ndim) if k != d)
    norms = norm(input, p, dim=others, keepdim=True) if others else M.abs(input)
    # torch's factor: maxnorm / (norm + 1e-7) where the norm exceeds maxnorm, else 1 (differentiated, as torch)
    factor = M.where(M.gt(norms, maxnorm), M.div(maxnorm, M.add(norms, 1e-7)), 1.0)
    return M.mul(input, factor.to(input.dtype))


def _renorm_(self: Tensor, p: float, dim: int, maxnorm: float) -> Tensor:
    return self.copy_(renorm(self, p, dim, maxnorm))


def combinations(input: Tensor, r: int = 2, with_replacement: bool = False) -> Tensor:
    """The r-length combinations of a 1-D tensor's elements, one per row (itertools' order)."""
    if input.ndim != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(input.shape)}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return input[:0]
    pick = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    rows = list(pick(builtins.range(input.shape[0]), r))
    if not rows:
        return input[:0].reshape(0, r)  # (r = 1 too: torch gives (0, 1))
    index = Tensor._from_array(np.array(rows, dtype=np.int64), dt.int64)
    return input[index.reshape(-1)].reshape(len(rows), r)


def range(start=0, end=None, step=1, *, out=None, dtype: dt.dtype | None = None, layout=None, device=None,
          requires_grad: bool = False) -> Tensor:
    """Values from start to end inclusive by step (deprecated in PyTorch: use arange)."""
    warnings.warn("torch.range is deprecated and will be removed in a future release because its behavior is "
                  "inconsistent with Python's range builtin. Instead, use torch.arange, which produces values "
                  "in [start, end).", UserWarning, stacklevel=user_stacklevel())
    if end is None:
        start, end = 0, start
    count = math.floor((end - start) / step) + 1
    dtype = dt.get_default_dtype() if dtype is None else dtype
    values = M.add(M.mul(arange(count, dtype=dt.float64, device=device), float(step)), float(start)).to(dtype)
    if requires_grad:
        values.requires_grad_(True)
    return values if out is None else out.copy_(values)


METHODS.update(dist=dist, addr=addr, addr_=_addr_, renorm=renorm, renorm_=_renorm_)


# -- distances between rows -------------------------------------------------------------------------
_CDIST_MODES = ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist")


def cdist(x1: Tensor, x2: Tensor, p: float = 2.0, compute_mode: str = "use_mm_for_euclid_dist_if_necessary") -> Tensor:
    """p-norm distances between the rows of x1 (..., P, M) and of x2 (..., R, M): shape (..., P, R).

    Every compute_mode gives the same (direct) computation: torch's matmul form only trades accuracy
    for speed."""
    if compute_mode not in _CDIST_MODES:
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    need_tensor("cdist", "x1", 1, x1)
    need_tensor("cdist", "x2", 2, x2)
    for name, t in (("X1", x1), ("X2", x2)):
        if t.ndim < 2:
            raise RuntimeError(f"cdist only supports at least 2D tensors, {name} got: {t.ndim}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} X2: {x2.shape[-1]}")
    for name, t in (("X1", x1), ("X2", x2)):
        if not t.dtype.is_floating_point or t.dtype.is_complex:
            raise RuntimeError(f"cdist only supports floating-point dtypes, {name} got: {t.dtype.scalar_name}")
    if p < 0:
        raise RuntimeError("cdist only supports non-negative p values")
    if x1.dtype is not x2.dtype:
        raise RuntimeError(f"expected scalar type {x1.dtype.scalar_name} but found {x2.dtype.scalar_name}")
    pairs = M.sub(x1.unsqueeze(-2), x2.unsqueeze(-3))  # (..., P, R, M)
    if p == 0:  # torch's cdist counts min(ceil|d|, 1): a NaN difference makes the distance NaN (a norm counts it)
        result = M.clamp_max(M.ceil(M.abs(pairs)), 1).sum(-1)
    else:
        result = norm(pairs, float(p), -1)
    # torch's nodes: a view of _euclidean_dist's where it takes the matrix-product form (p 2, asked for or over 25
    # rows), else cdist's
    if p == 2 and (compute_mode == _CDIST_MODES[1] or compute_mode == _CDIST_MODES[0] and
                   (x1.shape[-2] > 25 or x2.shape[-2] > 25)):
        return torch_node(result, "_euclidean_dist", x1, x2).view(result.shape)
    return torch_node(result, "cdist", x1, x2)


__all__.append("cdist")

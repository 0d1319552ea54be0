"""The torch.* (and Tensor method) names of linear algebra, with their older signatures: lu, lu_solve,
lu_unpack, triangular_solve, cholesky_solve, cholesky_inverse, logdet, slogdet, pinverse, matrix_exp,
matrix_power and vander. Each forwards to its torch.linalg counterpart (ops/linalg_ns.py and the files
it gathers)."""
from __future__ import annotations

import math
import warnings

from ..tensor import Tensor
from . import math_api as M
from .creation import full, ones_like
from .linalg_derived import matrix_exp, matrix_power
from .linalg_derived import vander as _linalg_vander
from .linalg_lu import cholesky_inverse, cholesky_solve, into_all, lu_factor_ex, lu_unpack, triangular_solve
from .linalg_lu import lu_solve as _linalg_lu_solve
from .linalg_ns import _check_matrix, pinv
from .linalg_ns import slogdet as _linalg_slogdet
from .return_types import return_type

__all__ = ["lu", "lu_solve", "lu_unpack", "triangular_solve", "cholesky_solve", "cholesky_inverse", "logdet",
           "slogdet", "pinverse", "matrix_exp", "matrix_power", "vander"]
METHODS: dict = {}


def lu(A: Tensor, pivot: bool = True, get_infos: bool = False, out=None) -> tuple:
    """(LU, pivots[, infos]): the packed LU factorization; never raises on a singular matrix."""
    warnings.warn("torch.lu is deprecated in favor of torch.linalg.lu_factor / torch.linalg.lu_factor_ex and "
                  "will be removed in a future PyTorch release.", UserWarning, stacklevel=2)
    LU, pivots, info = lu_factor_ex(A, pivot=pivot)
    res = (LU, pivots, info) if get_infos else (LU, pivots)
    if out is not None:
        for o, r in zip(out, res):
            o.copy_(r)
        return tuple(out)
    return res


def lu_solve(b: Tensor, LU_data: Tensor, LU_pivots: Tensor, *, out=None) -> Tensor:
    """X with A X = b, A given by torch.lu's (LU_data, LU_pivots)."""
    return _linalg_lu_solve(LU_data, LU_pivots, b, out=out)


def logdet(input: Tensor) -> Tensor:
    """log det(A): nan for a negative determinant, -inf for a singular matrix."""
    _check_matrix("logdet", input)
    sign, logabs = _linalg_slogdet(input)
    return M.where(M.lt(sign, 0), full((), math.nan, dtype=input.dtype, device=input.device), logabs)


def slogdet(input: Tensor, *, out=None) -> tuple:
    """(sign, log|det|) of each square matrix."""
    sign, logabs = _linalg_slogdet(input)
    return into_all(return_type("slogdet", ("sign", "logabsdet"))(sign, logabs), out)


def pinverse(input: Tensor, rcond: float = 1e-15) -> Tensor:
    """The pseudo-inverse, singular values below rcond * largest taken as zero."""
    return pinv(input, rtol=rcond)


def vander(x: Tensor, N: int | None = None, increasing: bool = False) -> Tensor:
    """The Vandermonde matrix of a 1-D x: columns x^(N-1) ... x^0 (x^0 ... x^(N-1) when `increasing`)."""
    if x.ndim != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    N = x.shape[0] if N is None else N
    if N < 0:
        raise RuntimeError("N must be non-negative.")
    if N <= 1:
        res = ones_like(x).unsqueeze(-1)[:, :N]
    else:
        res = _linalg_vander(x, N=N)
    return res if increasing else res.flip(-1)


METHODS.update(lu=lu, lu_solve=lu_solve, triangular_solve=triangular_solve, cholesky_solve=cholesky_solve,
               cholesky_inverse=cholesky_inverse, logdet=logdet, slogdet=slogdet, pinverse=pinverse,
               matrix_exp=matrix_exp, matrix_power=matrix_power)

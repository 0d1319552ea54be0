"""The torch.* (and Tensor method) names of linear algebra, with their older signatures: lu, lu_solve,
lu_unpack, triangular_solve, cholesky_solve, cholesky_inverse, logdet, slogdet, pinverse, matrix_exp,
matrix_power, vander, cholesky, qr, svd, geqrf, orgqr, ormqr and chain_matmul. Each forwards to its
torch.linalg counterpart (ops/linalg/namespace.py and the files it gathers). svd_lowrank and pca_lowrank, the
randomized low-rank SVD (Halko, Martinsson and Tropp), are composed of qr, svd and matmul."""
from __future__ import annotations

import math
import warnings

from ...tensor import Tensor
from ..elementwise import arithmetic as M
from ..complex_numbers.tensors import angle
from ..factories.creation import full, ones_like
from ..factories.creation import zeros
from .derived import householder_product, matrix_exp, matrix_power, multi_dot
from .derived import vander as _linalg_vander
from .lu import cholesky_inverse, cholesky_solve, into_all, lu_factor_ex, lu_unpack, triangular_solve
from .lu import lu_solve as _linalg_lu_solve
from .householder import geqrf, ormqr
from .namespace import LinAlgError, _check_matrix, pinv
from .namespace import cholesky as _linalg_cholesky
from .namespace import qr as _linalg_qr
from .namespace import svd as _linalg_svd
from .namespace import det, inv, svdvals
from .namespace import slogdet as _linalg_slogdet
from ..random.sampling import randn
from ..dispatch.return_types import return_type
from ..dispatch.user_frame import user_stacklevel

__all__ = ["lu", "lu_solve", "lu_unpack", "triangular_solve", "cholesky_solve", "cholesky_inverse", "logdet",
           "slogdet", "pinverse", "matrix_exp", "matrix_power", "vander", "cholesky", "qr", "svd", "geqrf", "orgqr",
           "ormqr", "chain_matmul", "svd_lowrank", "pca_lowrank"]
METHODS: dict = {}


def lu(A: Tensor, pivot: bool = True, get_infos: bool = False, out=None) -> tuple:
    """(LU, pivots[, infos]): the packed LU factorization; never raises on a singular matrix."""
    warnings.warn("torch.lu is deprecated in favor of torch.linalg.lu_factor / torch.linalg.lu_factor_ex and "
                  "will be removed in a future PyTorch release.\nLU, pivots = torch.lu(A, compute_pivots)\nshould be "
                  "replaced with\nLU, pivots = torch.linalg.lu_factor(A, compute_pivots)\nand\nLU, pivots, info = "
                  "torch.lu(A, compute_pivots, get_infos=True)\nshould be replaced with\nLU, pivots, info = "
                  "torch.linalg.lu_factor_ex(A, compute_pivots)", UserWarning, stacklevel=user_stacklevel())
    LU, pivots, info = lu_factor_ex(A, pivot=pivot)
    res = (LU, pivots, info) if get_infos else (LU, pivots)
    if out is not None:
        for o, r in zip(out, res):
            o.copy_(r)
        return tuple(out)
    return res


def lu_solve(b: Tensor, LU_data: Tensor, LU_pivots: Tensor, *, out=None) -> Tensor:
    """X with A X = b, A given by torch.lu's (LU_data, LU_pivots)."""
    warnings.warn("torch.lu_solve is deprecated in favor of torch.linalg.lu_solveand will be removed in a future "
                  "PyTorch release.\nNote that torch.linalg.lu_solve has its arguments reversed.\nX = torch.lu_solve(B, "
                  "LU, pivots)\nshould be replaced with\nX = torch.linalg.lu_solve(LU, pivots, B)", UserWarning,
                  stacklevel=user_stacklevel())  # (torch's words, its missing space included)
    return _linalg_lu_solve(LU_data, LU_pivots, b, out=out)


def logdet(input: Tensor) -> Tensor:
    """log det(A): nan for a negative determinant, -inf for a singular matrix (complex: log|det| + i angle)."""
    _check_matrix("logdet", input)
    sign, logabs = _linalg_slogdet(input)
    if input.dtype.is_complex:
        return logabs + angle(sign) * 1j
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


_WARNED: set = set()  # the deprecations torch's C++ warns of once per process (TORCH_WARN_ONCE)


def _warn_once(name: str, message: str) -> None:
    if name not in _WARNED:
        _WARNED.add(name)
        warnings.warn(message, UserWarning, stacklevel=3)


def cholesky(input: Tensor, upper: bool = False, *, out=None) -> Tensor:
    """The Cholesky factor, lower (upper when `upper`); the older torch.cholesky."""
    _warn_once("cholesky", "torch.cholesky is deprecated in favor of torch.linalg.cholesky and will be removed in a "
               "future PyTorch release.\nL = torch.cholesky(A)\nshould be replaced with\nL = torch.linalg.cholesky(A)"
               "\nand\nU = torch.cholesky(A, upper=True)\nshould be replaced with\nU = torch.linalg.cholesky(A).mH\n"
               "This transform will produce equivalent results for all valid (symmetric positive definite) inputs.")
    try:
        return _linalg_cholesky(input, upper=upper, out=out)
    except LinAlgError as exc:  # torch.cholesky's message names it so
        raise LinAlgError("cholesky" + str(exc)[len("linalg.cholesky"):]) from None


def qr(input: Tensor, some: bool = True, *, out=None) -> tuple:
    """(Q, R), reduced unless some=False; the older torch.qr."""
    _warn_once("qr", "torch.qr is deprecated in favor of torch.linalg.qr and will be removed in a future PyTorch "
               "release.\nThe boolean parameter 'some' has been replaced with a string parameter 'mode'.\nQ, R = "
               "torch.qr(A, some)\nshould be replaced with\nQ, R = torch.linalg.qr(A, 'reduced' if some else "
               "'complete')")
    Q, R = _linalg_qr(input, "reduced" if some else "complete")
    return into_all(return_type("qr", ("Q", "R"))(Q, R), out)


def svd(input: Tensor, some: bool = True, compute_uv: bool = True, *, out=None) -> tuple:
    """(U, S, V) with input = U diag(S) V^H (V, not V^H: a conj view for complex input, as torch's); without
    compute_uv, U and V are zero m x m and n x n."""
    if compute_uv:
        U, S, Vh = _linalg_svd(input, full_matrices=not some)
        V = Vh.mH
    else:
        *batch, m, n = input.shape
        S = svdvals(input)
        U = zeros(*batch, m, m, dtype=input.dtype, device=input.device)
        V = zeros(*batch, n, n, dtype=input.dtype, device=input.device)
    return into_all(return_type("svd", ("U", "S", "V"))(U, S, V), out)


def orgqr(input: Tensor, input2: Tensor, *, out=None) -> Tensor:
    """Q from geqrf's output (input2: its tau): linalg.householder_product."""
    return householder_product(input, input2, out=out)


def chain_matmul(*matrices, out=None) -> Tensor:
    """The product of the matrices (the older, deprecated linalg.multi_dot)."""
    warnings.warn("torch.chain_matmul is deprecated and will be removed in a future PyTorch release. Use "
                  "torch.linalg.multi_dot instead, which accepts a list of two or more tensors rather than multiple "
                  "parameters.", UserWarning, stacklevel=2)
    if len(matrices) == 0:
        raise RuntimeError("chain_matmul(): Expected one or more matrices")
    if len(matrices) == 1:
        return matrices[0].clone()
    return multi_dot(matrices, out=out)


def _range_basis(A: Tensor, q: int, niter: int) -> Tensor:
    """An orthonormal basis (..., m, q) approximating the range of A: a random projection, then `niter`
    power iterations re-orthonormalized by QR."""
    Q = _linalg_qr(A.matmul(randn(*A.shape[:-2], A.shape[-1], q, dtype=A.dtype, device=A.device)))[0]
    for _ in range(niter):
        Q = _linalg_qr(A.mH.matmul(Q))[0]
        Q = _linalg_qr(A.matmul(Q))[0]
    return Q


def svd_lowrank(A: Tensor, q: int | None = 6, niter: int = 2, M: Tensor | None = None) -> tuple:
    """(U, S, V) of a rank-q approximation of A - M by randomized SVD (exact when A - M has rank <= q)."""
    q = 6 if q is None else q
    X = A if M is None else A - M.broadcast_to(A.shape)
    wide = X.shape[-2] < X.shape[-1]
    X = X.mH if wide else X  # project the longer side
    Q = _range_basis(X, q, niter)
    U, S, Vh = _linalg_svd(Q.mH.matmul(X), full_matrices=False)
    U, V = Q.matmul(U), Vh.mH
    return (V, S, U) if wide else (U, S, V)


def pca_lowrank(A: Tensor, q: int | None = None, center: bool = True, niter: int = 2) -> tuple:
    """(U, S, V) of svd_lowrank on A with its column means removed (when `center`)."""
    m, n = A.shape[-2:]
    if q is None:
        q = min(6, m, n)
    elif not 0 <= q <= min(m, n):
        raise ValueError(f"q(={q}) must be non-negative integer and not greater than min(m, n)={min(m, n)}")
    if niter < 0:
        raise ValueError(f"niter(={niter}) must be non-negative integer")
    return svd_lowrank(A - A.mean(-2, keepdim=True) if center else A, q, niter)


METHODS.update(cholesky=cholesky, qr=qr, svd=svd, geqrf=geqrf, orgqr=orgqr, ormqr=ormqr)
METHODS.update(lu=lu, lu_solve=lu_solve, triangular_solve=triangular_solve, cholesky_solve=cholesky_solve,
               cholesky_inverse=cholesky_inverse, logdet=logdet, slogdet=slogdet, pinverse=pinverse,
               matrix_exp=matrix_exp, matrix_power=matrix_power)

# torch.inverse and torch.det (Tensor.inverse, Tensor.det): the torch.linalg functions under their older names
inverse = inv
__all__ += ["inverse", "det"]
METHODS.update(inverse=inverse, det=det)

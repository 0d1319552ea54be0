"""torch.linalg functions built on the decompositions: lstsq, cond, matrix_rank, the `_ex` variants
(inv_ex, solve_ex; cholesky_ex is namespace.py's), householder_product, matrix_exp, matrix_power, multi_dot, tensorinv,
tensorsolve, vander, vecdot and diagonal.

Nearly all are composites of tidal ops (svdvals, pinv, lu_factor_ex, solve_triangular, matmul...), so their
gradients, double backward included, come from those. Two routines need a kernel of their own,
"linalg_derived": Cholesky with LAPACK's `info` (the order of the first minor that is not positive
definite), and the matrix exponential (scaling and squaring with a degree-13 Padé approximant).
"""
from __future__ import annotations

import math
import numbers

import numpy as np

from ...tensor import Tensor
from ...tensor import dtype as dt
from ..dispatch import autocast as _ac
from ..elementwise import arithmetic as M
from ..factories.creation import eye, full, ones_like, zeros, zeros_like
from ..dispatch.primitive import Primitive
from .products import matmul
from .lu import into_all, lu_factor_ex, lu_solve
from .checks import LinAlgError, _batch_prefix, _check_float, _check_matrix, _first_error, _into, _type_name  # noqa: F401
from .decompositions import eigvalsh, inv, matrix_norm, pinv, solve, svdvals, zeros_if_empty
from ..dispatch.return_types import return_type
from ..movement.shape_ops import cat
from ..movement.slicing import diagonal as _diagonal

__all__ = ["LinAlgError", "lstsq", "cond", "matrix_rank", "inv_ex", "solve_ex", "householder_product",
           "matrix_exp", "matrix_power", "multi_dot", "tensorinv", "tensorsolve", "vander", "vecdot", "diagonal"]

# Higham (2005): the degree-13 Padé approximant of exp is accurate to double precision for |A|_1 <= theta_13.
_PADE13 = (64764752532480000., 32382376266240000., 7771770303897600., 1187353796428800., 129060195264000.,
           10559470521600., 670442572800., 33522128640., 1323241920., 40840800., 960960., 16380., 182., 1.)
_THETA13 = 5.371920351148152


# -- the kernel ----------------------------------------------------------------------------------
def _expm(a: np.ndarray) -> np.ndarray:
    """exp(A) by scaling and squaring, each matrix scaled by its own power of two (in float64)."""
    n = a.shape[-1]
    x = a.reshape(-1, n, n).astype(np.complex128 if a.dtype.kind == "c" else np.float64)
    norm = np.abs(x).sum(axis=-2).max(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):  # inf/nan entries: no scaling, the result is nan as torch's
        s = np.where(np.isfinite(norm) & (norm > _THETA13), np.ceil(np.log2(np.maximum(norm, 1e-300) / _THETA13)), 0)
    s = s.astype(np.int64)
    x = x / np.exp2(s)[:, None, None]
    b = _PADE13
    ident = np.eye(n)
    x2 = x @ x
    x4 = x2 @ x2
    x6 = x4 @ x2
    u = x @ (x6 @ (b[13] * x6 + b[11] * x4 + b[9] * x2) + b[7] * x6 + b[5] * x4 + b[3] * x2 + b[1] * ident)
    v = x6 @ (b[12] * x6 + b[10] * x4 + b[8] * x2) + b[6] * x6 + b[4] * x4 + b[2] * x2 + b[0] * ident
    r = np.linalg.solve(v - u, u + v)
    for step in range(int(s.max(initial=0))):
        r = np.where((s > step)[:, None, None], r @ r, r)
    return r.reshape(a.shape)


def _derived_kernel(ins, outs, attrs) -> None:
    a = np.asarray(ins[0])
    if zeros_if_empty(a, outs):
        return
    outs[0][...] = _expm(a)  # (attrs: ("expm",))


def _mT(x: Tensor) -> Tensor:
    """The conjugate transpose (the transpose for real dtypes): A = L L^H, exp's adjoint."""
    x = x.transpose(-2, -1)
    return x.conj() if x.dtype.is_complex else x


def _in_graph(value: Tensor, source: Tensor) -> Tensor:
    """`value` (of `source`'s shape) as a function of `source` with zero gradient, as torch returns constants such
    as A^0 from a differentiable op."""
    return M.where(zeros_like(source, dtype=dt.bool_), source, value)


# -- the _ex variants: info instead of an error --------------------------------------------------
def _singular_error(op: str, A: Tensor, info: Tensor) -> None:
    err = _first_error(info)
    if err is None:
        return
    if op == "solve_ex":
        raise LinAlgError(f"torch.linalg.solve_ex: {_batch_prefix(A, err[0])}The solver failed because the input "
                          "matrix is singular.")
    raise LinAlgError(f"linalg.{op}: {_batch_prefix(A, err[0])}The diagonal element {err[1]} is zero, the "
                      "inversion could not be completed because the input matrix is singular.")


def inv_ex(A: Tensor, *, check_errors: bool = False, out=None) -> tuple:
    """(inverse, info): info > 0 marks a singular matrix (its inverse is then inf/nan)."""
    _check_matrix("inv_ex", A)
    LU, pivots, info = lu_factor_ex(A)
    if check_errors:
        _singular_error("inv_ex", A, info)
    I = eye(A.shape[-1], dtype=A.dtype, device=A.device).expand(*A.shape)
    return into_all(return_type("linalg_inv_ex", ("inverse", "info"))(lu_solve(LU, pivots, I), info), out)


def solve_ex(A: Tensor, B: Tensor, *, left: bool = True, check_errors: bool = False, out=None) -> tuple:
    """(X, info) as linalg.solve, with info > 0 for a singular A instead of an error."""
    _check_matrix("solve", A)
    _check_float("solve", B, "B")
    if A.dtype is not B.dtype:
        raise RuntimeError(f"linalg.solve: Expected A and B to have the same dtype, but found A of type "
                           f"{_type_name(A.dtype)} and B of type {_type_name(B.dtype)} instead")
    vector = B.ndim == 1 or (B.ndim == A.ndim - 1 and B.shape == A.shape[:-1])
    Bm = B.unsqueeze(-1) if vector else B
    if (Bm.shape[-2] if left or vector else Bm.shape[-1]) != A.shape[-1]:
        raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation "
                           f"{'AX = B' if left else 'XA = B'} ({A.shape[-2]}x{A.shape[-1]} and "
                           f"{Bm.shape[-2]}x{Bm.shape[-1]})")
    LU, pivots, info = lu_factor_ex(A)
    if check_errors:
        _singular_error("solve_ex", A, info)
    X = lu_solve(LU, pivots, Bm, left=left or vector)
    return into_all(return_type("linalg_solve_ex", ("result", "info"))(X.squeeze(-1) if vector else X, info), out)


# -- least squares, condition number, rank -------------------------------------------------------
_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


def lstsq(A: Tensor, B: Tensor, rcond: float | None = None, *, driver: str | None = None) -> tuple:
    """(solution, residuals, rank, singular_values) of min ||A X - B||, as PyTorch's CPU drivers report them:
    rank for all but gels, singular values for gelsd/gelss, residuals when m > n and (for gelsd/gelss/gels)
    every matrix has full rank; gelsy (the default) gives none."""
    _check_matrix("lstsq", A, square=False)
    _check_float("lstsq", B, "B")
    if A.dtype is not B.dtype:
        raise RuntimeError(f"torch.linalg.lstsq: Expected input and other to have the same dtype, but got "
                           f"input's dtype {_type_name(A.dtype)} and other's dtype {_type_name(B.dtype)}")
    driver = "gelsy" if driver is None else driver
    if driver not in _DRIVERS:
        raise RuntimeError("torch.linalg.lstsq: parameter `driver` should be one of (gels, gelsy, gelsd, gelss)")
    vector = B.ndim == A.ndim - 1
    Bm = B.unsqueeze(-1) if vector else B
    m, n = A.shape[-2:]
    if Bm.shape[-2] != m:
        raise RuntimeError(f"torch.linalg.lstsq: input.size(-2) should match other.size(-2). Got {m} and "
                           f"{Bm.shape[-2]}")
    if rcond is None:
        rcond = float(np.finfo(A.dtype.np).eps) * max(m, n)
    X = matmul(pinv(A, rtol=rcond if driver != "gels" else 0.0), Bm)
    empty = A.new_empty((0,), dtype=A.dtype.to_real())  # singular values are real for complex A too
    rank, sv = empty.to(dt.int64), empty
    if driver != "gels":
        s = svdvals(A.detach())
        smax = s.amax(-1, keepdim=True) if s.shape[-1] else s.sum(-1, keepdim=True)
        rank = M.gt(s, smax * rcond).sum(-1)
        if driver in ("gelsd", "gelss"):
            sv = s
    residuals = X.reshape(-1)[:0]  # empty, yet an output of the graph as torch's
    if residuals.dtype.is_complex:
        residuals = residuals.real
    if m > n and driver != "gelsy":
        full_rank = driver == "gels" or bool(M.eq(rank, n).all().item())
        if full_rank:
            diff = matmul(A, X) - Bm
            residuals = ((diff.abs() if diff.dtype.is_complex else diff) ** 2).sum(-2)  # |r|^2: real
    solution = X.squeeze(-1) if vector else X
    return return_type("linalg_lstsq", ("solution", "residuals", "rank", "singular_values"))(
        solution, residuals, rank, sv)


_COND_NORMS = ("fro", "nuc", math.inf, -math.inf, 1, -1)


def cond(A: Tensor, p=None, *, out=None) -> Tensor:
    """The condition number in the p-norm: |A|_p |A^{-1}|_p, or the ratio of extreme singular values for
    p None/2/-2 (any shape); a singular matrix gives inf."""
    if p not in (None, 2, -2) + _COND_NORMS or isinstance(p, bool):
        raise RuntimeError(f"linalg.cond got an invalid norm type: {p}")
    _check_matrix("cond", A, square=False)
    if A.shape[-1] == 0 or A.shape[-2] == 0:  # an empty matrix: 0, as torch
        return _into(zeros(tuple(A.shape[:-2]), dtype=A.dtype.to_real(), device=A.device), out)  # (real for complex A)
    if p in (None, 2, -2):
        s = svdvals(A)
        hi, lo = s[..., 0], s[..., -1]
        return _into(lo / hi if p == -2 else hi / lo, out)
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"linalg.cond(ord={p}): A must be batches of square matrices, but they are "
                           f"{A.shape[-2]} by {A.shape[-1]} matrices")
    inverse, info = inv_ex(A)
    res = matrix_norm(A, p) * matrix_norm(inverse, p)
    return _into(M.where(M.gt(info, 0), full((), math.inf, dtype=res.dtype, device=A.device), res), out)


def matrix_rank(A: Tensor, tol=None, hermitian: bool = False, *, atol=None, rtol=None, out=None) -> Tensor:
    """The number of singular values (|eigenvalues| when `hermitian`) above max(atol, rtol * largest)."""
    _check_matrix("matrix_rank", A, square=False)
    if tol is not None:  # the older signature: an absolute tolerance
        atol, rtol = tol, 0.0
    s = M.abs(eigvalsh(A)) if hermitian else svdvals(A)
    s = s.detach()
    default = float(np.finfo(A.dtype.np).eps) * max(A.shape[-2:])
    if rtol is None:  # PyTorch: a positive atol alone means no relative tolerance
        if atol is None:
            rtol = default
        elif isinstance(atol, Tensor):
            rtol = M.where(M.gt(atol, 0), 0.0, default)
        else:
            rtol = 0.0 if atol > 0 else default
    smax = s.amax(-1) if s.shape[-1] else s.sum(-1)
    limit = M.mul(rtol, smax)
    if atol is not None:
        limit = M.maximum(limit, atol if isinstance(atol, Tensor) else full((), float(atol), dtype=s.dtype))
    return _into(M.gt(s, limit.unsqueeze(-1)).sum(-1), out)


# -- products ------------------------------------------------------------------------------------
def householder_product(A: Tensor, tau: Tensor, *, out=None) -> Tensor:
    """The first n columns of H_1 ... H_k, H_i = I - tau_i v_i v_i^H, v_i the i-th column of A below the
    diagonal with a unit i-th entry (the Q of geqrf's output)."""
    op = "torch.linalg.householder_product"
    if A.ndim < 2:
        raise RuntimeError(f"{op}: input must have at least 2 dimensions.")
    if tau.ndim < 1:
        raise RuntimeError(f"{op}: tau must have at least 1 dimension.")
    m, n = A.shape[-2:]
    if m < n:
        raise RuntimeError(f"{op}: input.shape[-2] must be greater than or equal to input.shape[-1]")
    k = tau.shape[-1]
    if k > n:
        raise RuntimeError(f"{op}: input.shape[-1] must be greater than or equal to tau.shape[-1]")
    if tau.ndim != A.ndim - 1 or tuple(tau.shape[:-1]) != tuple(A.shape[:-2]):
        raise RuntimeError(f"{op}: Expected batch dimensions of tau to be equal to input.shape[:-2], but got "
                           f"{list(tau.shape[:-1])}")
    if A.dtype is not tau.dtype:
        raise RuntimeError(f"{op}: tau dtype {tau.dtype} does not match input dtype {A.dtype}")
    Q = eye(m, n, dtype=A.dtype, device=A.device).expand(*A.shape)
    if k == 0:  # no reflector: Q is the identity, yet an output of A (zero gradient), as torch's
        Q = _in_graph(Q, A)
    batch = tuple(A.shape[:-2])
    for i in reversed(range(k)):
        v = cat([zeros(*batch, i, dtype=A.dtype, device=A.device), ones_like(A[..., i, i:i + 1]),
                 A[..., i + 1:, i]], -1)
        vh = v.conj() if v.dtype.is_complex else v
        Q = Q - (tau[..., i, None, None] * v.unsqueeze(-1)) * matmul(vh.unsqueeze(-2), Q)
    return _into(Q, out)


def _matrix_exp_backward(node, g):
    (A,) = node.saved_tensors
    n = A.shape[-1]
    At = _mT(A)
    block = cat([cat([At, g], -1), cat([zeros_like(At), At], -1)], -2)
    return (matrix_exp(block)[..., :n, n:],)


def matrix_exp(A: Tensor) -> Tensor:
    """exp(A) = sum_k A^k / k! of each square matrix."""
    if not isinstance(A, Tensor):
        raise TypeError(f"linalg_matrix_exp(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(A).__name__}")
    _check_matrix("matrix_exp", A, half=True)  # (the kernel computes in float64)
    return MATRIX_EXP((A,), ("expm",))


def matrix_power(A: Tensor, n: int, *, out=None) -> Tensor:
    """A^n by repeated squaring; n < 0 raises the inverse to -n, n = 0 gives the identity."""
    if A.ndim < 2:
        raise RuntimeError("linalg.matrix_power: The input tensor A must have at least 2 dimensions.")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"linalg.matrix_power: A must be batches of square matrices, but they are "
                           f"{A.shape[-2] if A.ndim > 1 else A.shape[0]} by {A.shape[-1]} matrices")
    if not isinstance(n, numbers.Integral):
        raise TypeError(f"linalg_matrix_power(): argument 'n' must be int, not {type(n).__name__}")
    if n == 0:
        return _into(_in_graph(eye(A.shape[-1], dtype=A.dtype, device=A.device).expand(*A.shape), A), out)
    if n < 0:
        A, n = inv(A), -n
    result, base = None, A
    while n:
        if n & 1:
            result = base if result is None else matmul(result, base)
        n >>= 1
        if n:
            base = matmul(base, base)
    return _into(result if result is not A else A.clone(), out)


def multi_dot(tensors, *, out=None) -> Tensor:
    """The product of matrices in the cheapest order; the first may be a row, the last a column vector."""
    tensors = list(tensors)
    if len(tensors) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(tensors)}")
    for i, t in enumerate(tensors):
        allowed = (1, 2) if i in (0, len(tensors) - 1) else (2,)
        if t.ndim not in allowed:
            which = "first" if i == 0 else "last" if i == len(tensors) - 1 else None
            raise RuntimeError(f"multi_dot(): the {which} tensor must be 1D or 2D but got {t.ndim}D" if which else
                               f"multi_dot(): tensor {i} must be 2D but got {t.ndim}D")
    first_vec, last_vec = tensors[0].ndim == 1, tensors[-1].ndim == 1
    mats = list(tensors)
    if first_vec:
        mats[0] = mats[0].unsqueeze(0)
    if last_vec:
        mats[-1] = mats[-1].unsqueeze(-1)
    for i in range(len(mats) - 1):
        if mats[i].shape[1] != mats[i + 1].shape[0]:
            raise RuntimeError(f"multi_dot(): tensors {i} and {i + 1} with shapes {tuple(mats[i].shape)} and "
                               f"{tuple(mats[i + 1].shape)} cannot be multiplied")
    res = _chain(mats, _chain_order([m.shape[0] for m in mats] + [mats[-1].shape[1]]), 0, len(mats) - 1)
    if first_vec:
        res = res.squeeze(0)
    if last_vec:
        res = res.squeeze(-1)
    return _into(res, out)


def _chain_order(dims: list) -> list:
    """The matrix-chain split table (the classic O(n^3) dynamic program over multiplication counts)."""
    n = len(dims) - 1
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = math.inf
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k
    return split


def _chain(mats: list, split: list, i: int, j: int) -> Tensor:
    if i == j:
        return mats[i]
    k = split[i][j]
    return matmul(_chain(mats, split, i, k), _chain(mats, split, k + 1, j))


# -- tensor equations, Vandermonde, vecdot, diagonal ---------------------------------------------
def tensorinv(A: Tensor, ind: int = 2, *, out=None) -> Tensor:
    """The inverse of A seen as a map from its last dims to its first `ind` dims."""
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    rows, cols = math.prod(A.shape[:ind]), math.prod(A.shape[ind:])
    if rows != cols:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[ind:]) == "
                           f"prod(self.shape[:ind]), but got {cols} != {rows}")
    return _into(inv(A.reshape(rows, cols)).reshape(*A.shape[ind:], *A.shape[:ind]), out)


def tensorsolve(A: Tensor, B: Tensor, dims=None, *, out=None) -> Tensor:
    """X with tensordot(A, X, X.ndim) = B; `dims` of A move to the end first."""
    if dims is not None:
        dims = [d % A.ndim for d in dims]
        A = A.movedim(dims, list(range(A.ndim - len(dims), A.ndim)))
    result_shape = tuple(A.shape[B.ndim:])
    rows, cols = math.prod(A.shape[:B.ndim]), math.prod(result_shape)
    if rows != cols:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[other.ndim:]) == "
                           f"prod(self.shape[:other.ndim]), but got {cols} != {rows}")
    return _into(solve(A.reshape(rows, cols), B.reshape(rows)).reshape(result_shape), out)


def vander(x: Tensor, *, N: int | None = None) -> Tensor:
    """The Vandermonde matrix [1, x, x^2, ..., x^(N-1)] along a new last dim (N = x.shape[-1] by default)."""
    if x.ndim == 0:  # a scalar is a vector of one, as in torch
        x = x.unsqueeze(0)
    N = x.shape[-1] if N is None else N
    if N <= 1:
        raise RuntimeError("N must be greater than 1.")
    ones = ones_like(x).unsqueeze(-1)
    powers = x.unsqueeze(-1).expand(*x.shape, N - 1)
    return cat([ones, powers], -1).cumprod(-1)


def vecdot(x: Tensor, y: Tensor, *, dim: int = -1, out=None) -> Tensor:
    """The dot product of x and y along `dim`, broadcasting the rest."""
    _check_float("vecdot", x, half=True)
    if _ac.ACTIVE[0] and out is None:  # on torch's autocast list of lower-precision ops
        x, y = _ac.lower(x, y)
    if x.dtype is not y.dtype:
        raise RuntimeError(f"linalg.vecdot: Expected x and y to have the same dtype, but found x of type "
                           f"{_type_name(x.dtype)} and y of type {_type_name(y.dtype)} instead")
    return _into(((x.conj() if x.dtype.is_complex else x) * y).sum(dim), out)  # torch conjugates x


def diagonal(A: Tensor, *, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """The diagonal of each matrix (a view), as torch.diagonal with the last two dims by default."""
    return _diagonal(A, offset, dim1, dim2)


# -- the records: the kernel above (attrs: (routine, ...)) -------------------------------------------------------
MATRIX_EXP = Primitive("linalg_matrix_exp", lambda inputs, attrs: [(inputs[0].shape, inputs[0].dtype)],
                       cpu=_derived_kernel, cuda=None, backward=_matrix_exp_backward, saved=("input0",),
                       node_attrs=lambda inputs, attrs: None)

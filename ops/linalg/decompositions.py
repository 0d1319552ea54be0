"""Norms, inverse, determinant, solve and the decompositions: the core of `tidal.linalg` (namespace.py gathers it
with the LU, LDL and derived functions).

Decompositions run NumPy's LAPACK wrappers in one CPU kernel (attrs name the routine), which each op's primitive
record (at the end of this file) declares with its shape rule and backward,
on float32/float64/complex64/complex128 stacks of matrices (singular values, Hermitian eigenvalues
and log|det| are real for complex input, as in PyTorch). Every function has PyTorch's gradient
(conjugate transposes for complex input), written in tidal ops so double backward works: inv and solve
here, det and slogdet in ops/linalg/det_grad.py (singular matrices as torch), the decompositions (svd,
svdvals, eigh, eigvalsh, qr, cholesky, pinv) in ops/linalg/backward.py; norms follow the op they are built from
(the 2/-2/'nuc' matrix norms from svdvals); cross and matmul are tidal's own.
"""
from __future__ import annotations

import math
import numbers

import numpy as np

from ...autograd.graph import needs_grad
from ...tensor import Tensor
from ...tensor import dtype as dt
from . import backward as grads
from . import det_grad
from ..elementwise import arithmetic as M
from ..dispatch.broadcast import broadcast_shapes
from ..dispatch.primitive import Primitive
from .products import linalg_cross as cross
from .products import matmul
from ..reductions.stats import norm as _norm, register_matrix_norm
from ..dispatch.return_types import return_type
from .checks import (_LOW_PRECISION, LinAlgError, _batch_prefix, _check_float, _check_matrix,  # noqa: F401
                     _first_error, _into, _type_name)  # (importers take the checks from here too)
from .lu import _getrf, into_all as _into_all, lu_factor_ex

__all__ = ["norm", "vector_norm", "matrix_norm", "inv", "det", "solve", "cholesky", "qr", "svd", "svdvals", "eigh",
           "eigvalsh", "eig", "eigvals", "pinv", "slogdet", "cross", "matmul", "cholesky_ex"]



# -- the kernel ----------------------------------------------------------------------------------
def _pinv(a: np.ndarray, atol: float, rtol: float, hermitian: bool) -> np.ndarray:
    """V diag(1/s) U^H over the singular values above max(atol, rtol * largest); with `hermitian`, from the
    eigendecomposition of the lower triangle (as PyTorch: s = |eigenvalues|, U = V sign)."""
    if hermitian:
        w, v = np.linalg.eigh(a, UPLO="L")
        s, u, vh = np.abs(w), v * np.sign(w)[..., None, :], _adjoint(v)
    else:
        u, s, vh = np.linalg.svd(a, full_matrices=False)
    smax = s.max(axis=-1, keepdims=True) if s.shape[-1] else np.zeros(s.shape[:-1] + (1,), s.dtype)
    keep = s > np.maximum(atol, rtol * smax)
    s_inv = np.where(keep, 1 / np.where(keep, s, 1), 0)
    return _adjoint(vh) @ (s_inv[..., None] * _adjoint(u))


def _adjoint(a: np.ndarray) -> np.ndarray:
    return np.conj(np.swapaxes(a, -1, -2))


def _det(a: np.ndarray, log: bool) -> tuple:
    """det (or (sign, log|det|)) from torch's LU: of A^T for a contiguous real A (torch's choice), so a
    determinant is exactly 0 where torch's is (and its gradient takes the same route) wherever tidal's LU
    rounds as torch's (real, order <= 16, see linalg_lu._getrf); NumPy's LAPACK otherwise."""
    if a.dtype.kind != "f" or a.shape[-1] > 16:
        return tuple(np.linalg.slogdet(a)) if log else (np.linalg.det(a),)
    lu, piv, _ = _getrf(np.swapaxes(a, -1, -2) if a.flags.c_contiguous else a)
    diag = np.diagonal(lu, 0, -2, -1)
    swaps = np.count_nonzero(piv != np.arange(1, a.shape[-1] + 1, dtype=piv.dtype), axis=-1)
    sign = np.where(swaps % 2 == 1, -1, 1).astype(a.dtype)
    if not log:
        return (sign * np.prod(diag, axis=-1),)
    with np.errstate(divide="ignore"):
        return sign * np.prod(np.sign(diag), axis=-1), np.sum(np.log(np.abs(diag)), axis=-1)


def _cholesky(a: np.ndarray) -> np.ndarray:
    """NumPy's Cholesky factor, failing as LAPACK's potrf does on a NaN pivot (NumPy returns NaN silently)."""
    L = np.linalg.cholesky(a)
    if np.isnan(np.diagonal(L, 0, -2, -1)).any():
        raise np.linalg.LinAlgError("Matrix is not positive definite")
    return L


def _cholesky_info(a: np.ndarray) -> tuple:
    """(L, info) from the lower triangle; info is the order of the first leading minor that is not positive
    definite (0 when all are), as LAPACK's potrf reports it. Past that column, L is left unfinished."""
    n = a.shape[-1]
    x = a.reshape(-1, n, n)
    L = np.zeros_like(x)
    info = np.zeros(x.shape[0], np.int32)
    with np.errstate(invalid="ignore", divide="ignore"):
        for j in range(n):
            row = np.conj(L[:, j, :j])  # A = L L^H: a complex diagonal is real
            d = np.real(x[:, j, j] - np.einsum("bk,bk->b", L[:, j, :j], row))
            bad = ~(d > 0) & (info == 0)
            info[bad] = j + 1
            L[:, j, j] = np.where(info == 0, np.sqrt(np.where(d > 0, d, 1)), d)
            col = x[:, j + 1:, j] - np.einsum("bik,bk->bi", L[:, j + 1:, :j], row)
            L[:, j + 1:, j] = np.where((info == 0)[:, None], col / np.where(d > 0, L[:, j, j], 1)[:, None], 0)
    return L.reshape(a.shape), info.reshape(a.shape[:-2])


def zeros_if_empty(a: np.ndarray, outs) -> bool:
    """Whether `a` has no elements, the kernel's outputs then zeroed (a matrix kernel's empty batch)."""
    if a.size:
        return False
    for o in outs:
        o[...] = 0
    return True


def _cholesky_ex_kernel(ins, outs, attrs) -> None:
    a = np.asarray(ins[0])
    if zeros_if_empty(a, outs):
        return
    L, info = _cholesky_info(a)  # (attrs[1]: upper, U = L^H)
    outs[0][...] = np.conj(np.swapaxes(L, -1, -2)) if attrs[1] else L
    outs[1][...] = info


# routine name -> fn(inputs, attrs) -> tuple of results, in output order
_ROUTINES = {
    "inv": lambda a, at: (np.linalg.inv(a[0]),),
    "det": lambda a, at: _det(a[0], False),
    "solve": lambda a, at: (np.linalg.solve(a[0], a[1]),),
    "cholesky": lambda a, at: (_adjoint(_cholesky(a[0])) if at[1] else _cholesky(a[0]),),  # (at[1]: upper, U = L^H)
    "qr": lambda a, at: tuple(np.linalg.qr(a[0], mode=at[1])) if at[1] != "r" else (np.empty(0),
                                                                                   np.linalg.qr(a[0], mode="r")),
    "svd": lambda a, at: tuple(np.linalg.svd(a[0], full_matrices=at[1])),
    "svdvals": lambda a, at: (np.linalg.svd(a[0], compute_uv=False),),
    "eigh": lambda a, at: tuple(np.linalg.eigh(a[0], UPLO=at[1])),
    "eigvalsh": lambda a, at: (np.linalg.eigvalsh(a[0], UPLO=at[1]),),
    "eig": lambda a, at: tuple(np.linalg.eig(a[0])),
    "eigvals": lambda a, at: (np.linalg.eigvals(a[0]),),
    "pinv": lambda a, at: (_pinv(a[0], at[1], at[2], at[3]),),
    "slogdet": lambda a, at: _det(a[0], True),
}


def _linalg_kernel(ins, outs, attrs) -> None:
    # (an empty output comes from an empty input, but for qr's mode 'r' Q, which the routine gives empty)
    if any(x.size == 0 for x in ins):
        for k, o in enumerate(outs):  # empty batches or 0x0 matrices: LAPACK has nothing to do
            o[...] = 1 if attrs[0] == "det" or (attrs[0] == "slogdet" and k == 0) else 0
        return
    try:
        results = _ROUTINES[attrs[0]](ins, attrs)
    except np.linalg.LinAlgError as exc:  # (no convergence: NaN or inf in the matrix) torch's LinAlgError, as torch
        if "SVD" in str(exc):
            raise LinAlgError("linalg.svd: The algorithm failed to converge because the input matrix contained "
                              "non-finite values.") from None
        if "Eigenvalues" in str(exc):
            name = "eig" if attrs[0] in ("eig", "eigvals") else "eigh"  # (eigvalsh and pinv's hermitian path too)
            raise LinAlgError(f"linalg.{name}: The algorithm failed to converge because the input matrix is "
                              "ill-conditioned or has too many repeated eigenvalues.") from None
        raise LinAlgError(f"linalg.{attrs[0]}: {exc}") from None
    for o, r in zip(outs, results):
        o[...] = r


def _mT(x: Tensor) -> Tensor:
    return x.transpose(-2, -1)


_mH = grads.mH  # the conjugate transpose: the backward formulas' transpose


# -- inverse, determinant, solve (with gradients) ------------------------------------------------
def _inv_backward(node, g):
    (a_inv,) = node.saved_tensors
    return (-matmul(matmul(_mH(a_inv), g), _mH(a_inv)),)


def inv(A: Tensor, *, out: Tensor | None = None) -> Tensor:
    """The inverse of each square matrix of `A`."""
    _check_matrix("inv", A)
    return _into(reported_at_the_call("inv", A, lambda: INV((A,), ("inv",))), out)


def det(A: Tensor, *, out: Tensor | None = None) -> Tensor:
    """The determinant of each square matrix of `A`."""
    _check_matrix("det", A)
    return _into(DET((A,), ("det",)), out)


def _solve_backward(node, g):
    (A, X) = node.saved_tensors
    grad_b = solve(_mH(A), g)
    return (-matmul(grad_b, _mH(X)), grad_b)


def solve(A: Tensor, B: Tensor, *, left: bool = True, out: Tensor | None = None) -> Tensor:
    """X with A X = B (or X A = B when left=False); B is a vector (batch) when it has one dim fewer than A."""
    _check_matrix("solve", A)
    _check_float("solve", B, "B")
    if A.dtype is not B.dtype:
        raise RuntimeError(f"linalg.solve: Expected A and B to have the same dtype, but found A of type "
                           f"{_type_name(A.dtype)} and B of type {_type_name(B.dtype)} instead")
    if not left:  # X A = B  <=>  A^T X^T = B^T
        return _into(_mT(solve(_mT(A), _mT(B))), out)
    vector = B.ndim == 1 or (B.ndim == A.ndim - 1 and B.shape == A.shape[:-1])
    Bm = B.unsqueeze(-1) if vector else B
    if Bm.shape[-2] != A.shape[-1]:
        raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation AX = B "
                           f"({A.shape[-2]}x{A.shape[-1]} and {Bm.shape[-2]}x{Bm.shape[-1]})")
    batch = tuple(broadcast_shapes(tuple(A.shape[:-2]), tuple(Bm.shape[:-2])))
    A_b, B_b = A.expand(*batch, *A.shape[-2:]), Bm.expand(*batch, *Bm.shape[-2:])
    X = reported_at_the_call("solve", A_b, lambda: SOLVE((A_b, B_b), ("solve",)))
    return _into(X.squeeze(-1) if vector else X, out)


def reported_at_the_call(op: str, A: Tensor, compute) -> Tensor:
    """`compute()`'s result, waited for: torch raises for a singular (for cholesky: not positive-definite) matrix at
    the call, as its LinAlgError, so a program's `except RuntimeError` around the call sees it. If the kernel
    failed (at the launch in sync mode, else at the wait), name the first failing matrix and pivot (or minor) as
    torch does, from an LU (Cholesky) factorization's info."""
    try:
        result = compute()
        result._sync()
        return result
    except RuntimeError:
        positive_definite = op.endswith("cholesky")
        err = _first_error(cholesky_ex(A).info if positive_definite else lu_factor_ex(A).info)
        if err is None:
            raise  # another op's failure, reported at this sync point
        where = _batch_prefix(A, err[0])
        if positive_definite:
            message = (f"{op}: {where}The factorization could not be completed because the input is not "
                       f"positive-definite (the leading minor of order {err[1]} is not positive-definite).")
        elif op == "solve":
            message = f"torch.linalg.solve: {where}The solver failed because the input matrix is singular."
        else:
            message = (f"linalg.{op}: {where}The diagonal element {err[1]} is zero, the inversion could not be "
                       "completed because the input matrix is singular.")
        raise LinAlgError(message) from None


# -- decompositions -------------------------------------------------------------------------------
def cholesky(A: Tensor, *, upper: bool = False, out: Tensor | None = None) -> Tensor:
    """The lower (or upper) Cholesky factor of each symmetric positive-definite matrix."""
    _check_matrix("cholesky", A)
    L = reported_at_the_call("linalg.cholesky", A, lambda: CHOLESKY((A,), ("cholesky", bool(upper)),
                                                                    "linalg_cholesky_ex"))
    return _into(L, out)


def cholesky_ex(A: Tensor, *, upper: bool = False, check_errors: bool = False, out=None) -> tuple:
    """(L, info): the Cholesky factor and, per matrix, the order of the first minor not positive definite."""
    _check_matrix("cholesky", A)
    L, info = CHOLESKY_EX((A,), ("cholesky", bool(upper)))
    if check_errors:
        err = _first_error(info)
        if err is not None:
            raise LinAlgError(f"linalg.cholesky_ex: {_batch_prefix(A, err[0])}The factorization could not be "
                               f"completed because the input is not positive-definite (the leading minor of "
                               f"order {err[1]} is not positive-definite).")
    return _into_all(return_type("linalg_cholesky_ex", ("L", "info"))(L, info), out)


def qr(A: Tensor, mode: str = "reduced", *, out=None) -> tuple:
    """(Q, R) of each matrix; mode 'reduced', 'complete' or 'r' (Q empty)."""
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of 'reduced' (default), "
                           "'r', or 'complete'")
    _check_matrix("qr", A, square=False)
    # mode 'r' (and 'complete' with m > n) raise at backward, as in PyTorch
    return return_type("linalg_qr", ("Q", "R"))(*QR((A,), ("qr", mode)))


def _qr_shapes(inputs: tuple, attrs: tuple) -> list:
    A, mode = inputs[0], attrs[1]
    *batch, m, n = A.shape
    k = min(m, n)
    if mode == "r":  # Q is empty
        return [((0,), A.dtype), ((*batch, k, n), A.dtype)]
    q_cols, r_rows = (m, m) if mode == "complete" else (k, k)
    return [((*batch, m, q_cols), A.dtype), ((*batch, r_rows, n), A.dtype)]


def svd(A: Tensor, full_matrices: bool = True, *, driver=None, out=None) -> tuple:
    """(U, S, Vh) of each matrix, singular values descending."""
    _check_matrix("svd", A, square=False)
    return return_type("linalg_svd", ("U", "S", "Vh"))(*SVD((A,), ("svd", bool(full_matrices))))


def _svd_shapes(inputs: tuple, attrs: tuple) -> list:
    A, full_matrices = inputs[0], attrs[1]
    *batch, m, n = A.shape
    k = min(m, n)
    u_cols, v_rows = (m, n) if full_matrices else (k, k)
    return [((*batch, m, u_cols), A.dtype), ((*batch, k), A.dtype.to_real()), ((*batch, v_rows, n), A.dtype)]


def svdvals(A: Tensor, *, driver=None, out=None) -> Tensor:
    """The singular values of each matrix, descending."""
    _check_matrix("svdvals", A, square=False)
    if needs_grad((A,)):  # U and Vh are the node's hidden outputs: the gradient and its own gradient need them
        return SVDVALS_GRAD((A,), ("svd", False), "linalg_svd")[1]
    return SVDVALS((A,), ("svdvals",))


def _check_uplo(op: str, UPLO: str) -> str:
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    return UPLO


def eigh(A: Tensor, UPLO: str = "L", *, out=None) -> tuple:
    """(eigenvalues ascending, eigenvectors as columns) of each symmetric matrix."""
    _check_matrix("eigh", A)
    w, V = EIGH((A,), ("eigh", _check_uplo("eigh", UPLO)))
    return return_type("linalg_eigh", ("eigenvalues", "eigenvectors"))(w, V)


def eigvalsh(A: Tensor, UPLO: str = "L", *, out=None) -> Tensor:
    """The eigenvalues (ascending) of each symmetric matrix."""
    _check_matrix("eigvalsh", A)
    if needs_grad((A,)):  # the eigenvectors are the node's hidden output
        return eigh(A, UPLO)[0]
    return EIGVALSH((A,), ("eigvalsh", _check_uplo("eigvalsh", UPLO)))


def _eig_dtype(A: Tensor) -> dt.dtype:
    """The complex dtype of eig's results, with torch's errors for the dtypes it refuses."""
    if isinstance(A, Tensor) and not A.dtype.is_floating_point:
        raise RuntimeError(f"Unknown Complex ScalarType for {_type_name(A.dtype)}")
    if isinstance(A, Tensor) and A.dtype in _LOW_PRECISION:
        raise NotImplementedError(f"\"linalg_eig_out_cpu\" not implemented for '{_LOW_PRECISION[A.dtype]}'")
    return A.dtype if A.dtype.is_complex else A.dtype.to_complex()


def eig(A: Tensor, *, out=None) -> tuple:
    """(eigenvalues, eigenvectors as unit columns) of each square matrix, complex for every input dtype."""
    _eig_dtype(A)
    _check_matrix("eig", A)
    w, V = EIG((A,), ("eig",))
    return return_type("linalg_eig", ("eigenvalues", "eigenvectors"))(w, V)


def eigvals(A: Tensor, *, out=None) -> Tensor:
    """The eigenvalues of each square matrix (complex)."""
    _eig_dtype(A)
    _check_matrix("eigvals", A)
    if needs_grad((A,)):  # the eigenvectors are the node's hidden output
        return eig(A)[0]
    return EIGVALS((A,), ("eigvals",))


def pinv(A: Tensor, *, atol=None, rtol=None, hermitian: bool = False, out=None) -> Tensor:
    """The Moore-Penrose pseudo-inverse; singular values below max(atol, rtol * largest) count as zero.
    With `hermitian`, A is taken as symmetric and only its lower triangle is read."""
    if isinstance(A, Tensor) and A.ndim < 2:  # torch's words for pinv (its check names the argument's type)
        raise RuntimeError(f"linalg.pinv({_type_name(A.dtype)}{{{list(A.shape)}}}): expected a tensor with 2 or more "
                           "dimensions of float, double, cfloat or cdouble types")
    _check_matrix("pinv", A, square=False)
    if hermitian:
        _check_matrix("eigh", A)
    if rtol is None:  # torch's default: eps * max(m, n) unless only atol is given
        rtol = 0.0 if atol is not None and atol > 0 else np.finfo(A.dtype.np).eps * max(A.shape[-2:])
    return PINV((A,), ("pinv", float(atol or 0.0), float(rtol), bool(hermitian)))


def slogdet(A: Tensor, *, out=None) -> tuple:
    """(sign, log|det|) of each square matrix; log|det| is -inf for a singular one."""
    _check_matrix("slogdet", A)
    sign, logabs = SLOGDET((A,), ("slogdet",))
    return return_type("linalg_slogdet", ("sign", "logabsdet"))(sign, logabs)


# -- norms ---------------------------------------------------------------------------------------
def vector_norm(x: Tensor, ord=2, dim=None, keepdim: bool = False, *, dtype: dt.dtype | None = None,
                out=None) -> Tensor:
    """The vector ord-norm over `dim` (all elements when None)."""
    if isinstance(ord, str) or not isinstance(ord, numbers.Number) or isinstance(ord, bool):
        raise TypeError(f"linalg_vector_norm(): argument 'ord' must be Number, not {type(ord).__name__}")
    return _norm(x, float(ord), dim, keepdim, dtype)


def matrix_norm(A: Tensor, ord="fro", dim=(-2, -1), keepdim: bool = False, *, dtype: dt.dtype | None = None,
                out=None) -> Tensor:
    """The matrix norm ('fro', 'nuc', inf, -inf, 1, -1, 2, -2) over the two dims `dim`."""
    if ord not in ("fro", "nuc", math.inf, -math.inf, 1, -1, 2, -2):
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    if A.ndim < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 dimensions.")
    d0, d1 = (d % A.ndim for d in dim)
    if ord == "fro":
        return _norm(A, 2.0, (d0, d1), keepdim, dtype)
    if dtype is not None:
        A = A.to(dtype)
    _check_float("matrix_norm", A)
    if ord in ("nuc", 2, -2):
        s = svdvals(A.movedim((d0, d1), (-2, -1)))
        res = s.sum(-1) if ord == "nuc" else _max_min(s, -1, ord > 0, False)
        if keepdim:
            for d in sorted((d0, d1)):
                res = res.unsqueeze(d)
        return res
    # inf / 1: the largest (smallest for -inf / -1) absolute row / column sum; PyTorch's order of dims
    sum_dim, pick_dim = (d1, d0) if abs(ord) == math.inf else (d0, d1)
    sums = M.abs(A).sum(sum_dim, keepdim=keepdim)
    if not keepdim and sum_dim < pick_dim:
        pick_dim -= 1
    return _max_min(sums, pick_dim, ord > 0, keepdim)


def _max_min(x: Tensor, dim: int, largest: bool, keepdim: bool) -> Tensor:
    """amax (amin) of non-negative values over `dim`; as PyTorch, the largest of none is 0 (a constant, outside
    the graph), the smallest an error."""
    if largest and x.shape[dim] == 0:
        return x.detach().sum(dim, keepdim=keepdim)
    return x.amax(dim, keepdim=keepdim) if largest else x.amin(dim, keepdim=keepdim)


def norm(A: Tensor, ord=None, dim=None, keepdim: bool = False, *, dtype: dt.dtype | None = None,
         out=None) -> Tensor:
    """vector_norm or matrix_norm, chosen by `ord` and `dim` as torch.linalg.norm does."""
    if dim is not None:
        dims = (dim,) if isinstance(dim, int) else tuple(dim)
        if len(dims) == 2:
            return matrix_norm(A, "fro" if ord is None else ord, dims, keepdim, dtype=dtype)
        return vector_norm(A, 2 if ord is None else ord, dims, keepdim, dtype=dtype)
    if ord is None:
        return vector_norm(A, 2, None, keepdim, dtype=dtype)
    if A.ndim == 2:
        return matrix_norm(A, ord, (-2, -1), keepdim, dtype=dtype)
    if A.ndim == 1:
        return vector_norm(A, ord, None, keepdim, dtype=dtype)
    raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. Got {A.ndim}D.")


grads.register(solve=solve, inv=inv, det=det, svd=svd)  # the ops its (and det_grad's) backward formulas call
register_matrix_norm(matrix_norm)  # torch.norm(p='nuc'), in ops/reductions/stats.py


# -- the records: the LAPACK kernel per op (attrs: (routine, its arguments...)), shape rule and backward ----------
def _complex_of(A: Tensor) -> dt.dtype:
    return A.dtype if A.dtype.is_complex else A.dtype.to_complex()


def _record(name: str, shapes, backward=None, saved: tuple = (), node_attrs=None, grad_outputs=None) -> Primitive:
    """A record running the LAPACK kernel; its node reads no attrs unless `node_attrs` says what."""
    return Primitive(name, shapes, cpu=_linalg_kernel, cuda=None, backward=backward, saved=saved,
                     node_attrs=node_attrs or (lambda inputs, attrs: None), grad_outputs=grad_outputs)


_same = lambda inputs, attrs: [(inputs[0].shape, inputs[0].dtype)]  # noqa: E731
_batch = lambda inputs, attrs: [(inputs[0].shape[:-2], inputs[0].dtype)]  # noqa: E731
_eigenvalues = lambda inputs, attrs: [(inputs[0].shape[:-1], inputs[0].dtype.to_real())]  # noqa: E731
_upper_or_mode = lambda inputs, attrs: attrs[1]  # noqa: E731

INV = _record("linalg_inv_ex", _same, _inv_backward, ("output0",))
DET = _record("linalg_det", _batch, det_grad.det_backward, ("input0", "output0"))
SOLVE = _record("linalg_solve_ex", lambda inputs, attrs: [(inputs[1].shape, inputs[0].dtype)], _solve_backward,
                ("input0", "output0"))
CHOLESKY = _record("linalg_cholesky", _same, grads.cholesky_backward, ("output0",), _upper_or_mode)
QR = _record("linalg_qr", _qr_shapes, grads.qr_backward, ("output0", "output1"), _upper_or_mode)
SVD = _record("linalg_svd", _svd_shapes, grads.svd_backward, ("output0", "output1", "output2"), _upper_or_mode)
# svdvals under grad (torch's _linalg_svd with compute_uv): the full SVD, its node on (S, U, Vh), U and Vh hidden
# (the gradient reads them); its name is the one linalg.svdvals' database entry reaches
SVDVALS_GRAD = _record("svdvals", _svd_shapes, grads.svdvals_backward, ("output0", "output1", "output2"),
                       grad_outputs=(1, 0, 2))
SVDVALS = _record("linalg_svdvals", lambda inputs, attrs: [(inputs[0].shape[:-2] + (min(inputs[0].shape[-2:]),),
                                                            inputs[0].dtype.to_real())])
EIGH = _record("linalg_eigh", lambda inputs, attrs: _eigenvalues(inputs, attrs) + _same(inputs, attrs),
               grads.eigh_backward, ("output0", "output1"))
EIGVALSH = _record("linalg_eigvalsh", _eigenvalues)
EIG = _record("linalg_eig", lambda inputs, attrs: [(inputs[0].shape[:-1], _complex_of(inputs[0])),
                                                   (inputs[0].shape, _complex_of(inputs[0]))],
              grads.eig_backward, ("output0", "output1"), lambda inputs, attrs: inputs[0].dtype.is_complex)
EIGVALS = _record("linalg_eigvals", lambda inputs, attrs: [(inputs[0].shape[:-1], _complex_of(inputs[0]))])
PINV = _record("linalg_pinv", lambda inputs, attrs: [(inputs[0].shape[:-2] + inputs[0].shape[-1:-3:-1],
                                                      inputs[0].dtype)], grads.pinv_backward, ("input0", "output0"))
SLOGDET = _record("linalg_slogdet", lambda inputs, attrs: [(inputs[0].shape[:-2], inputs[0].dtype),
                                                           (inputs[0].shape[:-2], inputs[0].dtype.to_real())],
                  det_grad.slogdet_backward, ("input0", "output0"))
# cholesky_ex: the factor and, per matrix, the order of the first leading minor not positive definite (its own
# kernel: the factorization goes on past a failed pivot, where the one above raises)
CHOLESKY_EX = Primitive("linalg_cholesky_ex", lambda inputs, attrs: [(inputs[0].shape, inputs[0].dtype),
                                                                    (inputs[0].shape[:-2], dt.int32)],
                        cpu=_cholesky_ex_kernel, cuda=None, backward=grads.cholesky_backward, saved=("output0",),
                        node_attrs=lambda inputs, attrs: attrs[1], grad_outputs=(0,))  # (the node is on L alone)

"""LU factorization and triangular solves: linalg.lu_factor(_ex), lu, lu_solve, solve_triangular, and the
older torch names built on them (lu, lu_unpack, lu_solve, triangular_solve, cholesky_solve, cholesky_inverse).

One CPU kernel (the cpu= of the records at the bottom) runs NumPy routines over stacks of matrices: getrf (LU
with LAPACK's partial pivoting, so pivots equal PyTorch's), the permutation matrix of a pivot vector, and
triangular substitution. Gradients are written in tidal ops (double backward works): solve_triangular has its own,
lu and lu_factor PyTorch's linalg_lu_backward, and lu_solve, lu_unpack and the Cholesky solves are
composites of those.
"""
from __future__ import annotations

import warnings

import numpy as np

from ...tensor import Tensor
from ...tensor import dtype as dt
from ..dispatch.broadcast import broadcast_shapes
from ..factories.creation import eye, zeros
from ..dispatch.primitive import Primitive
from .products import matmul
from .checks import _check_float, _check_matrix, _into, _type_name
from ..dispatch.return_types import return_type
from ..movement.shape_ops import cat
from ..dispatch.user_frame import user_stacklevel

# the torch.linalg names; tidal.ops.linalg.torch_names gives the torch.* ones (lu, lu_solve, ...) their old signatures
__all__ = ["lu_factor", "lu_factor_ex", "lu", "lu_solve", "solve_triangular"]


# -- the kernel ----------------------------------------------------------------------------------
def _getrf(a: np.ndarray) -> tuple:
    """Right-looking LU with partial pivoting (the first largest |a| in the column, as LAPACK's i?amax),
    batched over the leading dims: (LU, 1-based int32 pivots, int32 info).

    For real matrices of up to 16 rows and columns the rounding is MKL's (torch's CPU LAPACK), so the
    factors are torch's bit for bit and a pivot is exactly zero where torch's is: the column below the
    pivot is scaled by its reciprocal, except in the next-to-last column of a square matrix of order
    up to 4, which is divided (found by comparing with torch.linalg.lu_factor_ex, square and not).
    """
    *batch, m, n = a.shape
    k = min(m, n)
    mkl_small = a.dtype.kind == "f" and max(m, n) <= 16
    lu = a.reshape(-1, m, n).copy()
    b = lu.shape[0]
    piv = np.zeros((b, k), np.int32)
    info = np.zeros(b, np.int32)
    rows = np.arange(b)
    with np.errstate(divide="ignore", invalid="ignore"):
        for j in range(k):
            col = lu[:, j:, j]
            # complex: LAPACK's izamax ranks by |re| + |im|, not the modulus
            p = j + np.argmax(np.abs(col.real) + np.abs(col.imag) if np.iscomplexobj(col) else np.abs(col), axis=1)
            piv[:, j] = p + 1
            top = lu[rows, j].copy()
            lu[rows, j] = lu[rows, p]
            lu[rows, p] = top
            pivot = lu[:, j, j]
            zero = pivot == 0
            info[(info == 0) & zero] = j + 1
            if mkl_small and not (m == n <= 4 and j == n - 2):
                lu[:, j + 1:, j] *= (1 / np.where(zero, 1, pivot))[:, None]
            else:
                lu[:, j + 1:, j] /= np.where(zero, 1, pivot)[:, None]
            lu[:, j + 1:, j + 1:] -= lu[:, j + 1:, j, None] * lu[:, j, None, j + 1:]
    return lu.reshape(a.shape), piv.reshape(*batch, k), info.reshape(batch)


def _permutation(piv: np.ndarray, m: int, dtype) -> np.ndarray:
    """P with A = P L U, from LAPACK's sequence of row swaps."""
    *batch, k = piv.shape
    flat = piv.reshape(-1, k).astype(np.int64) - 1
    perm = np.tile(np.arange(m), (flat.shape[0], 1))
    rows = np.arange(flat.shape[0])
    for j in range(k):
        top = perm[:, j].copy()
        perm[:, j] = perm[rows, flat[:, j]]
        perm[rows, flat[:, j]] = top
    P = np.zeros((flat.shape[0], m, m), dtype)
    P[rows[:, None], perm, np.arange(m)[None, :]] = 1
    return P.reshape(*batch, m, m)


def _trsm(a: np.ndarray, b: np.ndarray, upper: bool, unit: bool) -> np.ndarray:
    """X with A X = B for triangular A, by substitution (a zero diagonal gives inf/nan, as LAPACK's trtrs)."""
    n = a.shape[-1]
    x = np.array(b, dtype=np.result_type(a, b), copy=True)
    order = range(n - 1, -1, -1) if upper else range(n)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for i in order:
            done = slice(i + 1, n) if upper else slice(0, i)
            if done.stop - done.start > 0:
                x[..., i, :] -= np.einsum("...j,...jr->...r", a[..., i, done], x[..., done, :])
            if not unit:
                x[..., i, :] /= a[..., i, i, None]
    return x


def _lu_kernel(ins, outs, attrs) -> None:
    routine = attrs[0]
    if any(x.size == 0 for x in ins) or outs[0].size == 0:  # no matrix, or empty ones: pivots 1..k, info 0
        if routine == "getrf":
            outs[1][...] = np.arange(1, outs[1].shape[-1] + 1, dtype=np.int32)
            outs[2][...] = 0
        elif routine in ("perm", "lu") and outs[0].size:  # no pivots for m rows: the identity (lu: P; L, U empty)
            outs[0][...] = np.eye(outs[0].shape[-1], dtype=outs[0].dtype)
        return
    if routine == "getrf":
        results = _getrf(np.asarray(ins[0]))
    elif routine == "lu":  # (P, L with unit diagonal, U) of A = P L U: m x m, m x k and k x n, k = min(m, n)
        lu, piv, _ = _getrf(np.asarray(ins[0]))
        m, k = lu.shape[-2], piv.shape[-1]
        results = (_permutation(piv, m, outs[0].dtype), np.tril(lu[..., :, :k], -1) + np.eye(m, k, dtype=lu.dtype),
                   np.triu(lu[..., :k, :]))
    elif routine == "perm":
        results = (_permutation(np.asarray(ins[0]), attrs[1], outs[0].dtype),)
    elif routine == "potrs":  # X with A X = B, A = L L^H (U^H U when attrs[1]: upper) from its factor
        f = np.asarray(ins[-1])  # (cholesky_inverse: the factor alone, B the identity)
        b = np.asarray(ins[0]) if len(ins) == 2 else np.broadcast_to(np.eye(f.shape[-1], dtype=f.dtype), f.shape)
        fh = np.conj(np.swapaxes(f, -1, -2))
        lower, upper = (fh, f) if attrs[1] else (f, fh)
        results = (_trsm(upper, _trsm(lower, b, False, False), True, False),)  # (the two substitutions)
    else:
        results = (_trsm(np.asarray(ins[0]), np.asarray(ins[1]), attrs[1], attrs[2]),)
    for o, r in zip(outs, results):
        o[...] = r


def into_all(res: tuple, out) -> tuple:
    """`res` (a named tuple) copied into the tensors of `out` when given, returned as that tuple type."""
    if out is None:
        return res
    for o, r in zip(out, res):
        _into(r, o)
    return type(res)(*out)


# -- triangular solve ----------------------------------------------------------------------------
def _mT(x: Tensor) -> Tensor:
    """The conjugate transpose: every transpose here is an adjoint (the plain one for real dtypes)."""
    x = x.transpose(-2, -1)
    return x.conj() if x.dtype.is_complex else x


def _triangle(x: Tensor, upper: bool, unit: bool) -> Tensor:
    if upper:
        return x.triu(1 if unit else 0)
    return x.tril(-1 if unit else 0)


def _trsm_backward(node, g):
    A, X = node.saved_tensors
    upper, unit = node.attrs
    gB = _solve_left(_mT(A), g, not upper, unit)
    return (_triangle(-matmul(gB, _mT(X)), upper, unit), gB)


def _solve_left(A: Tensor, B: Tensor, upper: bool, unit: bool) -> Tensor:
    batch = tuple(broadcast_shapes(tuple(A.shape[:-2]), tuple(B.shape[:-2])))
    A_b, B_b = A.expand(*batch, *A.shape[-2:]), B.expand(*batch, *B.shape[-2:])
    return SOLVE_TRIANGULAR((A_b, B_b), ("trsm", bool(upper), bool(unit)))


def solve_triangular(A: Tensor, B: Tensor, *, upper: bool, left: bool = True, unitriangular: bool = False,
                     out: Tensor | None = None) -> Tensor:
    """X with A X = B (X A = B when left=False) for triangular A; only A's `upper` or lower triangle is read."""
    if not isinstance(upper, bool):
        raise TypeError(f"linalg_solve_triangular(): argument 'upper' must be bool, not {type(upper).__name__}")
    _check_matrix("solve_triangular", A)
    _check_float("solve_triangular", B, "B")
    if B.ndim < 2:
        raise RuntimeError("linalg.solve_triangular: The input tensor B must have at least 2 dimensions.")
    if A.dtype is not B.dtype:
        raise RuntimeError(f"linalg.solve_triangular: Expected A and B to have the same dtype, but found A of "
                           f"type {_type_name(A.dtype)} and B of type {_type_name(B.dtype)} instead")
    rows = B.shape[-2] if left else B.shape[-1]
    if rows != A.shape[-1]:
        raise RuntimeError(f"linalg.solve_triangular: Incompatible shapes of A and B for the equation "
                           f"{'AX = B' if left else 'XA = B'} ({A.shape[-2]}x{A.shape[-1]} and "
                           f"{B.shape[-2]}x{B.shape[-1]})")
    if left:
        return _into(_solve_left(A, B, upper, unitriangular), out)
    return _into(_mT(_solve_left(_mT(A), _mT(B), not upper, unitriangular)), out)


def triangular_solve(b: Tensor, A: Tensor, upper: bool = True, transpose: bool = False,
                     unitriangular: bool = False, *, out=None) -> tuple:
    """(X, A.clone()) with op(A) X = b, op(A) = A or A^T (the older torch.triangular_solve)."""
    warnings.warn("torch.triangular_solve is deprecated in favor of torch.linalg.solve_triangularand will be removed "
                  "in a future PyTorch release.\ntorch.linalg.solve_triangular has its arguments reversed and does not "
                  "return a copy of one of the inputs.\nX = torch.triangular_solve(B, A).solution\nshould be replaced "
                  "with\nX = torch.linalg.solve_triangular(A, B).", UserWarning, stacklevel=user_stacklevel())
    for name, t in (("b", b), ("A", A)):  # torch's own checks, in its words (not solve_triangular's)
        if t.ndim < 2:
            raise RuntimeError(f"torch.triangular_solve: Expected {name} to have at least 2 dimensions, but it has "
                               f"{t.ndim} dimensions instead")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"A must be batches of square matrices, but they are {A.shape[-2]} by {A.shape[-1]} "
                           "matrices")
    if A.shape[-1] != b.shape[-2]:
        raise RuntimeError(f"Incompatible matrix sizes for triangular_solve: each A matrix is {A.shape[-2]} by "
                           f"{A.shape[-1]} but each b matrix is {b.shape[-2]} by {b.shape[-1]}")
    coef = A.transpose(-2, -1) if transpose else A  # torch's `transpose` does not conjugate
    X = solve_triangular(coef, b, upper=upper != bool(transpose), unitriangular=unitriangular)
    batch = tuple(broadcast_shapes(tuple(A.shape[:-2]), tuple(b.shape[:-2])))
    return into_all(return_type("triangular_solve", ("solution", "cloned_coefficient"))(
        X, A.expand(*batch, *A.shape[-2:]).clone()), out)


def _cholesky_solve_backward(node, g):
    L, X = node.saved_tensors
    upper = node.attrs
    gB = cholesky_solve(g, L, upper)
    common = matmul(gB, _mT(X))
    common = common + _mT(common)
    return (gB, -matmul(L, common) if upper else -matmul(common, L))


def cholesky_solve(input: Tensor, input2: Tensor, upper: bool = False, *, out=None) -> Tensor:
    """X with A X = B (B = input), A = L L^T (= U^T U when `upper`) given its Cholesky factor L = input2."""
    B, L = input, input2
    _check_float("cholesky_solve", B, "input")
    if B.ndim < 2 or L.ndim < 2:
        raise RuntimeError(f"b should have at least 2 dimensions, but has {B.ndim} dimensions instead")
    if B.dtype is not L.dtype:
        raise RuntimeError(f"Expected b and A to have the same dtype, but found b of type {_type_name(B.dtype)} "
                           f"and A of type {_type_name(L.dtype)} instead.")
    batch = tuple(broadcast_shapes(tuple(B.shape[:-2]), tuple(L.shape[:-2])))
    B, L = B.expand(*batch, *B.shape[-2:]), L.expand(*batch, *L.shape[-2:])
    _check_matrix("solve_triangular", L)  # (the errors of the two triangular solves it is)
    if B.shape[-2] != L.shape[-1]:
        raise RuntimeError(f"linalg.solve_triangular: Incompatible shapes of A and B for the equation AX = B "
                           f"({L.shape[-2]}x{L.shape[-1]} and {B.shape[-2]}x{B.shape[-1]})")
    return _into(CHOLESKY_SOLVE((B, L), ("potrs", bool(upper))), out)


def _cholesky_inverse_backward(node, g):
    L, inverse = node.saved_tensors
    common = matmul(inverse, matmul(g + _mT(g), inverse))
    return (-matmul(L, common) if node.attrs else -matmul(common, L),)


def cholesky_inverse(L: Tensor, upper: bool = False, *, out=None) -> Tensor:
    """The inverse of A = L L^T (U^T U when `upper`) from its Cholesky factor."""
    _check_matrix("cholesky_inverse", L)
    return _into(CHOLESKY_INVERSE((L,), ("potrs", bool(upper))), out)


# -- LU ------------------------------------------------------------------------------------------
def _perm(pivots: Tensor, m: int, d: dt.dtype) -> Tensor:
    """The m x m permutation matrices (of dtype `d`) of LAPACK's 1-based `pivots` (no gradient: integers)."""
    return LU_PERMUTATION((pivots,), ("perm", int(m), d))


def _unpack(LU: Tensor) -> tuple:
    """(L with unit diagonal, U) of a packed factor: m x k and k x n, k = min(m, n)."""
    m, n = LU.shape[-2:]
    k = min(m, n)
    L = LU[..., :, :k].tril(-1) + eye(m, k, dtype=LU.dtype, device=LU.device)
    return L, LU[..., :k, :].triu()


def _lu_grad(P: Tensor, L: Tensor, U: Tensor, gL: Tensor | None, gU: Tensor | None) -> Tensor:
    """dA from dL and dU for A = P L U (PyTorch's linalg_lu_backward: square, wide and tall)."""
    m, n = L.shape[-2], U.shape[-1]
    k = min(m, n)
    if m <= n:  # wide (or square): L is m x m, U = [U1 U2]
        U1 = U[..., :, :k]
        gA = matmul(_mT(L), gL) if gL is not None else None
        if gU is not None:
            term = matmul(gU.triu(), _mT(U))
            gA = -term if gA is None else gA - term
        gA = solve_triangular(_mT(U1), gA.tril(-1), upper=False, left=False)
        if gU is not None:
            gA = gA + gU[..., :, :k].triu()
            if n > k:
                gA = cat([gA, gU[..., :, k:]], -1)
        gA = solve_triangular(_mT(L), gA, upper=True, unitriangular=True)
        if gU is None and n > k:
            gA = cat([gA, zeros(*gA.shape[:-1], n - k, dtype=gA.dtype, device=gA.device)], -1)
    else:  # tall: U is n x n, L = [L1; L2]
        L1 = L[..., :k, :]
        gA = matmul(gU, _mT(U)) if gU is not None else None
        if gL is not None:
            term = matmul(_mT(L), gL.tril(-1))
            gA = -term if gA is None else gA - term
        gA = solve_triangular(_mT(L1), gA.triu(), upper=True, unitriangular=True)
        if gL is not None:
            gA = cat([gA + gL[..., :k, :].tril(-1), gL[..., k:, :]], -2)
        gA = solve_triangular(_mT(U), gA, upper=False, left=False)
        if gL is None:
            gA = cat([gA, zeros(*gA.shape[:-2], m - k, n, dtype=gA.dtype, device=gA.device)], -2)
    return matmul(P, gA)


def _lu_backward(node, gL, gU):
    P, L, U = node.saved_tensors
    return (_lu_grad(P, L, U, gL, gU),)


def _lu_factor_backward(node, g):
    P, LU = node.saved_tensors
    L, U = _unpack(LU)
    k = min(LU.shape[-2:])
    return (_lu_grad(P, L, U, g[..., :, :k].tril(-1), g[..., :k, :].triu()),)


def _no_pivot(op: str, pivot: bool) -> None:
    if not pivot:
        raise RuntimeError(f"linalg.{op}: LU without pivoting is not implemented on the CPU")


def _check_lu_input(op: str, A: Tensor) -> None:
    if isinstance(A, Tensor) and not A.dtype.is_floating_point:  # torch's LU kernel has no integer version
        raise NotImplementedError(f"\"lu_cpu\" not implemented for '{_type_name(A.dtype)}'")
    _check_matrix(op, A, square=False)


def lu_factor_ex(A: Tensor, *, pivot: bool = True, check_errors: bool = False, out=None) -> tuple:
    """(LU, pivots, info): the packed LU factorization with partial pivoting; info > 0 marks a zero pivot."""
    _check_lu_input("lu_factor_ex", A)
    _no_pivot("lu_factor", pivot)
    LU, pivots, info = LU_FACTOR((A,), ("getrf",))
    return into_all(return_type("linalg_lu_factor_ex", ("LU", "pivots", "info"))(LU, pivots, info), out)


def lu_factor(A: Tensor, *, pivot: bool = True, out=None) -> tuple:
    """(LU, pivots) as lu_factor_ex; a singular matrix (a zero pivot) is an error."""
    _check_lu_input("lu_factor", A)
    LU, pivots, info = lu_factor_ex(A, pivot=pivot)
    flat = np.asarray(info.numpy()).reshape(-1)
    bad = np.flatnonzero(flat > 0)
    if bad.size:
        where = f"(Batch element {bad[0]}): " if A.ndim > 2 else ""
        i = flat[bad[0]]
        raise RuntimeError(f"torch.linalg.lu_factor: {where}U[{i},{i}] is zero and using it on lu_solve would "
                           "result in a division by zero. If you still want to perform the factorization, consider "
                           "calling linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)")
    return into_all(return_type("linalg_lu_factor", ("LU", "pivots"))(LU, pivots), out)


def lu(A: Tensor, *, pivot: bool = True, out=None) -> tuple:
    """(P, L, U) with A = P L U: P a permutation, L unit lower (m x k), U upper (k x n)."""
    _check_matrix("lu", A, square=False)
    _no_pivot("lu_factor", pivot)
    P, L, U = LU_RECORD((A,), ("lu",))
    return into_all(return_type("linalg_lu", ("P", "L", "U"))(P, L, U), out)


def lu_unpack(LU_data: Tensor, LU_pivots: Tensor, unpack_data: bool = True, unpack_pivots: bool = True, *,
              out=None) -> tuple:
    """(P, L, U) from lu_factor's packed output; the parts not asked for are empty."""
    _check_matrix("lu_unpack", LU_data, square=False)
    if LU_pivots.dtype is not dt.int32:
        raise RuntimeError("torch.lu_unpack: LU_pivots is expected to be a contiguous tensor of torch.int32 "
                           f"dtype. Note: this function is intended to be used with the output produced by "
                           f"torch.linalg.lu_factor")
    empty = LU_data.new_empty((0,))
    L, U = _unpack(LU_data) if unpack_data else (empty, empty)
    P = _perm(LU_pivots, LU_data.shape[-2], LU_data.dtype) if unpack_pivots else empty
    return into_all(return_type("lu_unpack", ("P", "L", "U"))(P, L, U), out)


def _lu_solve_left(LU: Tensor, pivots: Tensor, B: Tensor, adjoint: bool) -> Tensor:
    L, U = _unpack(LU)
    P = _perm(pivots, LU.shape[-2], LU.dtype)
    if adjoint:  # A^T X = B with A^T = U^T L^T P^T
        Y = solve_triangular(_mT(U), B, upper=False)
        return matmul(P, solve_triangular(_mT(L), Y, upper=True, unitriangular=True))
    Y = solve_triangular(L, matmul(_mT(P), B), upper=False, unitriangular=True)
    return solve_triangular(U, Y, upper=True)


def lu_solve(LU: Tensor, pivots: Tensor, B: Tensor, *, left: bool = True, adjoint: bool = False,
                    out=None) -> Tensor:
    """X with A X = B (A^T X = B with `adjoint`; X A = B when left=False) from lu_factor's output."""
    _check_matrix("lu_solve", LU)
    _check_float("lu_solve", B, "B")
    if B.ndim < 2:
        raise RuntimeError("linalg.lu_solve: The input tensor B must have at least 2 dimensions.")
    if LU.dtype is not B.dtype:
        raise RuntimeError(f"linalg.lu_solve: Expected LU and B to have the same dtype, but found LU of type "
                           f"{_type_name(LU.dtype)} and B of type {_type_name(B.dtype)} instead")
    if pivots.dtype is not dt.int32:
        raise RuntimeError("linalg.lu_solve: pivots should be a Tensor of scalar type int32")
    n = LU.shape[-1]
    if (B.shape[-2] if left else B.shape[-1]) != n:
        side = "rows" if left else "columns"
        raise RuntimeError(f"linalg.lu_solve: Number of {side} of B must match the order of LU. Got "
                           f"{B.shape[-2] if left else B.shape[-1]} and {n}")
    if left:
        return _into(_lu_solve_left(LU, pivots, B, adjoint), out)
    return _into(_mT(_lu_solve_left(LU, pivots, _mT(B), not adjoint)), out)


# the triangular solve's record (the LU kernel's "trsm" routine; attrs ("trsm", upper, unit))
SOLVE_TRIANGULAR = Primitive("linalg_solve_triangular", lambda inputs, attrs: [(inputs[1].shape, inputs[0].dtype)],
                             cpu=_lu_kernel, cuda=None, backward=_trsm_backward, saved=("input0", "output0"),
                             node_attrs=lambda inputs, attrs: attrs[1:])


def _lu_shapes(inputs: tuple, attrs) -> list:
    A = inputs[0]
    *batch, m, n = A.shape
    k = min(m, n)
    return [((*batch, m, m), A.dtype), ((*batch, m, k), A.dtype), ((*batch, k, n), A.dtype)]


# linalg.lu's record (the kernel's "lu" routine: the factorization unpacked), its node on (L, U)
LU_RECORD = Primitive("linalg_lu", _lu_shapes, cpu=_lu_kernel, cuda=None, backward=_lu_backward,
                      saved=("output0", "output1", "output2"), node_attrs=lambda inputs, attrs: None,
                      grad_outputs=(1, 2))


# the permutation of lu_factor's pivots (the kernel's "perm" routine; attrs ("perm", m, dtype)): lu_unpack's P,
# lu_solve's and lu_factor_ex's gradient's; no node
LU_PERMUTATION = Primitive("lu_permutation", lambda inputs, attrs: [((*inputs[0].shape[:-1], attrs[1], attrs[1]),
                                                                     attrs[2])], cpu=_lu_kernel, cuda=None)


# cholesky_solve and cholesky_inverse (the kernel's "potrs" routine: two substitutions; attrs ("potrs", upper)):
# PyTorch's gradients, the factor taken as a full matrix
CHOLESKY_SOLVE = Primitive("cholesky_solve", lambda inputs, attrs: [(inputs[0].shape, inputs[1].dtype)],
                           cpu=_lu_kernel, cuda=None, backward=_cholesky_solve_backward, saved=("input1", "output0"),
                           node_attrs=lambda inputs, attrs: attrs[1])
CHOLESKY_INVERSE = Primitive("cholesky_inverse", lambda inputs, attrs: [(inputs[0].shape, inputs[0].dtype)],
                             cpu=_lu_kernel, cuda=None, backward=_cholesky_inverse_backward,
                             saved=("input0", "output0"), node_attrs=lambda inputs, attrs: attrs[1])


def _getrf_shapes(inputs: tuple, attrs) -> list:
    A = inputs[0]
    *batch, m, n = A.shape
    return [(A.shape, A.dtype), ((*batch, min(m, n)), dt.int32), (tuple(batch), dt.int32)]


def _lu_factor_saved(inputs: tuple, outs) -> tuple:
    """The permutation of the pivots (not an output) and the packed factor: what the gradient reads."""
    A = inputs[0]
    return _perm(outs[1], A.shape[-2], A.dtype), outs[0]


# linalg.lu_factor_ex's record (the kernel's getrf routine), its node on LU alone
LU_FACTOR = Primitive("linalg_lu_factor_ex", _getrf_shapes, cpu=_lu_kernel, cuda=None, backward=_lu_factor_backward,
                      saved=_lu_factor_saved, node_attrs=lambda inputs, attrs: None, grad_outputs=(0,))

"""LDL^T factorization of symmetric matrices: linalg.ldl_factor, ldl_factor_ex and ldl_solve.

One CPU kernel (the records linalg_ldl_factor_ex and linalg_ldl_solve share it) runs LAPACK's unblocked
Bunch-Kaufman algorithm (sytf2, lower triangle, as PyTorch's CPU path uses for matrices up to LAPACK's block
size) in NumPy, so the packed LD and the pivots (LAPACK's format: k > 0 a 1x1 block with rows k and pivots[k]
swapped, two equal negative entries a 2x2 block) equal PyTorch's; and the matching solve (sytrs). PyTorch
defines no gradient for these either: their outputs require grad as torch's do, and a backward through them
raises torch's error.
"""
from __future__ import annotations

import numpy as np

from ...autograd.graph import Node
from ...tensor import Tensor
from ...tensor import dtype as dt
from ..dispatch.broadcast import broadcast_shapes
from ..dispatch.primitive import Primitive
from .checks import LinAlgError, _batch_prefix, _check_float, _check_matrix, _first_error, _into, _type_name
from .lu import into_all
from ..dispatch.return_types import return_type

__all__ = ["ldl_factor", "ldl_factor_ex", "ldl_solve"]

_ALPHA = (1 + 17 ** 0.5) / 8  # Bunch-Kaufman's growth bound


# -- the kernel ----------------------------------------------------------------------------------
def _cabs1(x):
    """LAPACK's cheap modulus |re| + |im| (the plain one for real numbers), which its pivot choices use."""
    return np.abs(np.real(x)) + np.abs(np.imag(x))


def _sytf2(a: np.ndarray, herm: bool = False) -> tuple:
    """(LD, 1-based pivots, info) of one symmetric (or, with `herm`, Hermitian: zhetf2) matrix, reading its
    lower triangle (0-based indices)."""
    n = a.shape[0]
    a = np.tril(a).astype(a.dtype, copy=True)
    cj = np.conj if herm else (lambda x: x)
    diag = np.real if herm else (lambda x: x)  # a Hermitian matrix's diagonal is read as real
    piv = np.zeros(n, np.int32)
    info = 0
    k = 0
    while k < n:
        kstep = 1
        absakk = _cabs1(diag(a[k, k]))
        imax = k + 1 + int(np.argmax(_cabs1(a[k + 1:, k]))) if k < n - 1 else k
        colmax = _cabs1(a[imax, k]) if k < n - 1 else 0.0
        if max(absakk, colmax) == 0 or np.isnan(absakk):
            info = info or k + 1
            kp = k
        elif absakk >= _ALPHA * colmax:
            kp = k
        else:
            rowmax = _cabs1(a[imax, k:imax]).max()
            if imax < n - 1:
                rowmax = max(rowmax, _cabs1(a[imax + 1:, imax]).max())
            if absakk >= _ALPHA * colmax * (colmax / rowmax):
                kp = k
            elif _cabs1(diag(a[imax, imax])) >= _ALPHA * rowmax:
                kp = imax
            else:
                kp, kstep = imax, 2
        kk = k + kstep - 1
        if kp != kk:  # swap rows and columns kk and kp of the trailing lower triangle
            tail = a[kp + 1:, kk].copy()
            a[kp + 1:, kk] = a[kp + 1:, kp]
            a[kp + 1:, kp] = tail
            mid = a[kk + 1:kp, kk].copy()
            a[kk + 1:kp, kk] = cj(a[kp, kk + 1:kp])
            a[kp, kk + 1:kp] = cj(mid)
            a[kp, kk] = cj(a[kp, kk])
            a[kk, kk], a[kp, kp] = diag(a[kp, kp]), diag(a[kk, kk])
            if kstep == 2:
                a[k + 1, k], a[kp, k] = a[kp, k], a[k + 1, k]
        a[k, k] = diag(a[k, k])
        if kstep == 1:
            if k < n - 1 and a[k, k] != 0:
                x = a[k + 1:, k].copy()
                a[k + 1:, k + 1:] -= np.tril(np.outer(x, cj(x))) / a[k, k]
                a[k + 1:, k] = x / a[k, k]
            piv[k] = kp + 1
        else:
            a[k + 1, k + 1] = diag(a[k + 1, k + 1])
            if k < n - 2:
                d21 = a[k + 1, k]
                scale = np.abs(d21) if herm else d21  # zhetf2 scales by |d21|, dsytf2 by d21 itself
                d11, d22 = a[k + 1, k + 1] / scale, a[k, k] / scale
                d21 = d21 / scale if herm else 1
                d = (1 / (d11 * d22 - 1)) / scale
                wk = d * (d11 * a[k + 2:, k] - d21 * a[k + 2:, k + 1])
                wkp1 = d * (d22 * a[k + 2:, k + 1] - cj(d21) * a[k + 2:, k])
                a[k + 2:, k + 2:] -= np.tril(np.outer(a[k + 2:, k], cj(wk)) + np.outer(a[k + 2:, k + 1], cj(wkp1)))
                a[k + 2:, k], a[k + 2:, k + 1] = wk, wkp1
                if herm:
                    idx = np.arange(k + 2, n)
                    a[idx, idx] = np.real(a[idx, idx])
            piv[k] = piv[k + 1] = -(kp + 1)
        k += kstep
    return a, piv, info


def _sytrs(ld: np.ndarray, piv: np.ndarray, b: np.ndarray, herm: bool = False) -> np.ndarray:
    """X with A X = B for one factored A: L D L^T (L D L^H with `herm`) with the pivots' swaps."""
    n = ld.shape[0]
    cj = np.conj if herm else (lambda x: x)
    x = b.astype(np.result_type(ld, b), copy=True)
    k = 0
    while k < n:  # L D Y = P B
        if piv[k] > 0:
            kp = piv[k] - 1
            x[[k, kp]] = x[[kp, k]]
            x[k + 1:] -= np.outer(ld[k + 1:, k], x[k])
            x[k] /= np.real(ld[k, k]) if herm else ld[k, k]
            k += 1
        else:
            kp = -piv[k] - 1
            x[[k + 1, kp]] = x[[kp, k + 1]]
            x[k + 2:] -= np.outer(ld[k + 2:, k], x[k]) + np.outer(ld[k + 2:, k + 1], x[k + 1])
            off = ld[k + 1, k]
            akm1, ak = ld[k, k] / cj(off), ld[k + 1, k + 1] / off
            denom = akm1 * ak - 1
            bkm1, bk = x[k] / cj(off), x[k + 1] / off
            x[k], x[k + 1] = (ak * bkm1 - bk) / denom, (akm1 * bk - bkm1) / denom
            k += 2
    k = n - 1
    while k >= 0:  # L^T P^T X = Y (L^H with `herm`)
        if piv[k] > 0:
            x[k] -= cj(ld[k + 1:, k]) @ x[k + 1:]
            kp = piv[k] - 1
            x[[k, kp]] = x[[kp, k]]
            k -= 1
        else:
            x[k] -= cj(ld[k + 1:, k]) @ x[k + 1:]
            x[k - 1] -= cj(ld[k + 1:, k - 1]) @ x[k + 1:]
            kp = -piv[k] - 1
            x[[k, kp]] = x[[kp, k]]
            k -= 2
    return x


def _ldl_kernel(ins, outs, attrs) -> None:
    a = np.asarray(ins[0])
    n = a.shape[-1]
    if outs[0].size == 0:  # no matrix, or 0 x 0 ones: nothing to factor
        for o in outs[1:]:
            o[...] = 0
        return
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        herm = attrs[1] and a.dtype.kind == "c"
        if attrs[0] == "sytrf":
            parts = [_sytf2(m, herm) for m in a.reshape(-1, n, n)]
            for k, o in enumerate(outs):
                o[...] = np.array([p[k] for p in parts]).reshape(o.shape) if parts else 0
            return
        b = np.asarray(ins[2])
        piv = np.asarray(ins[1]).reshape(-1, n)
        flat_b = b.reshape(-1, *b.shape[-2:])
        res = [_sytrs(ld, p, x, herm) for ld, p, x in zip(a.reshape(-1, n, n), piv, flat_b)]
        outs[0][...] = np.array(res).reshape(outs[0].shape) if res else 0


# -- the functions -------------------------------------------------------------------------------
_NotImplemented = type("NotImplemented", (Node,), {"__slots__": ()})  # torch's grad_fn class for such ops


def record_no_derivative(inputs: tuple, outputs: tuple, error: Exception, name: str | type = _NotImplemented) -> None:
    """Link `outputs` to `inputs` through a node whose backward raises `error`: torch's outputs of an op
    without a derivative require grad, and only a backward through them fails."""
    NO_DERIVATIVE.attach(inputs, outputs, error, name)


def _raise_no_derivative(node, *grads):
    raise node.attrs


# the node of an op torch defines no derivative for (its class NotImplemented, or the op's through node=), attrs the
# error its backward raises: ldl_solve's on the unexpanded (LD, B), lobpcg's with B, set_'s
NO_DERIVATIVE = Primitive("no_derivative", None, cpu=None, backward=_raise_no_derivative)


def ldl_factor_ex(A: Tensor, *, hermitian: bool = False, check_errors: bool = False, out=None) -> tuple:
    """(LD, pivots, info): the compact LDL^T factorization of each symmetric matrix (lower triangle read);
    info = k > 0 when D[k-1, k-1] is exactly zero."""
    _check_matrix("ldl_factor_ex", A)
    LD, pivots, info = LDL_FACTOR((A,), ("sytrf", bool(hermitian)), _NotImplemented)
    if check_errors:
        _raise_singular("ldl_factor_ex", A, info)
    return into_all(return_type("linalg_ldl_factor_ex", ("LD", "pivots", "info"))(LD, pivots, info), out)


def _raise_singular(op: str, A: Tensor, info: Tensor) -> None:
    err = _first_error(info)
    if err is not None:
        raise LinAlgError(f"torch.linalg.{op}: {_batch_prefix(A, err[0])}The factorization could not be "
                          f"completed because D[{err[1] - 1},{err[1] - 1}] is exactly zero.")


def ldl_factor(A: Tensor, *, hermitian: bool = False, out=None) -> tuple:
    """(LD, pivots) as ldl_factor_ex; an exactly singular D is an error."""
    LD, pivots, info = ldl_factor_ex(A, hermitian=hermitian)
    _raise_singular("ldl_factor", A, info)
    return into_all(return_type("linalg_ldl_factor", ("LD", "pivots"))(LD, pivots), out)


def ldl_solve(LD: Tensor, pivots: Tensor, B: Tensor, *, hermitian: bool = False, out=None) -> Tensor:
    """X with A X = B, A given by ldl_factor's (LD, pivots)."""
    _check_matrix("ldl_solve", LD)
    _check_float("ldl_solve", B, "B")
    if B.ndim < 2:
        raise RuntimeError("torch.linalg.ldl_solve: Expected B to have at least 2 dimensions, but it has "
                           f"{B.ndim} dimensions instead")
    if LD.dtype is not B.dtype:
        raise RuntimeError(f"torch.linalg.ldl_solve: Expected LD and B to have the same dtype, but found LD of "
                           f"type {_type_name(LD.dtype)} and B of type {_type_name(B.dtype)} instead")
    if pivots.dtype is not dt.int32:
        raise RuntimeError("torch.linalg.ldl_solve: Expected pivots to be integers. Got Long" if pivots.dtype is
                           dt.int64 else "torch.linalg.ldl_solve: Expected pivots to be integers.")
    if B.shape[-2] != LD.shape[-1]:
        raise RuntimeError(f"torch.linalg.ldl_solve: Incompatible shapes of LD and B for the equation LD X = B "
                           f"({LD.shape[-2]}x{LD.shape[-1]} and {B.shape[-2]}x{B.shape[-1]})")
    batch = tuple(broadcast_shapes(tuple(LD.shape[:-2]), tuple(B.shape[:-2])))
    LD_b = LD.expand(*batch, *LD.shape[-2:])
    piv_b = pivots.expand(*batch, pivots.shape[-1])
    B_b = B.expand(*batch, *B.shape[-2:])
    X = LDL_SOLVE((LD_b, piv_b, B_b), ("sytrs", bool(hermitian)))  # (its node links the unexpanded LD and B)
    record_no_derivative((LD, B), (X,), RuntimeError("derivative for aten::linalg_ldl_solve is not implemented"))
    return _into(X, out)


def _ldl_factor_backward(node, *grads):
    raise RuntimeError("derivative for aten::linalg_ldl_factor_ex is not implemented")


# ldl_factor_ex's record (the kernel's sytrf routine): a NotImplemented node on LD alone, as torch's
LDL_FACTOR = Primitive("linalg_ldl_factor_ex", lambda inputs, attrs: [(inputs[0].shape, inputs[0].dtype),
                                                                     (inputs[0].shape[:-1], dt.int32),
                                                                     (inputs[0].shape[:-2], dt.int32)],
                       cpu=_ldl_kernel, cuda=None, backward=_ldl_factor_backward, grad_outputs=(0,),
                       node_attrs=lambda inputs, attrs: None)
# ldl_solve's record (the kernel's sytrs routine, on the broadcast LD, pivots and B): X, B's shape; no node of its own
LDL_SOLVE = Primitive("linalg_ldl_solve", lambda inputs, attrs: [(inputs[2].shape, inputs[2].dtype)], cpu=_ldl_kernel,
                      cuda=None)

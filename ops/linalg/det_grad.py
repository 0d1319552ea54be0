"""Gradients of det and slogdet as torch 2.13 computes them, singular matrices included.

det (torch's linalg_det_backward): the gradient is grad * conj(det) * A^{-H}.
  - A plain backward solves with A's LU, a zero pivot nudged to eps: where det is exactly 0 the
    right-hand side is 0 and so is the gradient; elsewhere it is det * A^{-H}. Here: the inverse of
    A, with the identity standing in for the matrices whose det is 0 (their gradient is then 0).
  - Under create_graph torch picks per matrix: |det| < 100 eps goes through the SVD (the adjugate
    U diag(prod of the other singular values) Vh, scaled by det(U) det(Vh)), which is finite and
    differentiable at singular matrices; the rest solve A^H G = det * grad I. Which matrices are
    small is read on the host (a sync, as torch's masked_fmap indexes by the mask).
slogdet (torch's slogdet_backward): g * A^{-H}, solved with A's LU. At a singular matrix the plain
  backward gives torch's inf/nan (a substitution through a zero pivot); under create_graph torch's
  linalg.solve refuses the matrix, so this raises its LinAlgError.
"""
from __future__ import annotations

import numpy as np

from ...autograd.grad_mode import is_grad_enabled, no_grad
from ...tensor import Tensor
from ...tensor import dtype as dt
from . import backward as grads
from .checks import LinAlgError, _batch_prefix, _first_error
from .lu import lu_factor_ex, lu_solve
from ..elementwise import arithmetic as M
from ..complex_numbers import tensors as C
from ..factories.creation import eye, ones, tensor, zeros_like
from ..indexing.index_ops import index_select
from .products import matmul
from ..movement.shape_ops import cat

_mH = grads.mH


def _diagonal_matrix(scale: Tensor, n: int) -> Tensor:
    """scale[..., None, None] * I: the right-hand side torch solves against."""
    return scale.unsqueeze(-1).unsqueeze(-1) * eye(n, dtype=scale.dtype, device=scale.device)


def _prod_others(grad: Tensor, s: Tensor) -> Tensor:
    """torch's prod_safe_zeros_backward over the last dim: grad * (product of the other entries), with
    exclusive running products from both ends (no division, so zeros are safe)."""
    n = s.shape[-1]
    if n == 1:
        return grad.expand(*s.shape)
    one = ones(*s.shape[:-1], 1, dtype=s.dtype, device=s.device)
    before = cat([one, s.narrow(-1, 0, n - 1)], -1).cumprod(-1)
    after = cat([one, s.narrow(-1, 1, n - 1).flip(-1)], -1).cumprod(-1).flip(-1)
    return grad * grads.conj(before * after)


def _singular(A: Tensor, g: Tensor) -> Tensor:
    """The adjugate route: grad * conj(det U det Vh) U diag(prod_{j != i} s_j) Vh."""
    det, svd = grads.linalg("det"), grads.linalg("svd")
    U, S, Vh = svd(A)
    alpha = grads.conj(det(U) * det(Vh)) * g
    D = _prod_others(alpha.unsqueeze(-1), S)
    return matmul(U * D.unsqueeze(-2), Vh)


def _nonsingular(A: Tensor, scale: Tensor) -> Tensor:
    solve = grads.linalg("solve")
    return solve(_mH(A), _diagonal_matrix(scale, A.shape[-1]))


def _by_mask(mask: np.ndarray, A: Tensor, g: Tensor, scale: Tensor) -> Tensor:
    """Each matrix through `_singular` (mask) or `_nonsingular`, reassembled in batch order."""
    if A.ndim == 2:
        return _singular(A, g) if bool(mask) else _nonsingular(A, scale)
    n = A.shape[-1]
    flat_A, flat_g, flat_scale = A.reshape(-1, n, n), g.reshape(-1), scale.reshape(-1)
    picked = [np.flatnonzero(mask.reshape(-1)), np.flatnonzero(~mask.reshape(-1))]
    parts = []
    for rows, route in zip(picked, (_singular, _nonsingular)):
        if rows.size:
            at = tensor(rows, device=A.device)
            parts.append(route(index_select(flat_A, 0, at),
                               index_select(flat_g if route is _singular else flat_scale, 0, at)))
    out = cat(parts, 0) if len(parts) > 1 else parts[0]
    back = tensor(np.argsort(np.concatenate(picked), kind="stable"), device=A.device)
    return index_select(out, 0, back).reshape(*A.shape)


def det_backward(node, g):
    """torch's linalg_det_backward (see the module's note)."""
    inv = grads.linalg("inv")
    A, d = node.saved_tensors
    if A.numel() == 0:
        return (zeros_like(A),)
    scale = g * grads.conj(d)
    if not is_grad_enabled():
        zero = M.eq(d, 0).unsqueeze(-1).unsqueeze(-1)
        safe = M.where(zero, eye(A.shape[-1], dtype=A.dtype, device=A.device), A)
        return (scale.unsqueeze(-1).unsqueeze(-1) * _mH(inv(safe)),)
    eps = float(np.finfo(A.dtype.to_real().np).eps)
    with no_grad():
        small = np.asarray(M.lt(M.abs(d), 100.0 * eps).numpy())
    return (_by_mask(small, A, g, scale),)


def slogdet_backward(node, g_sign, g_logabs):
    """torch's slogdet_backward: (g_logabs - i Im(conj(g_sign) sign)) A^{-H} (see the module's note)."""
    inv, solve = grads.linalg("inv"), grads.linalg("solve")
    A, sign = node.saved_tensors
    g = g_logabs
    if A.dtype.is_complex and g_sign is not None:  # torch's: g_logabs - i Im(conj(g_sign) sign)
        turn = C.imag(grads.conj(g_sign) * sign)
        turn = C.complex(turn * 0, -turn)
        g = turn if g is None else g + turn
    if g is None:  # a real sign is piecewise constant: no gradient at all, as in PyTorch
        return (None,)
    if A.numel() == 0:
        return (zeros_like(A),)
    with no_grad():
        singular = bool(M.eq(sign, 0).any())
    if not singular:
        if is_grad_enabled():
            return (solve(_mH(A), _diagonal_matrix(g.to(A.dtype), A.shape[-1])),)
        return (g.unsqueeze(-1).unsqueeze(-1) * _mH(inv(A)),)
    if is_grad_enabled():  # torch's linalg.solve refuses a singular matrix
        index = _first_error(M.eq(sign, 0).to(dt.int32))[0]
        raise LinAlgError(f"torch.linalg.solve: {_batch_prefix(A, index)}The solver failed because the input "
                          "matrix is singular.")
    # torch: the LU of A^T for a real matrix (of A for a complex one), substituted through its zero pivot
    real = not A.dtype.is_complex
    LU, pivots, _ = lu_factor_ex(_mH(A) if real else A)
    return (lu_solve(LU, pivots, _diagonal_matrix(g.to(A.dtype), A.shape[-1]), adjoint=not real),)

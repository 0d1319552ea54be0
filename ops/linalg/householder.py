"""Householder QR in LAPACK's compact form: torch.geqrf and torch.ormqr (orgqr is
linalg.householder_product, in ops/linalg/derived.py).

geqrf runs one CPU kernel, "linalg_geqrf": LAPACK's geqr2 in NumPy (reflectors H_j = I - tau_j v_j v_j^T
with beta = -sign(alpha) |x| as larfg chooses them), so the output agrees with PyTorch's entry by entry;
PyTorch defines no gradient for it (a backward through it raises torch's error). ormqr applies the reflectors one by one with tidal ops, so it is
differentiable in all three inputs.
"""
from __future__ import annotations

import numpy as np

from ...autograd.graph import needs_grad
from ...tensor import Tensor
from ..elementwise import arithmetic as M
from ..factories.creation import ones_like, zeros
from ..dispatch.primitive import Primitive
from .products import matmul
from .lu import into_all
from .checks import _check_float, _check_matrix, _into
from ..dispatch.return_types import return_type
from ..movement.shape_ops import cat

__all__ = ["geqrf", "ormqr"]


def _geqr2(a: np.ndarray) -> tuple:
    """(reflectors below the diagonal with R on and above it, tau) for a stack of m x n matrices."""
    *batch, m, n = a.shape
    r = a.reshape(-1, m, n).astype(a.dtype, copy=True)
    tau = np.zeros((r.shape[0], min(m, n)), a.dtype)
    with np.errstate(divide="ignore", invalid="ignore"):
        for j in range(min(m, n)):
            alpha = r[:, j, j].copy()
            xnorm = np.linalg.norm(r[:, j + 1:, j], axis=-1)
            # a zero column below a real diagonal entry: H_j = I, tau_j = 0 (zlarfg: beta real, tau complex)
            active = (xnorm != 0) | (np.imag(alpha) != 0)
            beta = -np.copysign(np.hypot(np.abs(alpha), xnorm), np.real(alpha))
            t = np.where(active, (beta - alpha) / beta, 0)
            scale = np.where(active, 1 / (alpha - beta), 1)
            r[:, j + 1:, j] *= scale[:, None]
            r[:, j, j] = np.where(active, beta, alpha)
            tau[:, j] = t
            v = np.concatenate([np.ones((r.shape[0], 1), a.dtype), r[:, j + 1:, j]], axis=1)
            w = np.einsum("bi,bik->bk", np.conj(v), r[:, j:, j + 1:])  # H_j^H applied from the left
            r[:, j:, j + 1:] -= np.conj(t)[:, None, None] * v[:, :, None] * w[:, None, :]
    return r.reshape(a.shape), tau.reshape(*batch, min(m, n))


def _geqrf_kernel(ins, outs, attrs) -> None:
    if outs[0].size == 0:
        return
    for o, r in zip(outs, _geqr2(np.asarray(ins[0]))):
        o[...] = r


def _geqrf_shapes(inputs: tuple, attrs) -> list:
    x = inputs[0]
    *batch, m, n = x.shape
    return [(x.shape, x.dtype), ((*batch, min(m, n)), x.dtype)]


def _geqrf_backward(node, *grads):
    raise NotImplementedError("the derivative for 'geqrf' is not implemented.")


def geqrf(input: Tensor, *, out=None) -> tuple:
    """(a, tau): the QR factorization in LAPACK's compact form (R on and above the diagonal, the Householder
    vectors below it); linalg.householder_product(a, tau) gives Q."""
    _check_matrix("geqrf", input, square=False)
    *batch, m, n = input.shape
    if input.dtype.is_complex and needs_grad((input,)):
        raise RuntimeError("geqrf does not support automatic differentiation for outputs with complex dtype.")
    a, tau = GEQRF((input,))
    return into_all(return_type("geqrf", ("a", "tau"))(a, tau), out)


def ormqr(input: Tensor, input2: Tensor, input3: Tensor, left: bool = True, transpose: bool = False, *,
          out=None) -> Tensor:
    """op(Q) C (or C op(Q) when left=False), C = input3, Q = H_1 ... H_k from geqrf's (input, tau = input2),
    H_i = I - tau_i v_i v_i^H, op(Q) = Q^H with `transpose` (torch's argument names)."""
    tau, other = input2, input3
    _check_matrix("ormqr", input, square=False)
    _check_float("ormqr", other, "other")
    if input.dtype is not other.dtype or input.dtype is not tau.dtype:
        raise RuntimeError(f"torch.ormqr: Expected input and other to have the same dtype, but other has dtype "
                           f"{other.dtype} and input has dtype {input.dtype}")
    m, k = input.shape[-2], tau.shape[-1]
    along = other.shape[-2] if left else other.shape[-1]
    if along != m:
        raise RuntimeError(f"torch.ormqr: other.shape[{-2 if left else -1}] must be equal to input.shape[-2]")
    side = -2 if left else -1
    if k != min(other.shape[side], input.shape[-1]):
        raise RuntimeError(f"torch.ormqr: tau.shape[-1] must be equal to min(other.shape[{side}], input.shape[-1])")
    batch = tuple(input.shape[:-2])
    order = range(k - 1, -1, -1) if left != bool(transpose) else range(k)
    C = other
    for i in order:
        v = cat([zeros(*batch, i, dtype=input.dtype, device=input.device), ones_like(input[..., i, i:i + 1]),
                 input[..., i + 1:, i]], -1)
        t = tau[..., i, None, None]
        t, vh = (M.conj(t) if transpose else t), M.conj(v)  # H^H = I - conj(tau) v v^H (conj: itself if real)
        if left:  # H C = C - tau v (v^H C)
            C = C - (t * v.unsqueeze(-1)) * matmul(vh.unsqueeze(-2), C)
        else:  # C H = C - tau (C v) v^H
            C = C - matmul(C, v.unsqueeze(-1)) * (t * vh.unsqueeze(-2))
    return _into(C if C is not other else other.clone(), out)


# geqrf's record: its outputs require grad as torch's do, and only a backward through them fails
GEQRF = Primitive("geqrf", _geqrf_shapes, cpu=_geqrf_kernel, cuda=None, backward=_geqrf_backward,
                  node_attrs=lambda inputs, attrs: None)

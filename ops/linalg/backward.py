"""Backward formulas of the decompositions in `tidal.linalg`: svd, svdvals, eigh, eigvalsh, qr, cholesky, pinv.

Each is written in tidal ops on the decomposition's own outputs (saved with their history), so a second
backward differentiates the formula again, as in PyTorch. Real matrices only: the gradients of U and V
in svd and of V in eigh are well defined only for losses that do not depend on the sign of each vector
(PyTorch's gauge rule); repeated singular values or eigenvalues give inf/nan, as in PyTorch.
Complex matrices use the same formulas with conjugate transposes (`mH`); for complex svd the loss must
not depend on the phase of each singular vector pair, which PyTorch checks and tidal does not.
"""
from __future__ import annotations

from ...tensor import Tensor
from ..factories.creation import zeros_like
from .products import matmul
from ..movement.shape_ops import cat


def conj(x: Tensor) -> Tensor:
    """The conjugate of a complex tensor (a differentiable copy); x itself for real ones."""
    return x.conj() if x.dtype.is_complex else x


def mH(x: Tensor) -> Tensor:
    """The conjugate transpose of the last two dims (the transpose, a view, for real dtypes)."""
    return conj(x.transpose(-2, -1))


_mT = mH  # every transpose in these formulas is an adjoint


# The linalg ops the formulas here and in det_grad.py call: decompositions.py's, which declares the records whose
# backwards these are (so it imports this file) and hands the ops over when it loads.
LINALG_OPS = frozenset({"solve", "inv", "det", "svd"})
_ops: dict = {}


def register(**ops) -> None:
    """Take decompositions.py's linalg ops (it calls this once, at import)."""
    unknown = set(ops) - LINALG_OPS
    if unknown:
        raise TypeError(f"linalg backward.register: unknown names {sorted(unknown)}")
    _ops.update(ops)


def linalg(name: str):
    """decompositions.py's op `name`, which it registered when it loaded."""
    return _ops[name]


def _solve(A: Tensor, B: Tensor, left: bool = True) -> Tensor:
    return _ops["solve"](A, B, left=left)


def _skew(x: Tensor) -> Tensor:
    return x - _mT(x)


def _gaps(values: Tensor) -> Tensor:
    """E[i, j] = values[j] - values[i], with 1 on the diagonal (whose quotients are zero anyway)."""
    gaps = values.unsqueeze(-2) - values.unsqueeze(-1)
    return gaps + values.new_ones(values.shape[-1]).diag_embed()


_PHASE = ("{op}: The {what} in the complex case are specified up to multiplication by e^{{i phi}}. The specified "
          "loss function depends on this {quantity}")


def _check_phase(imag_a: Tensor, imag_b, message: str) -> None:
    """torch's refusal of a loss that depends on each complex singular/eigen vector's phase: Im(diag) of the
    projected gradient must vanish (allclose(a, -b) with rtol = atol = 1e-2, as torch; a host sync)."""
    if imag_b is None:
        imag_b = zeros_like(imag_a)
    if not bool(((imag_a + imag_b).abs() <= 1e-2 + 1e-2 * imag_b.abs()).all()):
        raise RuntimeError(message)


# -- singular value decomposition -------------------------------------------------------------------
def svd_grad(U: Tensor, S: Tensor, Vh: Tensor, gU: Tensor | None, gS: Tensor | None,
             gVh: Tensor | None) -> Tensor:
    """Gradient of A = U diag(S) Vh (reduced) for the upstream gradients of U, S and Vh (None: zero)."""
    m, n, k = U.shape[-2], Vh.shape[-1], S.shape[-1]
    if gU is None and gVh is None:
        return matmul(U * gS.unsqueeze(-2), Vh)
    V = _mT(Vh)
    # the core: U^T dA V, off its diagonal, fixes the rotations of U and V (S_j^2 - S_i^2 the gaps)
    core = UhgU = VhgV = None
    if gU is not None:
        UhgU = _skew(matmul(_mT(U), gU))
        core = UhgU * S.unsqueeze(-2)
    if gVh is not None:
        VhgV = _skew(matmul(Vh, _mT(gVh)))
        term = S.unsqueeze(-1) * VhgV
        core = term if core is None else core + term
    if U.dtype.is_complex:  # the phases of U's and V's columns must cancel in the loss
        _check_phase(zeros_like(S) if UhgU is None else UhgU.diagonal(0, -2, -1).imag,
                     None if VhgV is None else VhgV.diagonal(0, -2, -1).imag,
                     _PHASE.format(op="svd_backward", what="singular vectors",
                                   quantity="phase term, making it ill-defined."))
    core = core / _gaps(S * S)
    if gS is not None:
        core = core + gS.diag_embed()
    if gU is not None and U.dtype.is_complex:  # i Im(diag(U^H gU)) / S; the gauge rule cancels core's diagonal
        core = core + (UhgU.diagonal(0, -2, -1) / (2 * S)).diag_embed()
    if m > k and gU is not None:  # gU's part outside span(U) (only when A is tall)
        gU_s = gU / S.unsqueeze(-2)
        return matmul(matmul(U, core) + gU_s - matmul(U, matmul(_mT(U), gU_s)), Vh)
    if n > k and gVh is not None:  # gVh's part outside span(V) (only when A is wide)
        gVh_s = gVh / S.unsqueeze(-1)
        return matmul(U, matmul(core, Vh) + gVh_s - matmul(matmul(gVh_s, V), Vh))
    return matmul(matmul(U, core), Vh)


def svd_backward(node, gU, gS, gVh):
    """Backward of linalg.svd; with full_matrices, the columns past min(m, n) do not reach A (as in PyTorch)."""
    U, S, Vh = node.saved_tensors
    k = S.shape[-1]
    if node.attrs:  # full_matrices
        U, Vh = U.narrow(-1, 0, k), Vh.narrow(-2, 0, k)
        gU = None if gU is None else gU.narrow(-1, 0, k)
        gVh = None if gVh is None else gVh.narrow(-2, 0, k)
    return (svd_grad(U, S, Vh, gU, gS, gVh),)


def svdvals_backward(node, gS, gU, gVh):
    """Backward of linalg.svdvals, whose node also outputs U and Vh (so a second backward reaches them)."""
    U, S, Vh = node.saved_tensors
    return (svd_grad(U, S, Vh, gU, gS, gVh),)


# -- symmetric eigendecomposition ---------------------------------------------------------------------
def eigh_backward(node, gL, gV):
    """Backward of linalg.eigh (and eigvalsh, whose node also outputs V): a symmetric gradient."""
    L, V = node.saved_tensors
    if gV is None:
        inner = gL.diag_embed().to(V.dtype)  # real eigenvalues: a complex V needs a complex product
    else:
        VtgV = matmul(_mT(V), gV)
        if V.dtype.is_complex:
            _check_phase(VtgV.diagonal(0, -2, -1).imag, None, _PHASE.format(
                op="linalg_eigh_backward", what="eigenvectors", quantity="quantity, so it is ill-defined."))
        inner = 0.5 * (VtgV - _mT(VtgV)) / _gaps(L)
        if gL is not None:
            inner = inner + gL.diag_embed()
    return (matmul(V, matmul(inner.to(V.dtype), _mT(V))),)


def eig_backward(node, gL, gV):
    """Backward of linalg.eig (torch's): V^{-H} (diag(gL) + P(V^H gV) / conj(E)) V^H, P removing the part that
    only rescales each unit eigenvector; a real input takes the real part."""
    L, V = node.saved_tensors
    Vh = _mT(V)
    if gV is None:
        gA = _solve(Vh, gL.unsqueeze(-1) * Vh)
    else:
        VhgV = matmul(Vh, gV)
        diag = VhgV.diagonal(0, -2, -1)
        _check_phase(diag.imag, None, _PHASE.format(op="linalg_eig_backward", what="eigenvectors",
                                                    quantity="quantity, so it is ill-defined."))
        inner = (VhgV - matmul(Vh, V * diag.real.unsqueeze(-2))) / _gaps(L.conj())
        if gL is not None:
            inner = inner + (gL - inner.diagonal(0, -2, -1)).diag_embed()
        gA = _solve(Vh, matmul(inner, Vh))
    return (gA if node.attrs else gA.real,)


# -- QR and Cholesky ------------------------------------------------------------------------------------
def _qr_square_grad(Q: Tensor, R: Tensor, gQ: Tensor, gR: Tensor | None) -> Tensor:
    """Gradient of A = QR with R square (m >= n): (gQ + Q copyutl(gR R^H - Q^H gQ)) R^{-H}."""
    B = -matmul(_mT(Q), gQ)
    if gR is not None:
        B = B + matmul(gR, _mT(R))
    # the strict upper triangle mirrored into the lower one, and B's real diagonal (R's diagonal is real)
    upper, diag = B.triu(1), B.diagonal(0, -2, -1)
    sym = upper + _mT(upper) + (diag.real if diag.dtype.is_complex else diag).diag_embed()
    return _mT(_solve(R, _mT(gQ + matmul(Q, sym))))


def qr_backward(node, gQ, gR):
    """Backward of linalg.qr in mode 'reduced' (or 'complete' with rows <= columns)."""
    mode = node.attrs
    if mode == "r":
        raise RuntimeError("The derivative of linalg.qr depends on Q, which is not computed when mode='r'. Please "
                           "use linalg.qr(A, mode='reduced') if you are going to differentiate through linalg.qr.")
    Q, R = node.saved_tensors
    m, n = Q.shape[-2], R.shape[-1]
    if mode == "complete" and m > n:
        raise RuntimeError("The QR decomposition is not differentiable when mode='complete' and nrows > ncols.")
    if gQ is None:
        gQ = zeros_like(Q)
    if m >= n:
        return (_qr_square_grad(Q, R, gQ, gR),)
    # wide: A = Q [R1 | R2]; A's last n - m columns Y = Q R2 only pass gradient through Q
    R1, R2 = R.narrow(-1, 0, m), R.narrow(-1, m, n - m)
    gR1 = None if gR is None else gR.narrow(-1, 0, m)
    if gR is None:
        return (cat([_qr_square_grad(Q, R1, gQ, None), zeros_like(R2)], -1),)
    gR2 = gR.narrow(-1, m, n - m)
    gX = _qr_square_grad(Q, R1, gQ + matmul(matmul(Q, R2), _mT(gR2)), gR1)
    return (cat([gX, matmul(Q, gR2)], -1),)


def cholesky_backward(node, gL):
    """Backward of linalg.cholesky: L^{-H} phi L^{-1}, phi = (X + X's strict lower triangle^H) / 2, X = tril(L^H gL)."""
    (L,) = node.saved_tensors
    if node.attrs:  # upper: the factor is U = L^T
        L, gL = _mT(L), _mT(gL)
    inner = matmul(_mT(L), gL).tril()
    inner = 0.5 * (inner + _mT(inner.tril(-1)))  # Hermitian but for the diagonal's imaginary part, as torch's
    return (_solve(L, _solve(_mT(L), inner), left=False),)


# -- pseudo-inverse -------------------------------------------------------------------------------------
def pinv_backward(node, g):
    """Backward of linalg.pinv (constant rank): -P^T g P^T + (I - AP) g^T P P^T + P^T P g^T (I - PA)."""
    A, P = node.saved_tensors
    Pt, gt = _mT(P), _mT(g)
    grad = -matmul(matmul(Pt, g), Pt)
    grad = grad + matmul(gt - matmul(A, matmul(P, gt)), matmul(P, Pt))
    return (grad + matmul(matmul(Pt, P), gt - matmul(matmul(gt, P), A)),)


__all__ = ["svd_backward", "svdvals_backward", "eigh_backward", "eig_backward", "qr_backward", "cholesky_backward",
           "pinv_backward"]

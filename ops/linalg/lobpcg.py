"""torch.lobpcg: the k largest (or smallest) eigenpairs of a symmetric (generalized) eigenproblem A X = B X E.

torch iterates LOBPCG until the residuals fall under `tol`. tidal's tensors are dense and on the CPU, where
a direct solve is exact and cheap for the sizes such inputs have, so this solves it directly: eigh of A, or
for a given B of L^-1 A L^-T with B = L L^T (eigenvectors mapped back, B-orthonormal as torch's). The
iteration's own settings (X as a start, n, iK, niter, tol, method, tracker, ortho_*) are checked as torch
checks them and otherwise unused: the result is what torch's iteration converges to. Gradients: through
eigh of (A + A^T) / 2 as torch symmetrizes; with B, a backward raises torch's ValueError.
"""
from __future__ import annotations

from ...autograd.grad_mode import no_grad
from ...autograd.graph import needs_grad
from ...tensor import Tensor
from ...tensor import dtype as dt
from ..factories.creation import eye
from .ldl import record_no_derivative
from .lu import solve_triangular
from .namespace import cholesky, eigh

__all__ = ["lobpcg"]
METHODS: dict = {}


def _eigenpairs(A: Tensor, B: Tensor | None) -> tuple:
    """All eigenpairs of A X = B X E, eigenvalues ascending."""
    if B is None:
        return eigh(A)
    L = cholesky(B)
    Linv = solve_triangular(L, eye(L.shape[-1], dtype=L.dtype).expand(*L.shape), upper=False)
    E, Y = eigh(Linv.matmul(A).matmul(Linv.mT))
    return E, Linv.mT.matmul(Y)


def lobpcg(A: Tensor, k: int | None = None, B: Tensor | None = None, X: Tensor | None = None, n: int | None = None,
           iK: Tensor | None = None, niter: int | None = None, tol: float | None = None, largest: bool | None = None,
           method: str | None = None, tracker=None, ortho_iparams: dict | None = None,
           ortho_fparams: dict | None = None, ortho_bparams: dict | None = None) -> tuple:
    """(E, X): the k largest eigenvalues (descending; the smallest ascending with largest=False) of the
    symmetric positive-definite problem A X = B X E (B = I when None), and their B-orthonormal eigenvectors."""
    if A.shape[-2] != A.shape[-1]:
        raise AssertionError(f"A must be square, got shape torch.Size({list(A.shape)})")  # torch's words
    if B is not None and tuple(A.shape) != tuple(B.shape):
        raise AssertionError(f"A and B must have same shape, got torch.Size({list(A.shape)}) vs "
                             f"torch.Size({list(B.shape)})")
    m = A.shape[-1]
    k = (1 if X is None else X.shape[-1]) if k is None else k
    n = (k if n is None else n) if X is None else X.shape[-1]
    if m < 3 * n:
        raise ValueError(f"LOBPCG algorithm is not applicable when the number of A rows (={m}) is smaller than 3 x "
                         f"the number of requested eigenpairs (={n})")
    if X is not None and tuple(X.shape[-2:]) != (m, n):
        raise AssertionError(f"X_ shape mismatch: got {tuple(X.shape[-2:])}, expected {(m, n)}")
    if not A.dtype.is_floating_point:
        A = A.to(dt.get_default_dtype())
    grad = needs_grad((A,)) or (B is not None and needs_grad((B,)))
    A_sym = (A + A.mT) / 2 if grad else A  # torch symmetrizes so that the gradient is symmetric too
    if B is not None:
        B_in = B
        with no_grad():
            E, V = _eigenpairs(A_sym.detach(), ((B + B.mT) / 2).detach())
        if grad:
            record_no_derivative((A, B_in), (E, V), ValueError("lobpcg.backward does not support backward with "
                                                                "B != I yet."))
    else:
        E, V = _eigenpairs(A_sym, None)
    if largest is None or largest:
        return E[..., m - k:].flip(-1), V[..., m - k:].flip(-1)
    return E[..., :k], V[..., :k]

"""Names torch still answers to only with an error or a warning: the linear-algebra functions removed in
1.9 (eig, lstsq, solve, symeig, matrix_rank), Tensor.reinforce and Tensor.volatile. An old script that
calls them gets torch's own explanation of what replaced them, instead of an AttributeError.
"""
from __future__ import annotations

import warnings

from ...tensor import Tensor

__all__ = ["eig", "lstsq", "solve", "symeig", "matrix_rank"]
METHODS: dict = {}

_REMOVED = "This function was deprecated since version 1.9 and is now removed."
_MESSAGES = {
    "eig": f"{_REMOVED} `torch.linalg.eig` returns complex tensors of dtype `cfloat` or `cdouble` rather than real "
           "tensors mimicking complex tensors.\n\nL, _ = torch.eig(A) should be replaced with:\n"
           "L_complex = torch.linalg.eigvals(A)\n\nand\n\nL, V = torch.eig(A, eigenvectors=True) should be "
           "replaced with:\nL_complex, V_complex = torch.linalg.eig(A)",
    "lstsq": f"{_REMOVED} `torch.lstsq` is deprecated in favor of `torch.linalg.lstsq`.\n`torch.linalg.lstsq` has "
             "reversed arguments and does not return the QR decomposition in the returned tuple (although it "
             "returns other information about the problem).\n\nTo get the QR decomposition consider using "
             "`torch.linalg.qr`.\n\nThe returned solution in `torch.lstsq` stored the residuals of the solution in "
             "the last m - n columns of the returned value whenever m > n. In torch.linalg.lstsq, the residuals are "
             "in the field 'residuals' of the returned named tuple.\n\nThe unpacking of the solution, as in\n"
             "X, _ = torch.lstsq(B, A).solution[:A.size(1)]\nshould be replaced with:\n"
             "X = torch.linalg.lstsq(A, B).solution",
    "solve": f"{_REMOVED} `torch.solve` is deprecated in favor of `torch.linalg.solve`. `torch.linalg.solve` has its "
             "arguments reversed and does not return the LU factorization.\n\nTo get the LU factorization see "
             "`torch.lu`, which can be used with `torch.lu_solve` or `torch.lu_unpack`.\n"
             "X = torch.solve(B, A).solution should be replaced with:\nX = torch.linalg.solve(A, B)",
    "symeig": f"{_REMOVED} The default behavior has changed from using the upper triangular portion of the matrix by "
              "default to using the lower triangular portion.\n\nL, _ = torch.symeig(A, upper=upper) should be "
              "replaced with:\nL = torch.linalg.eigvalsh(A, UPLO='U' if upper else 'L')\n\nand\n\n"
              "L, V = torch.symeig(A, eigenvectors=True) should be replaced with:\n"
              "L, V = torch.linalg.eigh(A, UPLO='U' if upper else 'L')",
    "matrix_rank": f"{_REMOVED}\nPlease use the `torch.linalg.matrix_rank` function instead. The parameter "
                   "'symmetric' was renamed in `torch.linalg.matrix_rank()` to 'hermitian'.",
}


def eig(self: Tensor, eigenvectors: bool = False, *, e=None, v=None):
    """Removed in torch 1.9: raises torch's RuntimeError pointing to torch.linalg.eig / eigvals."""
    raise RuntimeError(_MESSAGES["eig"])


def lstsq(input: Tensor, A: Tensor, *, out=None):
    """Removed in torch 1.9: raises torch's RuntimeError pointing to torch.linalg.lstsq."""
    raise RuntimeError(_MESSAGES["lstsq"])


def solve(input: Tensor, A: Tensor, *, out=None):
    """Removed in torch 1.9: raises torch's RuntimeError pointing to torch.linalg.solve."""
    raise RuntimeError(_MESSAGES["solve"])


def symeig(input: Tensor, eigenvectors: bool = False, upper: bool = True, *, out=None):
    """Removed in torch 1.9: raises torch's RuntimeError pointing to torch.linalg.eigh / eigvalsh."""
    raise RuntimeError(_MESSAGES["symeig"])


def matrix_rank(input: Tensor, tol=None, symmetric: bool = False, *, out=None):
    """Removed in torch 1.9: raises torch's RuntimeError pointing to torch.linalg.matrix_rank."""
    raise RuntimeError(_MESSAGES["matrix_rank"])


_REINFORCE = """reinforce() was removed.
Use torch.distributions instead.
See https://pytorch.org/docs/main/distributions.html

Instead of:

probs = policy_network(state)
action = probs.multinomial()
next_state, reward = env.step(action)
action.reinforce(reward)
action.backward()

Use:

probs = policy_network(state)
# NOTE: categorical is equivalent to what used to be called multinomial
m = torch.distributions.Categorical(probs)
action = m.sample()
next_state, reward = env.step(action)
loss = -m.log_prob(action) * reward
loss.backward()
"""


def _reinforce(self: Tensor, reward) -> None:
    """Removed from torch: raises its RuntimeError pointing to torch.distributions."""
    raise RuntimeError(_REINFORCE)


def _get_volatile(self: Tensor) -> bool:
    warnings.warn("volatile was removed (Variable.volatile is always False)", UserWarning, stacklevel=2)
    return False


def _set_volatile(self: Tensor, value) -> None:
    warnings.warn("volatile was removed and now has no effect. Use `with torch.no_grad():` instead.", UserWarning,
                  stacklevel=2)


METHODS.update(eig=eig, lstsq=lstsq, solve=solve, symeig=symeig, reinforce=_reinforce,
               volatile=property(_get_volatile, _set_volatile, doc="Always False, with torch's warning."))

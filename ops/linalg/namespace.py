"""The `tidal.linalg` namespace (torch.linalg): the functions of ops/linalg's files, gathered above them all.

decompositions.py: norms, inverse, determinant, solve and the decompositions (their kernel and records, with the
backward formulas of backward.py and det_grad.py); lu.py: the LU factorization and triangular solves; ldl.py:
LDL^T; derived.py: what is built on them (cond, lstsq, matrix_exp, the _ex variants...); checks.py: torch's argument
checks and LinAlgError.
"""
from __future__ import annotations

from ..dispatch import torch_function as _torch_function
from .checks import LinAlgError, _check_matrix  # noqa: F401 (_check_matrix: torch_names.py takes it from here)
from .decompositions import (cholesky, cholesky_ex, cross, det, eig, eigh, eigvals, eigvalsh, inv, matmul, matrix_norm,
                             norm, pinv, qr, slogdet, solve, svd, svdvals, vector_norm)
from .derived import (cond, diagonal, householder_product, inv_ex, lstsq, matrix_exp, matrix_power, matrix_rank,
                      multi_dot, solve_ex, tensorinv, tensorsolve, vander, vecdot)
from .ldl import ldl_factor, ldl_factor_ex, ldl_solve
from .lu import lu, lu_factor, lu_factor_ex, lu_solve, solve_triangular

__all__ = ["norm", "vector_norm", "matrix_norm", "inv", "det", "solve", "cholesky", "qr", "svd", "svdvals", "eigh",
           "eigvalsh", "eig", "eigvals", "pinv", "slogdet", "cross", "matmul"]
__all__ += ["LinAlgError", "ldl_factor", "ldl_factor_ex", "ldl_solve", "lu", "lu_factor", "lu_factor_ex", "lu_solve",
            "solve_triangular", "cholesky_ex", "cond", "diagonal", "householder_product", "inv_ex", "lstsq",
            "matrix_exp", "matrix_power", "matrix_rank", "multi_dot", "solve_ex", "tensorinv", "tensorsolve", "vander",
            "vecdot"]



for _name in ("det", "inv", "inv_ex", "solve", "cholesky", "cholesky_ex", "qr", "svd", "svdvals", "eigh", "eigvalsh",
              "pinv", "slogdet", "matrix_exp", "matrix_power", "matrix_rank", "cond", "solve_triangular", "lu_factor",
              "vector_norm", "matrix_norm"):
    globals()[_name] = _torch_function.asking_tensor_likes(globals()[_name])

"""torch.backends.mkl: whether MKL runs tidal's math (it does not: NumPy's BLAS/LAPACK and numba do)."""
from __future__ import annotations


def is_available() -> bool:
    """False: tidal does not call MKL."""
    return False

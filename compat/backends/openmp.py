"""torch.backends.openmp: whether kernels run in parallel on the CPU (tidal's do, through numba)."""
from __future__ import annotations


def is_available() -> bool:
    """True: tidal's parallel CPU kernels use numba's threading layer."""
    return True

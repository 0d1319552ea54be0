"""torch.backends.mps: Apple's Metal backend, never available under tidal."""
from __future__ import annotations


def is_available() -> bool:
    """False: tidal has no MPS backend."""
    return False


def is_built() -> bool:
    """False: tidal has no MPS backend."""
    return False

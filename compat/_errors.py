"""torch's error classes for device failures: OutOfMemoryError (also torch.cuda's) and AcceleratorError."""
from __future__ import annotations

__all__ = ["OutOfMemoryError", "AcceleratorError"]


class OutOfMemoryError(RuntimeError):
    """A device ran out of memory (torch.OutOfMemoryError, which torch.cuda.OutOfMemoryError names too)."""


class AcceleratorError(RuntimeError):
    """An accelerator (CUDA) runtime call failed."""

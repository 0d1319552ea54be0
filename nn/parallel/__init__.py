"""tidal.nn.parallel: DistributedDataParallel, as torch.nn.parallel."""
from __future__ import annotations

from . import distributed  # noqa: F401 - importable as a module too
from .distributed import DistributedDataParallel

__all__ = ["DistributedDataParallel"]

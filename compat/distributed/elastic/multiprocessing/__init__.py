"""torch.distributed.elastic.multiprocessing: the error reporting a rank's entry point is wrapped in."""
from __future__ import annotations

from . import errors

__all__ = ["errors"]

"""torch.distributed.nn: collectives that autograd differentiates (torch.distributed.nn.functional)."""
from __future__ import annotations

from . import functional  # noqa: F401
from .functional import all_gather, all_reduce, all_to_all, broadcast, reduce_scatter  # noqa: F401

__all__ = ["functional", "all_gather", "all_reduce", "all_to_all", "broadcast", "reduce_scatter"]

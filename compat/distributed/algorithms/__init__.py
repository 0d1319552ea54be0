"""torch.distributed.algorithms: the join context manager for uneven inputs (join.py, over tidal.comm.join)."""
from .join import Join, JoinHook, Joinable  # noqa: F401

__all__ = ["Join", "JoinHook", "Joinable"]

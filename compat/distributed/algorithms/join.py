"""torch.distributed.algorithms.join: tidal.comm.join under torch's name."""
from ....comm.join import Join, JoinHook, Joinable, _JoinConfig  # noqa: F401

__all__ = ["JoinHook", "Joinable", "Join"]

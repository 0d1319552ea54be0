"""Many processes: the launcher (`python -m tidal.comm.launch`), the ZeroMQ control plane
(`tidal.comm.control`), process groups and collectives. Importing this package does not import
zmq; the first process group does."""
from __future__ import annotations

from .base import CommError, CommTimeoutError, JobAbortedError
from .process_group import *  # noqa: F401,F403
from .process_group import __all__ as _group_all
from .collectives import *  # noqa: F401,F403
from .collectives import __all__ as _collectives_all
from .placement_sbp import Placement, placement, sbp
from .global_tensor import GlobalTensor, distribute_parameters

__all__ = ["CommError", "CommTimeoutError", "JobAbortedError", "Placement", "placement", "sbp", "GlobalTensor",
           "distribute_parameters"] + list(_group_all) + list(_collectives_all)

"""torch.utils.data._utils.worker: what a DataLoader worker knows about itself."""
from __future__ import annotations

from .._worker import WorkerInfo, get_worker_info

__all__ = ["WorkerInfo", "get_worker_info"]

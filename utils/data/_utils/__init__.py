"""torch.utils.data._utils: the DataLoader's helpers under the paths older scripts import them from
(`_utils.collate.default_collate`, `_utils.worker.get_worker_info`)."""
from __future__ import annotations

from . import collate, pin_memory, worker

__all__ = ["collate", "pin_memory", "worker", "MP_STATUS_CHECK_INTERVAL", "ExceptionWrapper"]

MP_STATUS_CHECK_INTERVAL = 5.0  # torch's: seconds between a worker's checks that the main process is alive
from .._worker import ExceptionWrapper  # noqa: E402 - torch re-exports it here

"""torch.distributed.elastic: only what training scripts import from it (`multiprocessing.errors.record`);
tidal's launcher (tidal.comm.launch) plays torchrun's part."""
from __future__ import annotations

from . import multiprocessing

__all__ = ["multiprocessing"]

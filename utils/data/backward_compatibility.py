"""torch.utils.data.backward_compatibility: the deprecated worker_init_fn older scripts still import."""
from __future__ import annotations

import warnings

__all__ = ["worker_init_fn"]


def worker_init_fn(worker_id: int) -> None:
    """Does nothing but warn, as torch's: DataLoader workers need no special initialization any more."""
    warnings.warn("Usage of `backward_compatibility.worker_init_fn` is deprecated as `DataLoader` automatically "
                  "applies sharding in every worker", FutureWarning, stacklevel=2)

"""torch.storage: the storage classes (tidal's are views of a tensor's blob: ops/factories/storage.py)."""
from __future__ import annotations

from ..ops.factories.storage import TypedStorage, UntypedStorage

__all__ = ["TypedStorage", "UntypedStorage"]

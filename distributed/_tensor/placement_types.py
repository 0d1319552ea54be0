"""torch.distributed._tensor.placement_types: the old path of torch.distributed.tensor.placement_types."""
from __future__ import annotations

from ..tensor.placement_types import Partial, Placement, Replicate, Shard

__all__ = ["Placement", "Shard", "Replicate", "Partial"]

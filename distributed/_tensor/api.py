"""torch.distributed._tensor.api: the old path of DTensor, distribute_tensor and distribute_module."""
from __future__ import annotations

from ..tensor import DTensor, distribute_module, distribute_tensor

__all__ = ["DTensor", "distribute_tensor", "distribute_module"]

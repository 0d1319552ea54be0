"""torch.distributed._tensor.api: the old path of DTensor, distribute_tensor, distribute_module and the DTensor
factories."""
from __future__ import annotations

from ..tensor import DTensor, distribute_module, distribute_tensor, empty, full, ones, rand, randn, zeros

__all__ = ["DTensor", "distribute_tensor", "distribute_module", "empty", "full", "ones", "rand", "randn", "zeros"]

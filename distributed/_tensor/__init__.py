"""torch.distributed._tensor: DTensor's old import path, which torch keeps as a shim over torch.distributed.tensor
(pytorch/examples' tensor_parallelism programs import init_device_mesh from torch.distributed._tensor.device_mesh)."""
from __future__ import annotations

from ..tensor import (DeviceMesh, DTensor, Partial, Placement, Replicate, Shard, distribute_module,
                      distribute_tensor, empty, full, init_device_mesh, ones, rand, randn, zeros)

__all__ = ["DeviceMesh", "distribute_module", "distribute_tensor", "DTensor", "empty", "full", "init_device_mesh",
           "ones", "Partial", "Placement", "rand", "randn", "Replicate", "Shard", "zeros"]

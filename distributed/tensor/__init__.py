"""torch.distributed.tensor on tidal: `DTensor` is tidal's global tensor (`tidal.comm.GlobalTensor`),
a `DeviceMesh` its placement, `Shard`/`Replicate`/`Partial` its sbp and `redistribute` its boxing."""
from __future__ import annotations

from ..device_mesh import DeviceMesh, init_device_mesh
from ._api import DTensor, distribute_module, distribute_tensor
from ._factory import empty, full, ones, rand, randn, zeros
from .placement_types import Partial, Placement, Replicate, Shard

__all__ = ["DTensor", "DeviceMesh", "init_device_mesh", "distribute_tensor", "distribute_module", "Shard",
           "Replicate", "Partial", "Placement", "empty", "zeros", "ones", "full", "rand", "randn"]

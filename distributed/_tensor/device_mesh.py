"""torch.distributed._tensor.device_mesh: the old path of torch.distributed.tensor.device_mesh."""
from __future__ import annotations

from ..tensor.device_mesh import DeviceMesh, init_device_mesh

__all__ = ["DeviceMesh", "init_device_mesh"]

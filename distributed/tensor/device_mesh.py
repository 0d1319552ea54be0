"""torch.distributed.tensor.device_mesh: DeviceMesh and init_device_mesh where torch also keeps them (tidal's live
in tidal.distributed.device_mesh)."""
from __future__ import annotations

from ..device_mesh import DeviceMesh, init_device_mesh

__all__ = ["DeviceMesh", "init_device_mesh"]

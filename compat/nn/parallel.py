"""torch.nn.parallel: DataParallel runs its module directly (there are no GPUs to split across);
DistributedDataParallel needs a process group, which tidal does not have yet."""
from __future__ import annotations

from ...nn import Module
from .. import distributed

__all__ = ["DataParallel", "DistributedDataParallel"]


class DataParallel(Module):
    """Wrap `module` as torch.nn.DataParallel does on a machine without GPUs: calls go straight to it."""

    def __init__(self, module: Module, device_ids=None, output_device=None, dim: int = 0) -> None:
        super().__init__()
        self.module = module
        self.device_ids = []
        self.output_device = output_device
        self.dim = dim

    def forward(self, *inputs, **kwargs):
        """Run the wrapped module."""
        return self.module(*inputs, **kwargs)


class DistributedDataParallel(Module):
    """Data-parallel training across processes; needs an initialised process group."""

    def __init__(self, module: Module, device_ids=None, output_device=None, dim: int = 0, broadcast_buffers=None,
                 process_group=None, bucket_cap_mb=None, find_unused_parameters: bool = False, **kwargs) -> None:
        super().__init__()
        if process_group is None and not distributed.is_initialized():
            raise ValueError("Default process group has not been initialized, please make sure to call "
                             "init_process_group.")
        raise NotImplementedError("DistributedDataParallel: tidal has no process groups yet")

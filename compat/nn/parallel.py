"""torch.nn.parallel: DataParallel runs its module directly (there are no GPUs to split across);
DistributedDataParallel and the rest are tidal.nn.parallel's, imported on first use."""
from __future__ import annotations

import importlib

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


class _DistributedDataParallelMissing(Module):
    """Stands in for DistributedDataParallel in a tidal without tidal.nn.parallel."""

    def __init__(self, module: Module, *args, process_group=None, **kwargs) -> None:
        super().__init__()
        if process_group is None and not distributed.is_initialized():
            raise ValueError("Default process group has not been initialized, please make sure to call "
                             "init_process_group.")
        raise NotImplementedError("DistributedDataParallel: this tidal has no tidal.nn.parallel")


def __getattr__(name: str):
    if name.startswith("__"):  # never borrow module machinery
        raise AttributeError(name)
    try:
        source = importlib.import_module("tidal.nn.parallel")  # nn.parallel (it loads comm) on first use
    except ModuleNotFoundError as exc:
        if exc.name != "tidal.nn.parallel":
            raise
        if name == "DistributedDataParallel":
            return _DistributedDataParallelMissing
        source = None
    try:
        return getattr(source, name)
    except AttributeError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None

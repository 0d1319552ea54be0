"""DistributedDataParallel: one model replica per rank, gradients averaged over the ranks during
backward (see _reducer.py for the buckets), parameters and buffers sent from rank 0 so that
every replica starts and stays the same."""
from __future__ import annotations

import contextlib
from typing import Iterator

from ...autograd.grad_mode import is_grad_enabled
from ...comm import collectives as C
from ...comm.process_group import default_group
from ...comm.join import Join, Joinable, _JoinConfig
from ..module import Module
from ._ddp_join import DDPJoinHook, bucket_op, find_common_rank, sync_flag
from ._reducer import DEFAULT_FIRST_BUCKET_BYTES, Reducer, _broadcast_coalesced, bucket_assignment

__all__ = ["DistributedDataParallel"]

_MB = 1024 * 1024
_DEFAULT_BUCKET_CAP_MB = 25


def _verify_same_model(params: list, group) -> None:
    """Every rank must hold parameters of the same shapes (torch's verify_params_across_processes);
    every rank checks every rank, so all of them raise together instead of some waiting forever."""
    everyone = group.control.all_gather_object([list(p.shape) for p in params])
    first = everyone[0]
    for rank, theirs in enumerate(everyone):
        if len(theirs) != len(first):
            raise RuntimeError(f"DDP expects same model across all ranks, but Rank {rank} has {len(theirs)} params, "
                               f"while rank 0 has inconsistent {len(first)} params.")
        for i, (sizes, want) in enumerate(zip(theirs, first)):
            if sizes != want:
                raise RuntimeError(f"[{rank}]: params[{i}] in process {rank} with sizes {sizes} appears not to "
                                   "match sizes of the same param in process 0.")


class DistributedDataParallel(Module, Joinable):
    """Data parallelism over the ranks of `process_group`: wraps `module` (as `.module`); each
    backward averages the gradients over the ranks, bucket by bucket while backward still runs.
    Joinable: under `join()` ranks may run different numbers of iterations (_ddp_join.py)."""

    def __init__(self, module: Module, device_ids=None, output_device=None, dim: int = 0,
                 broadcast_buffers: bool = True, init_sync: bool = True, process_group=None,
                 bucket_cap_mb: float | None = None, find_unused_parameters: bool = False,
                 check_reduction: bool = False, gradient_as_bucket_view: bool = False, static_graph: bool = False,
                 device_mesh=None, mixed_precision=None):
        super().__init__()
        if device_mesh is not None or mixed_precision is not None:
            raise NotImplementedError("DistributedDataParallel: device_mesh and mixed_precision are not supported "
                                      "by tidal")
        params = [p for _, p in module.named_parameters() if p.requires_grad]
        if not params:
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't have any parameter "
                               "that requires a gradient.")
        devices = {p.device for p in module.parameters()}
        if (device_ids or output_device is not None) and all(d.type == "cpu" for d in devices):
            raise ValueError("DistributedDataParallel device_ids and output_device arguments only work with "
                             "single-device/multiple-device GPU modules or CPU modules, but got device_ids "
                             f"{device_ids}, output_device {output_device}, and module parameters {devices}.")
        self.module = module
        self.process_group = default_group() if process_group is None else process_group
        self.device_ids, self.output_device, self.dim = device_ids, output_device, dim
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.static_graph = static_graph
        self.require_backward_grad_sync = True
        self.require_forward_param_sync = True
        self._join_config = _JoinConfig.construct_disabled_join_config()
        self._divide_by_initial_world_size = True
        self.modules_buffers = list(module.buffers())
        cap_mb = _DEFAULT_BUCKET_CAP_MB if bucket_cap_mb is None else bucket_cap_mb
        self.bucket_bytes_cap = int(cap_mb * _MB)
        # torch keeps a small bucket (1 MiB) for the first-registered parameters only with the default cap
        first_cap = DEFAULT_FIRST_BUCKET_BYTES if bucket_cap_mb is None else self.bucket_bytes_cap
        limits = [min(first_cap, self.bucket_bytes_cap), self.bucket_bytes_cap]
        _verify_same_model(params, self.process_group)
        if init_sync:
            _broadcast_coalesced(list(module.parameters()) + self.modules_buffers, self.process_group)
        self.reducer = Reducer(params, bucket_assignment(params, limits), self.process_group,
                               find_unused_parameters, gradient_as_bucket_view)

    def forward(self, *inputs, **kwargs):
        """Run the module; a synced forward (grad enabled, outside no_sync) prepares the gradient
        reduction of the backward that follows."""
        syncing = is_grad_enabled() and self.require_backward_grad_sync
        if syncing:
            self.reducer.check_prior_reduction()
        work = Join.notify_join_context(self)  # (under join(): this rank has not joined)
        self.reducer.op = bucket_op(self)
        self.reducer.divisor = None
        if work is not None and self.reducer.op is not C.ReduceOp.AVG:
            self.reducer.divisor = work.result()[0].item()  # the ranks still running
        joining = self._join_config.enable
        if self.require_forward_param_sync and self.broadcast_buffers and self.modules_buffers:
            src = find_common_rank(self, self.process_group.rank(), True) if joining else 0
            _broadcast_coalesced(self.modules_buffers, self.process_group, src)
        if joining:  # (tells joined ranks whether to shadow this backward's all-reduces)
            sync_flag(self, 1.0 if self.require_backward_grad_sync else 0.0)
        output = self.module(*inputs, **kwargs)
        if syncing:
            self.require_forward_param_sync = True
            self.reducer.prepare_for_backward(output)
        else:
            self.require_forward_param_sync = False
        return output

    def join(self, divide_by_initial_world_size: bool = True, enable: bool = True,
             throw_on_early_termination: bool = False) -> Join:
        """The join context manager for uneven inputs over this module alone (torch's DDP.join)."""
        return Join([self], enable, throw_on_early_termination,
                    divide_by_initial_world_size=divide_by_initial_world_size)

    def join_hook(self, **kwargs) -> DDPJoinHook:
        """The hook shadowing this module's collectives on joined ranks (kwargs: divide_by_initial_world_size)."""
        return DDPJoinHook(self, kwargs.get("divide_by_initial_world_size", True))

    @property
    def join_device(self):
        """The device of the join context's all-reduces: the parameters'."""
        return next(self.module.parameters()).device

    @property
    def join_process_group(self):
        """This module's process group."""
        return self.process_group

    @contextlib.contextmanager
    def no_sync(self) -> Iterator[None]:
        """Inside, backward accumulates gradients locally; the first synced backward after averages
        the accumulated gradients."""
        previous = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = previous

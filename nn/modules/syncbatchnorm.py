"""SyncBatchNorm: batch norm whose statistics cover the whole batch spread over the ranks of a process group.

Training across ranks, each channel's mean and variance are all-reduced over tidal.comm (two passes: sums,
then squared deviations from the global mean, for accuracy). The all-reduce is recorded for autograd (its
adjoint is an all-reduce of the gradients), so backward gives every rank the gradient of the global batch
statistics. On one process, in eval mode, or without a process group it is plain BatchNorm, as in PyTorch.
Unlike PyTorch, CPU tensors synchronize too: the CPU is where tidal's ranks compute."""
from __future__ import annotations

import sys

from ... import ops
from ...autograd import no_grad
from ...ops.dispatch.primitive import Primitive
from ...tensor import Tensor
from .batchnorm import _BatchNorm

__all__ = ["SyncBatchNorm"]


def _comm():
    """tidal.comm if a process group may exist (it is imported by whoever initialized one), else None."""
    return sys.modules.get(__package__.rsplit(".", 2)[0] + ".comm")


def _all_reduce_sum(t: Tensor, group) -> Tensor:
    """The sum of `t` over the group's ranks, differentiable: the gradient is the sum of the ranks' gradients."""
    comm = _comm()
    out = t.detach().clone()
    comm.all_reduce(out, group=group)
    ALL_REDUCE_SUM.attach((t,), (out,), group, "all_reduce")
    return out


def _all_reduce_backward(node, g):
    # the sum's adjoint: every rank's gradient summed over the group (node.attrs)
    return (_all_reduce_sum(g, node.attrs),)


# the statistics' all-reduce node (AllReduceBackward0), attrs the process group
ALL_REDUCE_SUM = Primitive("all_reduce_sum", None, cpu=None, backward=_all_reduce_backward)


class SyncBatchNorm(_BatchNorm):
    """Batch norm over (N, C, *) inputs with statistics synchronized across the ranks of `process_group`."""

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, process_group=None, device=None, dtype=None, *,
                 bias: bool = True) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)
        self.process_group = process_group

    def _check_input_dim(self, input: Tensor) -> None:
        if input.dim() < 2:
            raise ValueError(f"expected at least 2D input (got {input.dim()}D input)")

    def _check_non_zero_input_channels(self, input: Tensor) -> None:
        if input.shape[1] == 0:
            raise ValueError("SyncBatchNorm number of input channels should be non-zero")

    def _sync_group(self):
        """The group to synchronize over while training, or None when there is nothing to synchronize."""
        comm = _comm()
        if not self.training or comm is None or not comm.is_initialized():
            return None
        group = self.process_group or comm.default_group()
        return group if comm.get_world_size(group) > 1 else None

    def forward(self, input: Tensor) -> Tensor:
        """The normalized input; training on several ranks, with the statistics of the global batch."""
        self._check_input_dim(input)
        self._check_non_zero_input_channels(input)
        group = self._sync_group()
        if group is None:
            return super().forward(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.track_running_stats:
            self.num_batches_tracked.add_(1)
            factor = 1.0 / float(self.num_batches_tracked) if self.momentum is None else self.momentum
        dims = tuple(d for d in range(input.dim()) if d != 1)
        local = input.numel() // input.shape[1]
        count = ops.full((1,), float(local), dtype=input.dtype, device=input.device)
        totals = _all_reduce_sum(ops.cat([input.sum(dims), count]), group)
        n = totals[-1]
        mean = totals[:-1] / n
        shape = (1, -1) + (1,) * (input.dim() - 2)
        centered = input - mean.reshape(shape)
        var = _all_reduce_sum((centered * centered).sum(dims), group) / n
        out = centered * ops.rsqrt(var + self.eps).reshape(shape)
        if self.weight is not None:
            out = out * self.weight.reshape(shape)
        if self.bias is not None:
            out = out + self.bias.reshape(shape)
        if self.track_running_stats:
            with no_grad():
                unbiased = var * n / (n - 1).clamp_min(1)
                self.running_mean.mul_(1 - factor).add_(mean.detach() * factor)
                self.running_var.mul_(1 - factor).add_(unbiased.detach() * factor)
        return out

    @classmethod
    def convert_sync_batchnorm(cls, module, process_group=None):
        """`module` with every BatchNorm*d replaced by a SyncBatchNorm sharing its parameters and buffers."""
        output = module
        if isinstance(module, _BatchNorm) and not isinstance(module, SyncBatchNorm):
            output = cls(module.num_features, module.eps, module.momentum, module.affine, module.track_running_stats,
                         process_group, bias=module.bias is not None)
            if module.affine:
                with no_grad():
                    output.weight = module.weight
                    output.bias = module.bias
            output.running_mean = module.running_mean
            output.running_var = module.running_var
            output.num_batches_tracked = module.num_batches_tracked
            output.training = module.training
            if hasattr(module, "qconfig"):
                output.qconfig = module.qconfig
        for name, child in module.named_children():
            output.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        del module
        return output


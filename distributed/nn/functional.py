"""torch.distributed.nn.functional: collectives as autograd functions, so a loss over gathered or reduced tensors
sends gradients back to each rank's input (contrastive losses over all ranks' embeddings gather them this way).
Each backward is torch's: all_reduce's is an all_reduce, all_gather's a reduce-scatter of the gradients,
reduce_scatter's an all_gather, broadcast's the sum of the gradients on the source rank (zero elsewhere),
all_to_all's an all_to_all."""
from __future__ import annotations

from ...autograd.function import Function
from ...comm import collectives as dist
from ...comm.collectives import ReduceOp
from ...comm.process_group import get_rank, get_world_size
from ...tensor import Tensor

__all__ = ["all_reduce", "all_gather", "broadcast", "reduce_scatter", "all_to_all", "ReduceOp"]


class _AllReduce(Function):
    @staticmethod
    def forward(ctx, op, group, tensor):
        ctx.op, ctx.group = op, group
        out = tensor.clone().contiguous()
        dist.all_reduce(out, op=op, group=group)
        return out

    @staticmethod
    def backward(ctx, grad):
        return None, None, _AllReduce.apply(ctx.op, ctx.group, grad)


class _AllGather(Function):
    @staticmethod
    def forward(ctx, group, tensor):
        ctx.group = group
        tensor = tensor.contiguous()
        out = [tensor.new_empty(tuple(tensor.shape)) for _ in range(get_world_size(group))]
        dist.all_gather(out, tensor, group=group)
        return tuple(out)

    @staticmethod
    def backward(ctx, *grads):
        mine = grads[get_rank(ctx.group)]
        return None, _ReduceScatter.apply(ReduceOp.SUM, ctx.group, mine.new_empty(tuple(mine.shape)), *grads)


class _ReduceScatter(Function):
    @staticmethod
    def forward(ctx, op, group, output, *inputs):
        ctx.group = group
        out = output.contiguous()
        dist.reduce_scatter(out, [t.contiguous() for t in inputs], op=op, group=group)
        return out

    @staticmethod
    def backward(ctx, grad):
        return (None, None, None) + tuple(_AllGather.apply(ctx.group, grad))


class _Broadcast(Function):
    @staticmethod
    def forward(ctx, src, group, tensor):
        ctx.src, ctx.group = src, group
        out = tensor.clone().contiguous()
        dist.broadcast(out, src, group=group)
        return out

    @staticmethod
    def backward(ctx, grad):
        total = _AllReduce.apply(ReduceOp.SUM, ctx.group, grad)  # (torch reduces onto src only: the same there)
        return None, None, total if get_rank(ctx.group) == ctx.src else total.zero_()


class _AllToAll(Function):
    @staticmethod
    def forward(ctx, group, outputs, *tensors):
        ctx.group, ctx.sizes = group, [tuple(t.shape) for t in tensors]
        out = [o.contiguous() for o in outputs]
        dist.all_to_all(out, [t.contiguous() for t in tensors], group=group)
        return tuple(out)

    @staticmethod
    def backward(ctx, *grads):
        back = [grads[0].new_empty(size) for size in ctx.sizes]
        return (None, None) + tuple(_AllToAll.apply(ctx.group, back, *grads))


def all_reduce(tensor: Tensor, op=ReduceOp.SUM, group=None) -> Tensor:
    """A new tensor holding `tensor` reduced over the group (its gradient all-reduced back)."""
    return _AllReduce.apply(op, group, tensor)


def all_gather(tensor: Tensor, group=None) -> tuple:
    """Every rank's `tensor`, in rank order (each rank's gradient is the sum of its slot's gradients)."""
    return _AllGather.apply(group, tensor)


def reduce_scatter(output: Tensor, input_list: list, op=ReduceOp.SUM, group=None) -> Tensor:
    """This rank's slot of `input_list` reduced over the group, in `output`."""
    return _ReduceScatter.apply(op, group, output, *input_list)


def broadcast(tensor: Tensor, src: int, group=None) -> Tensor:
    """A new tensor holding rank `src`'s `tensor` (the gradients summed back onto `src`)."""
    return _Broadcast.apply(src, group, tensor)


def all_to_all(output_tensor_list: list, input_tensor_list: list, group=None) -> tuple:
    """input_tensor_list[j] of each rank sent to rank j; returns what every rank sent here, in rank order."""
    return _AllToAll.apply(group, output_tensor_list, *input_tensor_list)

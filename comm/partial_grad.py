"""The gradient of a partial max/min/product/average: a reduction of a split dim whose ranks' results stay
Partial("max"), Partial("min"), Partial("product") or Partial("avg") (torch's DTensor placements for
amax/amin/max()/min()/prod/mean over a Shard dim).

Each rank's local reduction sends its gradient to its own extremum, but only the ranks holding the global
extremum should get it, shared among every element equal to it (as torch's amax backward shares it among
ties). `finish_extremum` wraps the local result in an identity whose backward scales the incoming gradient
by win * local_ties / global_ties (win: this rank's result is the global one), so the local op's backward
gives each tied element grad / global_ties. It costs two all-reduces in backward. A partial product's
gradient is the local one times the other ranks' products (`finish_product`: one all-gather in backward), and
a partial average's (mean over an evenly split dim) is the local one over the number of ranks averaged.
"""
from __future__ import annotations

from ..autograd.function import Function
from ..autograd.grad_mode import no_grad
from ..tensor import Tensor
from . import boxing

__all__ = ["finish_extremum", "finish_product", "finish_average"]


def _spread(y: Tensor, ndim: int, dims: tuple, keepdim: bool) -> Tensor:
    """`y` (a reduction over `dims` of an ndim-d tensor) with the reduced dims back as size 1."""
    if keepdim or y.dim() == ndim:
        return y
    for d in sorted(dims):
        y = y.unsqueeze(d)
    return y


class _PartialExtremum(Function):
    """Identity on the local max/min; backward keeps the gradient only where it is the global one."""

    @staticmethod
    def forward(ctx, y, x, group, op, dims, keepdim):
        ctx.route = (group, op, dims, keepdim)
        ctx.save_for_backward(y.detach(), x.detach())
        return y.detach()

    @staticmethod
    def backward(ctx, grad):
        group, op, dims, keepdim = ctx.route
        y, x = ctx.saved_tensors
        with no_grad():
            whole = boxing._all_reduce(y, group, op)
            win = (y == whole).to(grad.dtype)
            ties = (x == _spread(y, x.dim(), dims, keepdim)).sum(dims, keepdim=keepdim).to(grad.dtype)
            all_ties = boxing._all_reduce(ties * win, group)
            scale = win * ties / all_ties.clamp_min(1)
        return grad * scale, None, None, None, None, None


def finish_extremum(op: str, dims: tuple, keepdim: bool):
    """A signature's `finish` for a max/min reduction over `dims` whose result is Partial(op): it wraps the local
    result (from the local input `shard`) so that its gradient is the global reduction's."""
    def finish(result: Tensor, shard: Tensor, group) -> Tensor:
        if not result.requires_grad:
            return result
        return _PartialExtremum.apply(result, shard, group, op, dims, keepdim)
    return finish


class _PartialProduct(Function):
    """Identity on the local product; backward multiplies the gradient by the other ranks' products."""

    @staticmethod
    def forward(ctx, y, group):
        ctx.group = group
        ctx.save_for_backward(y.detach())
        return y.detach()

    @staticmethod
    def backward(ctx, grad):
        group = ctx.group
        (y,) = ctx.saved_tensors
        with no_grad():
            every = boxing._gather(y.unsqueeze(0).contiguous(), group, 0)   # (ranks, *y.shape)
            every[group.rank()] = 1                                          # (a product without division)
            others = every.prod(0)
        return grad * others.to(grad.dtype), None


def finish_product(result: Tensor, shard: Tensor, group) -> Tensor:
    """A signature's `finish` for prod over a split dim (Partial("product")): the global product's gradient."""
    return _PartialProduct.apply(result, group) if result.requires_grad else result


class _PartialAverage(Function):
    """Identity on the local mean; backward divides the gradient by the number of ranks averaged."""

    @staticmethod
    def forward(ctx, y, ranks):
        ctx.ranks = ranks
        return y.detach()

    @staticmethod
    def backward(ctx, grad):
        return grad / ctx.ranks, None


def finish_average(result: Tensor, shard: Tensor, group) -> Tensor:
    """A signature's `finish` for mean over an evenly split dim (Partial("avg")): the global mean's gradient."""
    return _PartialAverage.apply(result, group.size()) if result.requires_grad else result

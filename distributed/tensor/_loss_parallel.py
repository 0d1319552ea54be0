"""torch.distributed.tensor.parallel.loss_parallel on tidal: cross-entropy of logits sharded on the class dim
(the output of a ColwiseParallel head with use_local_output=False) without gathering the logits.

Inside the context, `F.cross_entropy` (and nn.CrossEntropyLoss, which calls it) given a DTensor computes
log-softmax from the ranks' parts (the max and the sum of exponentials are all-reduced; the shifted logits
stay sharded), picks each target's log-probability on the rank whose part holds its class (a partial sum),
and returns a Replicate DTensor, as torch's; `F.log_softmax` over the sharded dim keeps it sharded. The
context swaps `tidal.nn.functional.cross_entropy` while it is active (torch installs DTensor op handlers
instead). Gradients come from the same global-tensor ops, so backward may run inside or outside it.
As torch's: a one-dimensional mesh, class-index targets, no label smoothing.
"""
from __future__ import annotations

import contextlib

from ... import ops
from ...comm import boxing
from ...comm.global_tensor import _COMPOSITES, GlobalTensor
from ...comm.placement_sbp import broadcast, partial_sum
from ...nn import functional as F
from ...nn._util import check_reduction
from ...nn._util import legacy_reduction
from ...tensor import Tensor
from ._api import from_local
from .placement_types import Replicate

__all__ = ["loss_parallel"]


def _class_split(input: GlobalTensor, dim: int) -> bool:
    return input.placement.ndim == 1 and input.sbp[0].is_split and input.sbp[0].dim == dim


def _log_softmax(input, dim=None, _stacklevel: int = 3, dtype=None):
    """log_softmax over a dim split across the ranks: the parts stay sharded."""
    if not isinstance(input, GlobalTensor) or dim is None or not _class_split(input, dim % max(input.dim(), 1)):
        return NotImplemented
    if dtype is not None:
        input = input.to(dtype)
    dim = dim % input.dim()
    shifted = input - input.detach().amax(dim, keepdim=True)   # the max only steadies exp: no gradient
    total = shifted.exp().sum(dim, keepdim=True)._relayout((broadcast,))   # one all-reduce of the sums
    return shifted - total.log()


def _pick(logp: GlobalTensor, dim: int, index: Tensor) -> GlobalTensor:
    """logp's entries at `index` along the split `dim` (a replicated index): each rank gives those in its part
    and zeros elsewhere, so the result is their partial sum."""
    group = boxing.line_group(logp.placement.line(boxing.default_group().rank(), 0))
    offset, length = boxing.chunk_span(logp._shape[dim], group.size(), group.rank())
    local = index - offset
    inside = (local >= 0) & (local < length)
    if length:
        got = logp._local.gather(dim, local.clamp(0, length - 1).unsqueeze(dim)).squeeze(dim)
        got = got * inside.to(got.dtype)
    else:
        got = ops.zeros(tuple(index.shape), dtype=logp.dtype)
    return GlobalTensor(got, logp.placement, (partial_sum,), tuple(index.shape))


def _replicated(t) -> Tensor:
    """The local value of `t`, a plain tensor or a Replicate DTensor (torch's contract for targets/weights)."""
    if isinstance(t, GlobalTensor):
        if t.placements != (Replicate(),):
            raise RuntimeError(f"Expected {(Replicate(),)} but got {t.placements}.")
        return t.to_local()
    if not isinstance(t, Tensor):
        raise TypeError(f"Unsupported type {type(t)}")
    return t


def _cross_entropy(original):
    def cross_entropy(input, target, weight=None, size_average=None, ignore_index: int = -100, reduce=None,
                      reduction: str = "mean", label_smoothing: float = 0.0):
        """F.cross_entropy; a DTensor input sharded on the class dim is computed without gathering it."""
        if not isinstance(input, GlobalTensor):
            return original(input, target, weight, size_average, ignore_index, reduce, reduction, label_smoothing)
        reduction = legacy_reduction(size_average, reduce, reduction)
        check_reduction(reduction)
        class_dim = 0 if input.dim() == 1 else 1
        if input.placement.ndim != 1:
            raise NotImplementedError(f"loss_parallel(): tidal computes it on a one-dimensional DeviceMesh, got "
                                      f"placements {input.placements}")
        if not _class_split(input, class_dim):
            raise ValueError(f"loss_parallel() requires exactly one mesh dim to shard tensor dimension {class_dim}, "
                             f"but got placements {input.placements} with 0 such mesh dim(s).")
        if label_smoothing:
            raise NotImplementedError("loss_parallel(): label_smoothing is not supported (as torch's)")
        target = _replicated(target)
        if target.dtype.is_floating_point:
            raise NotImplementedError("loss_parallel(): class probabilities as targets are not supported (as "
                                      "torch's); pass class indices")
        mesh = input.device_mesh
        logp = _log_softmax(input, class_dim)
        valid = target != ignore_index
        safe = ops.where(valid, target, 0)
        picked = _pick(logp, class_dim, safe)
        if weight is None:
            w = valid.to(input.dtype)
        else:
            weight = _replicated(weight)
            w = ops.where(valid, weight.index_select(0, safe.reshape(-1)).reshape(tuple(safe.shape)), 0.0)
            w = w.to(input.dtype)
        w = from_local(w, mesh, [Replicate()])
        loss = -picked * w
        if reduction == "sum":
            loss = loss.sum()
        elif reduction == "mean":
            loss = loss.sum() / w.sum()
        return loss.redistribute(mesh, [Replicate()])
    return cross_entropy


_depth = [0, None]   # nesting depth, and the cross_entropy the outermost context replaced


@contextlib.contextmanager
def loss_parallel():
    """Within this context, cross_entropy (and log_softmax) of a DTensor sharded on the class dim run on the
    ranks' parts of the logits; the loss is a Replicate DTensor."""
    if _depth[0] == 0:
        _depth[1] = F.cross_entropy
        F.cross_entropy = _cross_entropy(_depth[1])
        _COMPOSITES["log_softmax"] = _log_softmax
    _depth[0] += 1
    try:
        yield
    finally:
        _depth[0] -= 1
        if _depth[0] == 0:
            F.cross_entropy = _depth[1]
            _COMPOSITES.pop("log_softmax", None)

"""Loss functions, each an elementwise loss on tidal ops followed by a 'none' | 'mean' | 'sum' reduction.

Every function accepts PyTorch's deprecated `size_average`/`reduce` flags where torch does.
"""
from __future__ import annotations

import functools
import math
import warnings

from .. import ops
from ..autograd import is_grad_enabled, no_grad
from ..tensor import Tensor
from ..tensor import dtype as dt
from ..ops.dispatch import autocast as _ac
from ..ops.dispatch import torch_function as _torch_function
from ..ops.rowwise import nll_rows
from ..ops.complex_numbers.tensors import refuse_complex
from ..ops.elementwise.plans import torch_name
from ..ops.dispatch.node_names import torch_node
from ..ops.dispatch.primitive import Primitive
from ..ops.elementwise.activations import logsigmoid
from ..ops.indexing.scatter import computed_values
from ..ops.windowed.windows import not_implemented
from ._util import check_reduction, legacy_reduction, warn_if_broadcast
from ._util import reduce as _reduce
from .functional_linear import linear
from .functional_shape import pairwise_distance

def _autocast_fp32(fn):
    """Run the loss in float32 inside an autocast block (torch's float32 list holds every loss)."""
    @functools.wraps(fn)
    def loss(*args, **kwargs):
        if _ac.ACTIVE[0]:
            args = _ac.fp32(*args)
            kwargs = dict(zip(kwargs, _ac.fp32(*kwargs.values())))
        return fn(*args, **kwargs)
    return _torch_function.asking_tensor_likes(loss)  # (vmap's batched values reach the losses' batching rules)


__all__ = ["mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "nll_loss", "cross_entropy",
           "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div", "poisson_nll_loss",
           "gaussian_nll_loss", "margin_ranking_loss", "hinge_embedding_loss", "soft_margin_loss",
           "cosine_embedding_loss", "triplet_margin_loss", "multilabel_soft_margin_loss", "ctc_loss",
           "multi_margin_loss", "multilabel_margin_loss", "triplet_margin_with_distance_loss", "linear_cross_entropy"]


def _not_differentiable(function: str, argument: str, t: Tensor | None) -> None:
    """torch's refusal, in grad mode, of an argument requiring grad that its op has no derivative for (a class
    weight, soft_margin_loss's target): the gradient would otherwise be computed and differ from torch's none."""
    if t is not None and t.requires_grad and is_grad_enabled():
        raise RuntimeError(f"The function '{function}' is not differentiable with respect to argument '{argument}'. "
                           "This input cannot have requires_grad True.")


def _weighted(loss: Tensor, input: Tensor, weight: Tensor | None, reduction: str, mean_by_weight: bool) -> Tensor:
    """Reduce `loss`, scaled by per-element `weight` if given ('mean' divides by weight.sum() when asked)."""
    if weight is None:
        return _reduce(loss, reduction)
    if weight.shape != input.shape:
        raise ValueError("Weights and input must have the same size.")
    loss = loss * weight
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"Invalid reduction mode: {reduction}. Expected one of 'none', 'mean', 'sum'.")
    if reduction == "mean" and mean_by_weight:
        return loss.sum() / weight.sum()
    return _reduce(loss, reduction)


# -- regression ----------------------------------------------------------------------------------
def mse_loss(input: Tensor, target: Tensor, size_average=None, reduce=None, reduction: str = "mean",
             weight: Tensor | None = None) -> Tensor:
    """(input - target)^2, reduced."""
    warn_if_broadcast(input, target)
    reduction = legacy_reduction(size_average, reduce, reduction)
    diff = input - target
    refuse_complex(diff, "\"mse_cpu\" not implemented for '{name}'")
    loss = _weighted(diff * diff, input, weight, reduction, True)
    return loss if weight is not None else torch_node(loss, "mse_loss", input, target)


def l1_loss(input: Tensor, target: Tensor, size_average=None, reduce=None, reduction: str = "mean",
            weight: Tensor | None = None) -> Tensor:
    """|input - target|, reduced."""
    warn_if_broadcast(input, target)
    reduction = legacy_reduction(size_average, reduce, reduction)
    return _weighted((input - target).abs(), input, weight, reduction, True)


def _piecewise_quadratic(name: str, x: Tensor, limit: float, divisor: float, slope: float) -> Tensor:
    """0.5 x^2 / divisor where |x| < limit, else slope * (|x| - limit / 2) (torch's kernels' order), with torch's
    gradient: -slope below -limit, slope above limit, x / divisor between (so infinite x give +-slope and NaN
    stays NaN; the pieces differentiated would give NaN at infinities and 0 at NaN)."""
    with no_grad():
        size = x.abs()
        quadratic = size * size * 0.5 if divisor == 1.0 else size * size * 0.5 / divisor
        loss = ops.where(size < limit, quadratic, (size - 0.5 * limit) * slope)
    PIECEWISE_QUADRATIC.attach((x,), (loss,), (limit, divisor, slope), name)
    return loss


def _piecewise_backward(node, g: Tensor) -> tuple:
    (x,) = node.saved_tensors
    limit, divisor, slope = node.attrs
    inner = x * g if divisor == 1.0 else x * g / divisor
    return (ops.where(x < -limit, -slope * g, ops.where(x > limit, slope * g, inner)),)


# smooth_l1_loss's and huber_loss's elementwise node (torch's SmoothL1LossBackward0, HuberLossBackward0 through
# node=), its attrs (limit, divisor, slope), saving the difference
PIECEWISE_QUADRATIC = Primitive("smooth_l1_loss", None, cpu=None, backward=_piecewise_backward, saved=("input0",))


def smooth_l1_loss(input: Tensor, target: Tensor, size_average=None, reduce=None, reduction: str = "mean",
                   beta: float = 1.0) -> Tensor:
    """0.5 d^2 / beta where |d| < beta, else |d| - beta / 2; reduced."""
    warn_if_broadcast(input, target)
    reduction = legacy_reduction(size_average, reduce, reduction)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    diff = input - target
    refuse_complex(diff, "\"smooth_l1_cpu\" not implemented for '{name}'")
    if beta == 0.0:  # torch takes l1_loss's path (its nodes: Abs, then Mean or Sum)
        return _reduce(diff.abs(), reduction)
    loss = _reduce(_piecewise_quadratic("smooth_l1_loss", input - target, beta, beta, 1.0), reduction)
    return torch_node(loss, "smooth_l1_loss", input, target)


def huber_loss(input: Tensor, target: Tensor, reduction: str = "mean", delta: float = 1.0,
               weight: Tensor | None = None) -> Tensor:
    """0.5 d^2 where |d| < delta, else delta (|d| - delta / 2); reduced."""
    warn_if_broadcast(input, target)
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    if input.dtype.is_floating_point and target.dtype.is_floating_point and target.dtype is not input.dtype:
        target = target.to(input.dtype)  # torch's huber kernel writes the input's dtype (mse/l1 promote)
    diff = input - target
    refuse_complex(diff, "\"huber_cpu\" not implemented for '{name}'")
    loss = _piecewise_quadratic("huber_loss", diff, delta, 1.0, delta)
    loss = _weighted(loss, input, weight, reduction, False)
    return loss if weight is not None else torch_node(loss, "huber_loss", input, target)


# -- classification ------------------------------------------------------------------------------
_SCALAR_NAME = {dt.float32: "Float", dt.float64: "Double", dt.float16: "Half", dt.bfloat16: "BFloat16",
                dt.int64: "Long", dt.int32: "Int", dt.int16: "Short", dt.int8: "Char", dt.uint8: "Byte",
                dt.bool_: "Bool"}


def _class_weight_shape(input: Tensor) -> tuple:
    """The shape that broadcasts a per-class vector along an input's class dim (1, or 0 if unbatched)."""
    return (input.shape[0 if input.dim() == 1 else 1],) + (1,) * max(input.dim() - 2, 0)


def _check_targets(target: Tensor, classes: int, ignore_index: int) -> None:
    # torch's error for a class index out of range, at the call when the targets are already computed
    # (else the gather below fails at the next sync, naming gather)
    values = computed_values(target) if target.numel() else None
    if values is not None:
        nll_rows.valid_targets(values, classes, ignore_index)


def _check_target_range(target: Tensor, low: int, high: int, message: str) -> None:
    # torch's kernel refuses a target outside [low, high): at the call when the targets are already computed
    # (else the gather on them fails at the next sync, naming gather)
    values = computed_values(target) if target.numel() else None
    if values is not None and ((values < low) | (values >= high)).any():
        raise RuntimeError(message)


def _check_nll_target(input: Tensor, target: Tensor) -> None:
    """torch's errors for class-index targets that do not fit `input` (its batch, its other dims, its dtype)."""
    if input.dim() == 1:
        if target.dim() == 1 and target.shape[0] != 1:
            raise ValueError(f"For 1D input, 1D target must have size 1, but got target size: {target.shape[0]}")
    elif target.dim() == 0 or input.shape[0] != target.shape[0]:
        raise ValueError(f"Expected input batch_size ({input.shape[0]}) to match target batch_size "
                         f"({target.shape[0] if target.dim() else 0}).")
    if input.dim() <= 2 and target.dim() > 1:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if target.dtype not in (dt.int64, dt.uint8):
        raise RuntimeError(f"expected target dtype to be Long or Byte, but got {torch_name(target.dtype)}")
    if input.dim() == 4 and target.dim() != 3:
        raise RuntimeError("only batches of spatial targets supported (3D tensors) but got targets of dimension: "
                           f"{target.dim()}")
    want = tuple(input.shape[:1]) + tuple(input.shape[2:])
    if input.dim() > 2 and tuple(target.shape) != want:
        if input.dim() == 4:
            raise RuntimeError(f"size mismatch (got input: {list(input.shape)} , target: {list(target.shape)}")
        raise RuntimeError(f"Expected target size {list(want)}, got {list(target.shape)}")


def nll_loss(input: Tensor, target: Tensor, weight: Tensor | None = None, size_average=None,
             ignore_index: int = -100, reduce=None, reduction: str = "mean") -> Tensor:
    """-input[n, target[n]] (weighted per class, ignoring `ignore_index`), reduced."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    check_reduction(reduction)
    if input.dim() < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {input.dim()})")
    _not_differentiable("nll_loss_forward" if input.dim() <= 2 else "nll_loss2d_forward", "weight", weight)
    unbatched = input.dim() == 1
    # torch's node: NllLoss for (N, C), NllLoss2d for (N, C, H, W) and for other shapes it reduces
    node = "nll_loss" if input.dim() <= 2 else "nll_loss2d" if input.dim() == 4 or reduction != "none" else None
    _check_nll_target(input, target)
    if target.dtype is dt.uint8:  # (torch takes Byte class indices too)
        target = target.long()
    if unbatched:
        input, target = input.unsqueeze(0), target.reshape((1,))
    classes = input.shape[1]
    if weight is not None and weight.numel() != classes:
        raise RuntimeError(f"weight tensor should be defined either for all {classes} classes or no classes but "
                           f"got weight tensor of shape: {list(weight.shape)}")
    if weight is not None and weight.dtype is not input.dtype and not input.dtype.is_complex:
        raise RuntimeError(f"expected scalar type {_SCALAR_NAME.get(input.dtype, input.dtype.name)} but found "
                           f"{_SCALAR_NAME.get(weight.dtype, weight.dtype.name)}")  # (torch's kernel: no promotion)
    _check_targets(target, classes, ignore_index)
    refuse_complex(input, ("\"nll_loss_out_frame\"" if input.dim() <= 2 else "\"nll_loss2d_forward_out_frame\"")
                   + " not implemented for '{name}'")
    if nll_rows.takes(input, target, weight):
        loss = nll_rows.nll_rows(input, target, ignore_index, reduction)
        return loss.squeeze(0) if unbatched and reduction == "none" else loss
    valid = target != ignore_index
    safe = ops.where(valid, target, 0)
    picked = input.gather(1, safe.unsqueeze(1)).squeeze(1)
    w = valid.to(input.dtype) if weight is None else \
        ops.where(valid, weight.index_select(0, safe.reshape(-1)).reshape(tuple(safe.shape)), 0.0).to(input.dtype)
    # ignored positions give no gradient even when the mean divides by a zero total weight (torch skips them:
    # its gradient is 0 there, not 0 * inf)
    loss = ops.where(valid, -picked * w, 0.0)
    if reduction == "none":
        loss = loss.squeeze(0) if unbatched else loss
    else:
        loss = loss.sum() if reduction == "sum" else loss.sum() / w.sum()
    return loss if node is None else torch_node(loss, node, input, target, weight)


def cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None, size_average=None,
                  ignore_index: int = -100, reduce=None, reduction: str = "mean",
                  label_smoothing: float = 0.0) -> Tensor:
    """log_softmax over the class dim followed by nll_loss (class targets) or -sum(p log q) (probability targets)."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    check_reduction(reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    if input.dim() == 0:  # (torch asks a 0-d input for its class dim 1)
        raise IndexError("cross_entropy: Dimension out of range (expected to be in range of [-1, 0], but got 1)")
    class_dim = 0 if input.dim() == 1 else 1
    classes = input.shape[class_dim]
    logp = ops.log_softmax(input, class_dim)
    wshape = _class_weight_shape(input)
    if target.shape == input.shape:  # class probabilities (torch tells them apart by shape)
        if not target.dtype.is_floating_point:
            raise RuntimeError("Expected floating point type for target with class probabilities, got "
                               f"{torch_name(target.dtype)}")
        if ignore_index >= 0:
            raise RuntimeError("ignore_index is not supported for floating point target")
        if label_smoothing > 0:
            target = target * (1.0 - label_smoothing) + label_smoothing / classes
        per_class = logp * target
        if weight is not None:
            per_class = per_class * weight.reshape(wshape)
        loss = -per_class.sum(class_dim)
        if reduction == "mean":  # torch's nodes: -(p * q).sum() divided by a number; or negated
            mean = loss.sum() / (input.numel() / classes) if input.numel() else loss.sum() / 0.0
            return torch_node(mean, "DivBackward1", input, target)
        return torch_node(_reduce(loss, reduction), "NegBackward0", input, target)
    nll = nll_loss(logp, target, weight, None, ignore_index, None, reduction)
    if target.dtype is dt.uint8:  # (checked by nll_loss; the smoothing below indexes with it)
        target = target.long()
    if label_smoothing == 0.0:
        return nll
    smooth = -(logp if weight is None else logp * weight.reshape(wshape)).sum(class_dim)
    ignored = target == ignore_index
    smooth = smooth.masked_fill(ignored, 0.0)
    if reduction == "mean":
        if weight is None:
            denom = (~ignored).sum()
        else:
            picked = weight.index_select(0, ops.where(ignored, 0, target).reshape(-1)).reshape(tuple(target.shape))
            denom = ops.where(ignored, 0.0, picked).sum()
        smooth = smooth.sum() / denom
    elif reduction == "sum":
        smooth = smooth.sum()
    return nll * (1.0 - label_smoothing) + smooth * (label_smoothing / classes)


def _check_unit_range(x: Tensor, name: str) -> None:
    """torch's refusal of a value outside [0, 1] (NaN included); it reads the values, a sync point as in torch."""
    if x.device.type != "meta" and x.numel() and not bool(((x >= 0) & (x <= 1)).all()):
        raise RuntimeError(f"all elements of {name} should be between 0 and 1")


def binary_cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None, size_average=None,
                         reduce=None, reduction: str = "mean") -> Tensor:
    """-(t log x + (1 - t) log(1 - x)), each log clamped at -100 as PyTorch does; reduced."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    if target.shape != input.shape:
        raise ValueError(f"Using a target size ({target.shape}) that is different to the input size "
                         f"({input.shape}) is deprecated. Please ensure they have the same size.")
    _not_differentiable("binary_cross_entropy", "weight", weight)
    refuse_complex(input, "\"binary_cross_entropy\" not implemented for '{name}'")
    if target.dtype is not input.dtype:  # torch takes no promotion here
        raise RuntimeError(f"Found dtype {torch_name(target.dtype)} but expected {torch_name(input.dtype)}")
    if input.dtype.category != dt.FLOAT:
        raise NotImplementedError(f"\"binary_cross_entropy\" not implemented for '{torch_name(input.dtype)}'")
    check_reduction(reduction)  # (torch names a bad reduction before it reads a value)
    _check_unit_range(input, "input")
    _check_unit_range(target, "target")
    with no_grad():  # torch's kernel: (t - 1) * max(log1p(-x), -100) - t * max(log(x), -100)
        loss = (target - 1.0) * ops.clamp_min(ops.log1p(-input), -100.0) - \
            target * ops.clamp_min(ops.log(input), -100.0)
    # torch's formulas: finite where x is exactly 0 or 1 (a saturated sigmoid)
    BINARY_CROSS_ENTROPY.attach((input, target), (loss,), target._requires_grad)
    if weight is not None:
        loss = loss * weight
    return torch_node(_reduce(loss, reduction), "binary_cross_entropy", input, target, weight)


def _bce_backward(node, g: Tensor) -> tuple:
    x, t = node.saved_tensors
    gx = g * (x - t) / ops.clamp_min((1.0 - x) * x, 1e-12)
    return gx, (g * (ops.log1p(-x) - ops.log(x)) if node.attrs else None)  # (target: torch's -logit(x))


def _bce_logits_backward(node, g: Tensor) -> tuple:
    x, t, pos_weight = node.saved_tensors
    if pos_weight is None:
        gx = g * (ops.sigmoid(x) - t)
    else:
        pt = pos_weight * t
        gx = g * ((pt + 1.0 - t) * ops.sigmoid(x) - pt)
    if not node.attrs:
        return gx, None
    gt = -x if pos_weight is None else logsigmoid(-x) - logsigmoid(x) * pos_weight
    return gx, g * gt


# the unreduced losses' nodes on (input, target), their attrs whether the target takes a gradient: bce saves both,
# bce_with_logits pos_weight too
BINARY_CROSS_ENTROPY = Primitive("binary_cross_entropy", None, cpu=None, backward=_bce_backward,
                                 saved=("input0", "input1"))
BINARY_CROSS_ENTROPY_WITH_LOGITS = Primitive("binary_cross_entropy_with_logits", None, cpu=None,
                                             backward=_bce_logits_backward)


def _check_logits_target(input: Tensor, target: Tensor) -> None:
    """torch's refusals for binary_cross_entropy_with_logits: an integer input (its log_sigmoid kernel), a
    target its result can't be written into (torch computes in place in `1 - target`)."""
    if input.dtype.category != dt.FLOAT:
        raise NotImplementedError(f"\"log_sigmoid_cpu\" not implemented for '{torch_name(input.dtype)}'")
    if target.dtype is dt.bool_:
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or "
                           "`logical_xor()` operator instead.")
    if target.dtype.category != dt.FLOAT:
        raise RuntimeError(f"result type {torch_name(input.dtype)} can't be cast to the desired output type "
                           f"{torch_name(target.dtype)}")


def binary_cross_entropy_with_logits(input: Tensor, target: Tensor, weight: Tensor | None = None,
                                     size_average=None, reduce=None, reduction: str = "mean",
                                     pos_weight: Tensor | None = None) -> Tensor:
    """binary_cross_entropy(sigmoid(input), target), computed stably; `pos_weight` scales the positive term."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    check_reduction(reduction)
    if target.shape != input.shape:
        raise ValueError(f"Target size ({target.shape}) must be the same as input size ({input.shape})")
    _not_differentiable("binary_cross_entropy_with_logits", "pos_weight", pos_weight)
    _check_logits_target(input, target)
    with no_grad():  # torch's kernel: (1 - t) x - log_sigmoid(x) (times (pos_weight - 1) t + 1)
        log_sigmoid = logsigmoid(input)
        if pos_weight is not None:
            log_sigmoid = log_sigmoid * ((pos_weight - 1.0) * target + 1.0)
        loss = (1.0 - target) * input - log_sigmoid
    # torch's formulas, not the forward's pieces differentiated: at x = 0 these give sigmoid(0) - t (a max(-x, 0)
    # in the forward would take a whole unit gradient at its kink)
    BINARY_CROSS_ENTROPY_WITH_LOGITS.attach((input, target), (loss,), target._requires_grad,
                                            saved=(input, target, pos_weight))
    if weight is not None:
        loss = loss * weight
    if loss.dtype is not target.dtype:  # torch computes in place in `1 - target`: the result has its dtype
        loss = loss.to(target.dtype)
    return torch_node(_reduce(loss, reduction), "binary_cross_entropy_with_logits", input, target, weight,
                      pos_weight)


def kl_div(input: Tensor, target: Tensor, size_average=None, reduce=None, reduction: str = "mean",
           log_target: bool = False) -> Tensor:
    """target * (log target - input) with `input` in log space (and `target` too if `log_target`); reduced."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    if reduction == "mean":
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the support size."
                      "'batchmean' divides only by the batch size, and aligns with the KL div math definition."
                      "'mean' will be changed to behave the same as 'batchmean' in the next major release.",
                      stacklevel=2)
    if input.dtype.is_complex or target.dtype.is_complex:
        raise RuntimeError("kl_div: Complex inputs not supported.")
    if log_target:
        loss = ops.exp(target) * (target - input)
    else:
        loss = ops.xlogy(target, target) - target * input
    if reduction == "batchmean":
        return loss.sum() / input.shape[0] if input.dim() else loss.sum()
    return _reduce(loss, reduction)


def poisson_nll_loss(input: Tensor, target: Tensor, log_input: bool = True, full: bool = False,
                     size_average=None, eps: float = 1e-8, reduce=None, reduction: str = "mean") -> Tensor:
    """Negative log likelihood of `target` under Poisson(rate = exp(input) or input); reduced."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    check_reduction(reduction)
    loss = ops.exp(input) - target * input if log_input else input - target * ops.log(input + eps)
    if full:
        stirling = target * ops.log(target) - target + 0.5 * ops.log(2 * math.pi * target)
        loss = loss + ops.where(target > 1, stirling, 0.0)
    return _reduce(loss, reduction)


def gaussian_nll_loss(input: Tensor, target: Tensor, var, full: bool = False, eps: float = 1e-6,
                      reduction: str = "mean") -> Tensor:
    """Negative log likelihood of `target` under N(input, var), with var clamped below at eps."""
    # torch's order: the sign of var, its size, then the reduction
    if not isinstance(var, Tensor):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = ops.full_like(input, float(var))
    elif bool((var < 0).any()):
        raise ValueError("var has negative entry/entries")
    if var.shape != input.shape:
        if tuple(input.shape[:-1]) == tuple(var.shape):  # one dim short: one variance per row
            var = var.unsqueeze(-1)
        # otherwise var broadcasts with one mismatched dim, of size 1 (torch: the mismatched sizes of var sum to 1)
        elif not (var.dim() == input.dim() and sum(v for i, v in zip(input.shape, var.shape) if i != v) == 1):
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    # clamped without a gradient through the clamp, as PyTorch does (clamp_ under no_grad)
    var = var + (var.clamp_min(eps) - var).detach()
    diff = input - target
    loss = 0.5 * (ops.log(var) + diff * diff / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


def margin_ranking_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0, size_average=None,
                        reduce=None, reduction: str = "mean") -> Tensor:
    """max(0, -target * (input1 - input2) + margin), reduced."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    if input1.dim() != input2.dim() or input1.dim() != target.dim():
        raise RuntimeError(f"margin_ranking_loss : All input tensors should have same dimension but got sizes: "
                           f"input1: {input1.shape}, input2: {input2.shape}, target: {target.shape} ")
    return _reduce(ops.clamp_min(-target * (input1 - input2) + margin, 0.0), reduction)


def hinge_embedding_loss(input: Tensor, target: Tensor, margin: float = 1.0, size_average=None, reduce=None,
                         reduction: str = "mean") -> Tensor:
    """input where target == 1, max(0, margin - input) where target == -1; reduced."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    hinge = ops.where(target != 1, ops.clamp_min(margin - input, 0.0), 0.0)
    return _reduce(hinge + ops.where(target != -1, input, 0.0), reduction)


def soft_margin_loss(input: Tensor, target: Tensor, size_average=None, reduce=None,
                     reduction: str = "mean") -> Tensor:
    """log(1 + exp(-target * input)), reduced."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    _not_differentiable("soft_margin_loss", "target", target)
    return torch_node(_reduce(ops.log1p(ops.exp(-target * input)), reduction), "soft_margin_loss", input, target)


def cosine_embedding_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0, size_average=None,
                          reduce=None, reduction: str = "mean") -> Tensor:
    """1 - cos(x1, x2) where target == 1, max(0, cos(x1, x2) - margin) where target == -1; reduced."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    dim = input1.dim() - 1
    eps = 1e-12
    cos = (input1 * input2).sum(dim) / ops.sqrt(((input1 * input1).sum(dim) + eps) * ((input2 * input2).sum(dim) + eps))
    loss = ops.where(target == 1, 1.0 - cos, 0.0) + ops.where(target == -1, ops.clamp_min(cos - margin, 0.0), 0.0)
    return _reduce(loss, reduction)


def triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor, margin: float = 1.0, p: float = 2,
                        eps: float = 1e-6, swap: bool = False, size_average=None, reduce=None,
                        reduction: str = "mean") -> Tensor:
    """max(0, d(a, p) - d(a, n) + margin) with p-norm distances; reduced."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = ops.minimum(d_neg, pairwise_distance(positive, negative, p, eps))
    return _reduce(ops.clamp_min(margin + d_pos - d_neg, 0.0), reduction)


def multilabel_soft_margin_loss(input: Tensor, target: Tensor, weight: Tensor | None = None, size_average=None,
                                reduce=None, reduction: str = "mean") -> Tensor:
    """Mean over classes of the binary logistic loss of each label; reduced over the batch."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    if input.dim() == 0:  # (torch's sum over dim -1 of a 0-d tensor)
        raise IndexError("multilabel_soft_margin_loss: Dimension specified as -1 but tensor has no dimensions")
    loss = -(target * logsigmoid(input) + (1.0 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    loss = loss.sum(input.dim() - 1) / input.shape[-1]
    return _reduce(loss, reduction)


def triplet_margin_with_distance_loss(anchor: Tensor, positive: Tensor, negative: Tensor, *, distance_function=None,
                                      margin: float = 1.0, swap: bool = False, reduction: str = "mean") -> Tensor:
    """max(0, d(a, p) - d(a, n) + margin) for any distance function d (pairwise_distance by default); reduced."""
    check_reduction(reduction)
    if margin <= 0:
        raise ValueError(f"TripletMarginWithDistanceLoss: expected margin to be greater than 0, got {margin} instead")
    if not (anchor.dim() == positive.dim() == negative.dim()):
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the same number of "
                           f"dimensions, but got: anchor {anchor.dim()}D, positive {positive.dim()}D, and negative "
                           f"{negative.dim()}D inputs")
    distance = distance_function if distance_function is not None else pairwise_distance
    d_pos, d_neg = distance(anchor, positive), distance(anchor, negative)
    if swap:
        d_neg = ops.minimum(d_neg, distance(positive, negative))
    return _reduce(ops.clamp_min(margin + d_pos - d_neg, 0.0), reduction)


def multi_margin_loss(input: Tensor, target: Tensor, p: int = 1, margin: float = 1.0, weight: Tensor | None = None,
                      size_average=None, reduce=None, reduction: str = "mean") -> Tensor:
    """Multi-class hinge loss: mean over classes i != y of max(0, margin - x[y] + x[i])^p (times weight[y])."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    check_reduction(reduction)  # before any other check, as torch
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.dim() != 1:
        raise ValueError("weight must be one-dimensional")
    _not_differentiable("multi_margin_loss", "weight", weight)
    x = input if input.dim() > 0 else input.reshape(1)
    x = x.unsqueeze(0) if x.dim() == 1 else x
    if x.dim() != 2:
        raise RuntimeError(f"Expected non-empty vector or matrix with optional 0-dim batch size, but got: "
                           f"{list(input.shape)}")
    if target.dim() > 1 or target.numel() != x.shape[0]:
        raise RuntimeError("multi_margin_loss: target tensor should be 1-D with size equal to the number of input "
                           f"samples (batch size). Expected target size [{x.shape[0]}], but got {list(target.shape)}. "
                           f"Input has shape {list(input.shape)}.")
    _check_target_range(target, 0, x.shape[1], "target out of range")
    y = target.reshape(-1, 1)
    picked = x.gather(1, y)
    z = margin - picked + x
    hinge = ops.where(z > 0, z, 0.0)  # torch's kernel counts only z > 0: no gradient at the kink (nor a NaN)
    if p == 2:
        hinge = hinge * hinge
    if weight is not None:
        hinge = hinge * weight.index_select(0, y.reshape(-1)).unsqueeze(1)
    not_target = ops.ones_like(x).scatter(1, y, 0.0)   # the target class itself does not count
    loss = (hinge * not_target).sum(1) / x.shape[1]
    loss = loss.reshape(tuple(target.shape)) if input.dim() < 2 else loss
    return torch_node(_reduce(loss, reduction), "multi_margin_loss", input, target, weight)


def multilabel_margin_loss(input: Tensor, target: Tensor, size_average=None, reduce=None,
                           reduction: str = "mean") -> Tensor:
    """Multi-label hinge loss: over target labels j (up to the first -1) and non-targets i, max(0, 1 - x[j] + x[i]),
    divided by the number of classes."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    check_reduction(reduction)  # before any other check, as torch
    if not ((input.dim() <= 1 and input.numel() > 0) or (input.dim() == 2 and input.shape[1] != 0)):
        raise RuntimeError(f"Expected non-empty vector or matrix with optional 0-dim batch size, but got: "
                           f"{list(input.shape)}")
    x = input.reshape(1, -1) if input.dim() <= 1 else input
    t = target.reshape(tuple(x.shape))
    if x.dim() != 2:
        raise RuntimeError(f"Expected non-empty vector or matrix with optional 0-dim batch size, but got: "
                           f"{list(input.shape)}")
    classes = x.shape[1]
    _check_target_range(t, -1, classes, "argument #2 'target' is out of range")  # (every value, past a -1 too)
    # labels count up to the first -1 in each row
    ended = ops.cumsum((t < 0).to(dt.int64), 1) > 0
    labels = ops.where(ended, 0, t)
    is_label = ops.zeros(tuple(x.shape), dtype=dt.int64, device=x.device).scatter_add(1, labels, (~ended).to(dt.int64))
    is_target = (is_label > 0).to(x.dtype)
    picked = x.gather(1, labels)                                 # (N, C): x at each listed label
    z = 1.0 - picked.unsqueeze(2) + x.unsqueeze(1)   # [n, j, i]
    hinge = ops.where(z > 0, z, 0.0)  # torch's kernel counts only z > 0: no gradient at the kink
    mask = (~ended).to(x.dtype).unsqueeze(2) * (1.0 - is_target).unsqueeze(1)
    loss = (hinge * mask).sum((1, 2)) / classes
    loss = loss.reshape(()) if input.dim() <= 1 else loss
    return torch_node(_reduce(loss, reduction), "multilabel_margin_loss", input, target)


def linear_cross_entropy(input: Tensor, linear_weight: Tensor, target: Tensor, *, linear_bias: Tensor | None = None,
                         weight: Tensor | None = None, reduction: str = "mean", ignore_index: int | None = None,
                         label_smoothing: float = 0.0, options=None) -> Tensor:
    """cross_entropy(linear(input, linear_weight, linear_bias), target); `linear_weight` is (classes, *out, in).

    `options` (nn.LinearCrossEntropyOptions) tunes PyTorch's chunked kernel for memory; the loss is the same
    mathematically, and tidal computes it unchunked."""
    if input.dim() < 1 or input.dim() > 2:
        raise RuntimeError(f"expected input with dimensionality 1 or 2, got {input.dim()}")
    if linear_weight.dim() < 2:
        raise RuntimeError(f"expected linear_weight with dimensionality at least 2, got {linear_weight.dim()}")
    batches, in_features = tuple(input.shape[:-1]), input.shape[-1]
    if in_features != linear_weight.shape[-1]:
        raise RuntimeError("expected equal input and linear_weight last dimensions (in_features), got "
                           f"{input.shape[-1]} and {linear_weight.shape[-1]}, respectively")
    classes, out_features = linear_weight.shape[0], tuple(linear_weight.shape[1:-1])
    if linear_bias is not None and tuple(linear_bias.shape) != (classes, *out_features):
        raise RuntimeError(f"expected linear_bias shape {(classes, *out_features)}, got {tuple(linear_bias.shape)}")
    if out_features and not batches:
        raise RuntimeError(f"K-dimensional loss defined by linear_weight shape {tuple(linear_weight.shape)} requires "
                           f"batched input, (N, {in_features}), got unbatched input with shape {tuple(input.shape)}")
    logits_shape = batches + (classes,) + out_features
    if tuple(target.shape) == logits_shape and ignore_index is not None:
        raise RuntimeError("ignore_index cannot be specified when target contains probabilities")
    if options is not None and (out_features or reduction not in ("mean", "sum", "none") or label_smoothing != 0.0
                                or target.dtype is not dt.int64):
        warnings.warn("linear_cross_entropy: ``options`` ignored; chunked path needs reduction in {'mean','sum',"
                      "'none'}, label_smoothing == 0, target.dtype == int64, out_features == (). Got "
                      f"reduction={reduction!r}, label_smoothing={label_smoothing}, target.dtype={target.dtype}, "
                      f"out_features={out_features}, tracing=False, linear_bias.shape="
                      f"{tuple(linear_bias.shape) if linear_bias is not None else None}.", stacklevel=2)
    rows = math.prod(out_features) * classes
    logits = linear(input, linear_weight.reshape(rows, in_features),
                    None if linear_bias is None else linear_bias.reshape(rows))
    return cross_entropy(logits.reshape(logits_shape), target, weight=weight, reduction=reduction,
                         ignore_index=ignore_index if ignore_index is not None else -100,
                         label_smoothing=label_smoothing)


# -- sequences -----------------------------------------------------------------------------------
def _lengths(values, name: str) -> tuple:
    """CTC lengths (a tensor or a sequence of ints) as host ints."""
    if isinstance(values, Tensor):
        if values.dtype.is_floating_point or values.dtype is dt.bool_:
            raise RuntimeError(f"{name} must be integral")
        return tuple(int(v) for v in values.reshape(-1).tolist())
    if isinstance(values, int):
        return (values,)
    return tuple(int(v) for v in values)


def ctc_loss(log_probs: Tensor, targets: Tensor, input_lengths, target_lengths, blank: int = 0,
             reduction: str = "mean", zero_infinity: bool = False) -> Tensor:
    """Connectionist temporal classification loss of (T, N, C) log-probabilities against label sequences."""
    from ..ops.rowwise.ctc import CTCGeometry, ctc_nll  # ctc loads on first use
    check_reduction(reduction)
    unbatched = log_probs.dim() == 2
    if unbatched:
        log_probs = log_probs.unsqueeze(1)
        targets = targets.unsqueeze(0) if targets.dim() == 1 else targets
    if log_probs.dim() != 3:
        raise RuntimeError(f"ctc_loss(): expected log_probs to be 2-D or 3-D, got {log_probs.dim()}-D")
    if log_probs.dtype in (dt.float16, dt.bfloat16):  # PyTorch's CPU kernel has no 16-bit floats
        raise not_implemented("ctc_loss_cpu", log_probs.dtype)
    steps, batch, classes = log_probs.shape
    inputs, lengths = _lengths(input_lengths, "input_lengths"), _lengths(target_lengths, "target_lengths")
    if blank < 0 or blank >= classes:
        raise RuntimeError("blank must be in label range")
    if len(inputs) != batch:
        raise RuntimeError("input_lengths must be of size batch_size")
    if len(lengths) != batch:
        raise RuntimeError("target_lengths must be of size batch_size")
    # torch's ctc_loss_allocate_outputs: the targets, then the input lengths, in its words
    where = " (while checking arguments for ctc_loss_allocate_outputs)"
    for n in lengths:
        if n < 0:
            raise RuntimeError(f"Expected target_lengths to have value at least 0, but got value {n}{where}")
    padded = targets.dim() == 2
    if not padded and targets.shape[0] != sum(lengths):
        raise RuntimeError(f"Expected tensor to have size {sum(lengths)} at dimension 0, but got size "
                           f"{targets.shape[0]} for argument #2 'targets'{where}")
    if padded and targets.shape[0] != batch:
        raise RuntimeError(f"Expected tensor to have size {batch} at dimension 0, but got size {targets.shape[0]} "
                           f"for argument #2 'targets'{where}")
    if padded and lengths and targets.shape[1] < max(lengths):
        raise RuntimeError(f"Expected tensor to have size at least {max(lengths)} at dimension 1, but got size "
                           f"{targets.shape[1]} for argument #2 'targets'{where}")
    for t in inputs:
        if t < 0:
            raise RuntimeError(f"Expected input_lengths to have value at least 0, but got value {t}{where}")
        if t > steps:
            raise RuntimeError(f"Expected input_lengths to have value at most {steps}, but got value {t}{where}")
    geo = CTCGeometry(inputs, lengths, blank, zero_infinity, padded)
    loss = ctc_nll(log_probs, targets, geo)
    if reduction == "mean":
        divisor = ops.tensor([max(n, 1) for n in lengths], dtype=loss.dtype, device=loss.device)
        return (loss / divisor).mean()
    if reduction == "sum":
        return loss.sum()
    return loss.squeeze(0) if unbatched else loss


# the losses on torch's autocast float32 list
for _name in __all__:
    if _name not in ("linear_cross_entropy", "gaussian_nll_loss", "triplet_margin_with_distance_loss",
                     "multilabel_soft_margin_loss"):  # composites there too: their own ops decide
        globals()[_name] = _autocast_fp32(globals()[_name])
del _name

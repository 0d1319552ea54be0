"""vmap's batching rules for nn.functional's ops: convolutions, pools and losses.

Ops whose first dims are a batch of their own (N, C, *spatial) fold vmap's batch into it: a batched input runs as
one call over B*N samples (a sample without N, (C, *spatial), is already a batch of B); a convolution's batched
weight (an ensemble of models) runs through groups, each sample's channels side by side. Losses run with
reduction='none' on the batch and reduce each sample's part, as the sample's own call would.
(The public functions reach these rules; nn.functional's own names need s18_vmap_nn_dispatch.patch.)
"""
from __future__ import annotations

import inspect
from typing import Callable

from .. import ops
from ..tensor import Tensor
from .batching import RULES, BatchedTensor, Level, op_name, wrap

__all__: list = []


def _batched(x, level) -> bool:
    return isinstance(x, BatchedTensor) and x.level is level


def _batch(x, level):
    """The value of `x` with the batch dim in front (an unbatched tensor expanded over the batch)."""
    if _batched(x, level):
        return x.value
    return x.unsqueeze(0).expand(level.size, *x.shape)


_SIGNATURES: dict = {}  # function -> its signature (read once: inspect.signature is slow)


def _bind(func, args, kwargs):
    """The call's arguments by name (None where the function's signature cannot be read)."""
    signature = _SIGNATURES.get(func)
    try:
        if signature is None:
            signature = _SIGNATURES[func] = inspect.signature(func)
        bound = signature.bind(*args, **kwargs)
    except (TypeError, ValueError):
        return None
    bound.apply_defaults()
    return bound.arguments


# -- convolutions and pools --------------------------------------------------------------------------------------
_SPATIAL = {"conv1d": 1, "conv2d": 2, "conv3d": 3, "max_pool1d": 1, "max_pool2d": 2, "max_pool3d": 3,
            "avg_pool1d": 1, "avg_pool2d": 2, "avg_pool3d": 3, "adaptive_avg_pool1d": 1, "adaptive_avg_pool2d": 2,
            "adaptive_avg_pool3d": 3, "adaptive_max_pool1d": 1, "adaptive_max_pool2d": 2, "adaptive_max_pool3d": 3,
            "lp_pool1d": 1, "lp_pool2d": 2}


def fold_batch(func: Callable, level: Level, args: tuple, kwargs: dict):
    """An op over (N, C, *spatial) whose only batched argument is its input: vmap's batch folded into N."""
    name = op_name(func)
    x = args[0] if args else kwargs.get("input")
    others = [a for a in (*args[1:], *kwargs.values()) if _batched(a, level)]
    if not _batched(x, level) or others:
        return conv(func, level, args, kwargs) if name.startswith("conv") else NotImplemented
    v = x.value
    unbatched = x.dim() == _SPATIAL[name] + 1  # (C, *spatial): the batch is the call's N
    folded = v if unbatched else v.reshape(-1, *v.shape[2:])
    rest = args[1:] if args else ()
    out = func(folded, *rest, **{k: a for k, a in kwargs.items() if k != "input"})
    if unbatched:
        return wrap(out, level)

    def unfold(t):
        return t.reshape(level.size, -1, *t.shape[1:]) if isinstance(t, Tensor) else t
    return wrap(tuple(unfold(t) for t in out) if isinstance(out, tuple) else unfold(out), level)


def conv(func: Callable, level: Level, args: tuple, kwargs: dict):
    """convNd with a batched weight or bias (an ensemble): the samples' channels side by side, groups per sample."""
    name = op_name(func)
    spatial = _SPATIAL[name]
    names = ("input", "weight", "bias", "stride", "padding", "dilation", "groups")
    bound = dict(zip(names, args))
    bound.update(kwargs)
    x, w, bias = bound["input"], bound["weight"], bound.get("bias")
    groups = bound.get("groups", 1)
    rest = {k: bound[k] for k in ("stride", "padding", "dilation") if k in bound}
    B = level.size
    xv = _batch(x, level)
    unbatched = xv.dim() == spatial + 2
    if unbatched:
        xv = xv.unsqueeze(1)
    n = xv.shape[1]
    xv = xv.transpose(0, 1).reshape(n, -1, *xv.shape[3:])  # (N, B*C, *spatial)
    wv = _batch(w, level)
    wv = wv.reshape(-1, *wv.shape[2:])  # (B*O, C/groups, *k)
    bv = None if bias is None else _batch(bias, level).reshape(-1)
    out = func(xv, wv, bv, groups=groups * B, **rest)  # (N, B*O, *spatial')
    out = out.reshape(n, B, -1, *out.shape[2:]).transpose(0, 1)
    return wrap(out.squeeze(1) if unbatched else out, level)


for _n in _SPATIAL:
    RULES[_n] = fold_batch


# -- losses ------------------------------------------------------------------------------------------------------
def _per_sample(loss, level, reduction: str, count=None):
    """A loss computed with reduction='none' over the batch ((B, ...)), reduced per sample."""
    if reduction == "none":
        return wrap(loss, level)
    flat = loss.reshape(level.size, -1)
    if reduction == "sum":
        return wrap(flat.sum(1), level)
    return wrap(flat.sum(1) / count if count is not None else flat.mean(1), level)


def class_loss(func: Callable, level: Level, args: tuple, kwargs: dict):
    """cross_entropy / nll_loss: the samples' (N, C, *d) rows flattened into one call, reduced per sample."""
    a = _bind(func, args, kwargs)
    if a is None or a.get("weight") is not None or a.get("size_average") is not None or \
            a.get("reduce") is not None or _batched(a.get("weight"), level):
        return NotImplemented
    x, target, reduction = a["input"], a["target"], a.get("reduction", "mean")
    if x.dim() == 0 or reduction not in ("none", "mean", "sum"):
        return NotImplemented
    probs = target.dim() == x.dim() and target.dtype.is_floating_point
    xv, tv = _batch(x, level), _batch(target, level)
    if x.dim() == 1:  # one (C,) sample per batch element: the batch is the call's N
        flat_x, flat_t = xv, tv
    else:
        flat_x, flat_t = xv.reshape(-1, *xv.shape[2:]), tv.reshape(-1, *tv.shape[2:])
    extra = {k: a[k] for k in ("ignore_index", "label_smoothing") if k in a}
    loss = func(flat_x, flat_t, reduction="none", **extra)
    loss = loss.reshape(level.size, *(() if x.dim() == 1 else (xv.shape[1],) + tuple(loss.shape[1:])))
    if reduction == "none":
        return wrap(loss, level)
    count = None
    if reduction == "mean" and not probs:
        count = (tv != a.get("ignore_index", -100)).reshape(level.size, -1).sum(1).to(loss.dtype)
    elif reduction == "mean":
        count = flat_x.numel() // flat_x.shape[1 if flat_x.dim() > 1 else 0] // level.size
    return _per_sample(loss, level, reduction, count)


def elementwise_loss(func: Callable, level: Level, args: tuple, kwargs: dict):
    """A loss whose reduction='none' is elementwise (bce, bce_with_logits, l1, mse...): one call, per-sample means."""
    a = _bind(func, args, kwargs)
    if a is None or a.get("size_average") is not None or a.get("reduce") is not None:
        return NotImplemented
    reduction = a.get("reduction", "mean")
    if reduction not in ("none", "mean", "sum"):
        return NotImplemented
    tensors = [v for v in a.values() if isinstance(v, (Tensor, BatchedTensor))]
    rank = max(t.dim() for t in tensors)

    def prep(v):
        if not isinstance(v, (Tensor, BatchedTensor)):
            return v
        v = _batch(v, level)
        r = v.dim() - 1
        return v if r == rank else v.reshape(level.size, *([1] * (rank - r)), *v.shape[1:])
    call = {k: prep(v) for k, v in a.items()}
    call["reduction"] = "none"
    loss = func(**call)
    return _per_sample(loss, level, reduction)


RULES["cross_entropy"] = RULES["nll_loss"] = class_loss
for _n in ("binary_cross_entropy", "binary_cross_entropy_with_logits", "l1_loss", "mse_loss", "smooth_l1_loss",
           "huber_loss", "soft_margin_loss"):
    RULES[_n] = elementwise_loss


# -- normalizations, embedding, attention --------------------------------------------------------------------------
def _affine(out, weight, bias, level, shape_for):
    """`out` (batched) scaled by `weight` and shifted by `bias` through the pointwise rules (either may be batched);
    `shape_for(t)` reshapes a per-channel parameter to broadcast against the sample."""
    out = BatchedTensor(out, level) if not isinstance(out, BatchedTensor) else out
    if weight is not None:
        out = out * shape_for(weight)
    if bias is not None:
        out = out + shape_for(bias)
    return out


def trailing_norm(func: Callable, level: Level, args: tuple, kwargs: dict):
    """layer_norm / rms_norm: over the sample's trailing dims, which the batch dim in front leaves in place."""
    a = _bind(func, args, kwargs)
    if a is None or not _batched(a["input"], level):
        return NotImplemented
    x, weight, bias = a["input"], a.get("weight"), a.get("bias")
    affine_batched = _batched(weight, level) or _batched(bias, level)
    call = dict(a, input=x.value)
    if affine_batched:
        call["weight"] = None
        if "bias" in call:
            call["bias"] = None
    out = func(**call)
    if not affine_batched:
        return wrap(out, level)
    return _affine(out, weight, bias, level, lambda t: t)


def channel_norm(func: Callable, level: Level, args: tuple, kwargs: dict):
    """batch_norm (eval, or without running stats), group_norm, instance_norm: vmap's batch folded into N (eval
    batch_norm), or into the channels (statistics per sample: training batch_norm); affine parameters after."""
    name = op_name(func)
    a = _bind(func, args, kwargs)
    if a is None:
        return NotImplemented
    x, weight, bias = a["input"], a.get("weight"), a.get("bias")
    stats = [a.get("running_mean"), a.get("running_var")]
    if any(_batched(s, level) for s in stats) or not _batched(x, level) or x.dim() < 2:
        return NotImplemented
    v, B = x.value, level.size
    training = a.get("training", False) if name == "batch_norm" else a.get("use_input_stats", True)
    call = dict(a, weight=None, bias=None)
    if name == "batch_norm" and training and any(s is not None for s in stats):
        return NotImplemented  # (running stats written from the batch: the loop refuses it, as torch does)
    if name == "batch_norm" and training or name == "instance_norm" and any(s is not None for s in stats):
        if name == "instance_norm":
            return NotImplemented
        # statistics per sample and channel: the samples' channels side by side, (N, B*C, *)
        n = v.shape[1]
        folded = v.transpose(0, 1).reshape(n, -1, *v.shape[3:])
        out = func(**dict(call, input=folded))
        out = out.reshape(n, B, -1, *out.shape[2:]).transpose(0, 1)
    else:
        out = func(**dict(call, input=v.reshape(-1, *v.shape[2:]))).reshape(v.shape)
    spatial = x.dim() - 2
    return _affine(out, weight, bias, level, lambda t: t.reshape(t.shape[0], *([1] * spatial)))


def embedding(func: Callable, level: Level, args: tuple, kwargs: dict):
    """embedding: batched indices into a shared table (one lookup), or each sample's own table (a flat lookup)."""
    a = _bind(func, args, kwargs)
    if a is None or a.get("max_norm") is not None:
        return NotImplemented
    idx, weight = a["input"], a["weight"]
    if not _batched(weight, level):
        return wrap(func(**dict(a, input=idx.value)), level)
    B = level.size
    w = weight.value  # (B, V, D)
    iv = _batch(idx, level)
    offsets = (_arange(B, iv) * w.shape[1]).reshape(B, *([1] * (iv.dim() - 1)))
    flat = (iv + offsets).reshape(-1)
    out = func(**dict(a, input=flat, weight=w.reshape(-1, w.shape[2])))
    return wrap(out.reshape(*iv.shape, w.shape[2]), level)


def _arange(n: int, like) -> Tensor:
    return ops.arange(n, device=like.device)


def attention(func: Callable, level: Level, args: tuple, kwargs: dict):
    """scaled_dot_product_attention: every batch dim in front of (L, E) is one more batch dim of the call."""
    a = _bind(func, args, kwargs)
    if a is None or a.get("dropout_p", 0.0):
        return NotImplemented
    q, k, v, mask = a["query"], a["key"], a["value"], a.get("attn_mask")
    tensors = [t for t in (q, k, v, mask) if t is not None]
    rank = max(t.dim() for t in tensors)

    def prep(t):
        if t is None:
            return None
        t = _batch(t, level)
        r = t.dim() - 1
        return t if r == rank else t.reshape(level.size, *([1] * (rank - r)), *t.shape[1:])
    return wrap(func(**dict(a, query=prep(q), key=prep(k), value=prep(v), attn_mask=prep(mask))), level)


RULES["layer_norm"] = RULES["rms_norm"] = trailing_norm
for _n in ("batch_norm", "group_norm", "instance_norm"):
    RULES[_n] = channel_norm
RULES["embedding"] = embedding
RULES["scaled_dot_product_attention"] = attention


def pad(func: Callable, level: Level, args: tuple, kwargs: dict):
    """F.pad: the pads reach only the sample's trailing dims; a mode other than 'constant' wants (N, C, *spatial)
    or (C, *spatial), so a sample that has its own N gets vmap's batch folded into it."""
    a = _bind(func, args, kwargs)
    if a is None or not _batched(a["input"], level):
        return NotImplemented
    x, widths, mode = a["input"], a["pad"], a.get("mode", "constant")
    v = x.value
    if mode == "constant" or x.dim() == len(widths) // 2 + 1:
        return wrap(func(**dict(a, input=v)), level)
    out = func(**dict(a, input=v.reshape(-1, *v.shape[2:])))
    return wrap(out.reshape(level.size, -1, *out.shape[1:]), level)


RULES["pad"] = pad

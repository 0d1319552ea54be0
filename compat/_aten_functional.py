"""The torch.* spellings of nn.functional ops, with ATen's signatures (torch.dropout(input, p, train),
torch.layer_norm(input, normalized_shape, weight, bias, eps, cudnn_enable), reductions as the integers
0/1/2 for none/mean/sum...), each forwarding to tidal.nn.functional. As in torch's bindings, a reduction
left out is 0 (none), whatever ATen's schema says.
"""
from __future__ import annotations

import warnings

from .. import nn as _nn
from .. import no_grad
from .. import ops
from ..nn.functional_dropout import _feature_dropout
from ..ops.linalg.namespace import vector_norm
from ..tensor import Tensor

F = _nn.functional
_REDUCTIONS = {0: "none", 1: "mean", 2: "sum"}

__all__ = ["dropout", "dropout_", "alpha_dropout", "alpha_dropout_", "feature_dropout", "feature_dropout_",
           "feature_alpha_dropout", "feature_alpha_dropout_", "batch_norm", "instance_norm", "layer_norm",
           "group_norm", "rms_norm", "embedding", "embedding_renorm_", "kl_div", "pdist", "pixel_shuffle",
           "pixel_unshuffle", "channel_shuffle", "cosine_similarity", "pairwise_distance", "prelu", "rrelu", "rrelu_",
           "bilinear", "hinge_embedding_loss", "margin_ranking_loss", "triplet_margin_loss", "poisson_nll_loss",
           "cosine_embedding_loss", "binary_cross_entropy_with_logits", "ctc_loss", "constant_pad_nd"]


def _reduction(value) -> str:
    if value not in _REDUCTIONS:
        raise ValueError(f"{value} is not a valid value for reduction")
    return _REDUCTIONS[value]


def dropout(input: Tensor, p: float, train: bool) -> Tensor:
    """F.dropout(input, p, train)."""
    return F.dropout(input, p, train)


def dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    """F.dropout in place."""
    return F.dropout(input, p, train, inplace=True) if train else input


def alpha_dropout(input: Tensor, p: float, train: bool) -> Tensor:
    """F.alpha_dropout(input, p, train)."""
    return F.alpha_dropout(input, p, train)


def alpha_dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    """F.alpha_dropout in place."""
    return F.alpha_dropout(input, p, train, inplace=True) if train else input


def feature_dropout(input: Tensor, p: float, train: bool) -> Tensor:
    """Dropout of whole channels: one draw per (batch, channel), scaled by 1 / (1 - p)."""
    return _feature_dropout(input, p, train, False)


def feature_dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    """feature_dropout in place."""
    return _feature_dropout(input, p, train, True)


def feature_alpha_dropout(input: Tensor, p: float, train: bool) -> Tensor:
    """F.feature_alpha_dropout(input, p, train)."""
    return F.feature_alpha_dropout(input, p, train)


def feature_alpha_dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    """F.feature_alpha_dropout in place."""
    return F.feature_alpha_dropout(input, p, train, inplace=True) if train else input


def batch_norm(input: Tensor, weight, bias, running_mean, running_var, training: bool, momentum: float, eps: float,
               cudnn_enabled: bool) -> Tensor:
    """F.batch_norm with ATen's argument order."""
    return F.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def instance_norm(input: Tensor, weight, bias, running_mean, running_var, use_input_stats: bool, momentum: float,
                  eps: float, cudnn_enabled: bool) -> Tensor:
    """F.instance_norm with ATen's argument order."""
    return F.instance_norm(input, running_mean, running_var, weight, bias, use_input_stats, momentum, eps)


def layer_norm(input: Tensor, normalized_shape, weight=None, bias=None, eps: float = 1e-05,
               cudnn_enable: bool = True) -> Tensor:
    """F.layer_norm."""
    return F.layer_norm(input, normalized_shape, weight, bias, eps)


def group_norm(input: Tensor, num_groups: int, weight=None, bias=None, eps: float = 1e-05,
               cudnn_enabled: bool = True) -> Tensor:
    """F.group_norm."""
    return F.group_norm(input, num_groups, weight, bias, eps)


def rms_norm(input: Tensor, normalized_shape, weight=None, eps=None) -> Tensor:
    """F.rms_norm."""
    return F.rms_norm(input, normalized_shape, weight, eps)


def embedding(weight: Tensor, indices: Tensor, padding_idx: int = -1, scale_grad_by_freq: bool = False,
              sparse: bool = False) -> Tensor:
    """F.embedding with ATen's order (weight first; padding_idx -1 means none)."""
    return F.embedding(indices, weight, None if padding_idx == -1 else padding_idx,
                       scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)


def embedding_renorm_(input: Tensor, indices: Tensor, max_norm: float, norm_type: float) -> Tensor:
    """Rescale the rows of input named in indices whose norm exceeds max_norm, in place (no gradient)."""
    with no_grad():
        rows = ops.unique(indices.reshape(-1))
        picked = input[rows]
        norms = vector_norm(picked, norm_type, dim=1, keepdim=True)
        scale = ops.where(norms > max_norm, max_norm / (norms + 1e-7), ops.ones_like(norms))
        input[rows] = picked * scale
    return input


def kl_div(input: Tensor, target: Tensor, reduction: int = 0, *, log_target: bool = False) -> Tensor:
    """F.kl_div with an integer reduction (ATen's 'mean' is the plain mean, without F.kl_div's warning)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return F.kl_div(input, target, reduction=_reduction(reduction), log_target=log_target)


def pdist(input: Tensor, p: float = 2) -> Tensor:
    """F.pdist."""
    return F.pdist(input, p)


def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    """F.pixel_shuffle."""
    return F.pixel_shuffle(input, upscale_factor)


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:
    """F.pixel_unshuffle."""
    return F.pixel_unshuffle(input, downscale_factor)


def channel_shuffle(input: Tensor, groups: int) -> Tensor:
    """F.channel_shuffle."""
    return F.channel_shuffle(input, groups)


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-08) -> Tensor:
    """F.cosine_similarity."""
    return F.cosine_similarity(x1, x2, dim, eps)


def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2, eps: float = 1e-06, keepdim: bool = False) -> Tensor:
    """F.pairwise_distance."""
    return F.pairwise_distance(x1, x2, p, eps, keepdim)


def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """F.prelu."""
    return F.prelu(input, weight)


def rrelu(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False,
          generator=None) -> Tensor:
    """F.rrelu."""
    return F.rrelu(input, lower, upper, training)


def rrelu_(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False,
           generator=None) -> Tensor:
    """F.rrelu in place."""
    return F.rrelu(input, lower, upper, training, inplace=True)


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias=None) -> Tensor:
    """F.bilinear."""
    return F.bilinear(input1, input2, weight, bias)


def hinge_embedding_loss(input: Tensor, target: Tensor, margin: float = 1.0, reduction: int = 0) -> Tensor:
    """F.hinge_embedding_loss with an integer reduction."""
    return F.hinge_embedding_loss(input, target, margin, reduction=_reduction(reduction))


def margin_ranking_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                        reduction: int = 0) -> Tensor:
    """F.margin_ranking_loss with an integer reduction."""
    return F.margin_ranking_loss(input1, input2, target, margin, reduction=_reduction(reduction))


def triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor, margin: float = 1.0, p: float = 2,
                        eps: float = 1e-06, swap: bool = False, reduction: int = 0) -> Tensor:
    """F.triplet_margin_loss with an integer reduction."""
    return F.triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap, reduction=_reduction(reduction))


def poisson_nll_loss(input: Tensor, target: Tensor, log_input: bool, full: bool, eps: float,
                     reduction: int) -> Tensor:
    """F.poisson_nll_loss with every argument given and an integer reduction."""
    return F.poisson_nll_loss(input, target, log_input, full, eps=eps, reduction=_reduction(reduction))


def cosine_embedding_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                          reduction: int = 0) -> Tensor:
    """F.cosine_embedding_loss with an integer reduction."""
    return F.cosine_embedding_loss(input1, input2, target, margin, reduction=_reduction(reduction))


def binary_cross_entropy_with_logits(input: Tensor, target: Tensor, weight=None, pos_weight=None,
                                     reduction: int = 0) -> Tensor:
    """F.binary_cross_entropy_with_logits with an integer reduction."""
    return F.binary_cross_entropy_with_logits(input, target, weight, reduction=_reduction(reduction),
                                              pos_weight=pos_weight)


def ctc_loss(log_probs: Tensor, targets: Tensor, input_lengths, target_lengths, blank: int = 0, reduction: int = 0,
             zero_infinity: bool = False) -> Tensor:
    """F.ctc_loss with an integer reduction."""
    return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank, _reduction(reduction),
                      zero_infinity)


def constant_pad_nd(input: Tensor, pad, value=0) -> Tensor:
    """F.pad in constant mode."""
    return F.pad(input, list(pad), "constant", value)

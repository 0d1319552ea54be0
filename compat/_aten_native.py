"""torch's native_* ATen ops, which return the statistics their backward saves (native_layer_norm gives
(out, mean, rstd)), the backward helper torch exposes (_softmax_backward_data), grid_sampler_2d/3d
(grid_sample with integer modes) and the masked index ops of its decompositions. Each is composed of
tidal ops, so its main output is differentiable.
"""
from __future__ import annotations

from .. import nn as _nn
from ..tensor import Tensor

F = _nn.functional

__all__ = ["native_layer_norm", "native_group_norm", "native_batch_norm", "grid_sampler_2d", "grid_sampler_3d"]
_GRID_MODES = ("bilinear", "nearest", "bicubic")
_GRID_PADDINGS = ("zeros", "border", "reflection")


def _stats(x: Tensor, dims, eps: float) -> tuple:
    """The mean and 1/sqrt(biased variance + eps) over dims, kept."""
    mean = x.mean(dims, keepdim=True)
    return mean, (x.var(dims, correction=0, keepdim=True) + eps).rsqrt()


def native_layer_norm(input: Tensor, normalized_shape, weight: Tensor | None, bias: Tensor | None,
                      eps: float) -> tuple:
    """F.layer_norm with its mean and rstd (shaped as input with the normalized dims kept as 1)."""
    out = F.layer_norm(input, list(normalized_shape), weight, bias, eps)
    dims = tuple(range(input.dim() - len(normalized_shape), input.dim()))
    mean, rstd = _stats(input.detach(), dims, eps)  # torch does not differentiate these two
    return out, mean, rstd


def native_group_norm(input: Tensor, weight: Tensor | None, bias: Tensor | None, N: int, C: int, HxW: int,
                      group: int, eps: float) -> tuple:
    """F.group_norm with its mean and rstd, each of shape (N, group) (torch differentiates these)."""
    out = F.group_norm(input, group, weight, bias, eps)
    mean, rstd = _stats(input.reshape(N, group, -1), (2,), eps)
    return out, mean.reshape(N, group), rstd.reshape(N, group)


def native_batch_norm(input: Tensor, weight: Tensor | None, bias: Tensor | None, running_mean: Tensor | None,
                      running_var: Tensor | None, training: bool, momentum: float, eps: float) -> tuple:
    """F.batch_norm with the batch mean and invstd it saves (empty when not training)."""
    out = F.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)
    if not training:
        empty = input.new_empty((0,))
        return out, empty, empty.clone()
    dims = (0,) + tuple(range(2, input.dim()))
    mean, invstd = _stats(input.detach(), dims, eps)  # torch does not differentiate these two
    return out, mean.reshape(-1), invstd.reshape(-1)


def _native_batch_norm_legit(input: Tensor, weight: Tensor | None, bias: Tensor | None, *args) -> tuple:
    """native_batch_norm; the overload (input, weight, bias, training, momentum, eps) keeps no running stats."""
    if len(args) == 3:
        return native_batch_norm(input, weight, bias, None, None, *args)
    return native_batch_norm(input, weight, bias, *args)


def grid_sampler_2d(input: Tensor, grid: Tensor, interpolation_mode: int, padding_mode: int,
                    align_corners: bool) -> Tensor:
    """F.grid_sample on 4-D input, its modes given as ATen's integers."""
    return F.grid_sample(input, grid, _GRID_MODES[interpolation_mode], _GRID_PADDINGS[padding_mode], align_corners)


def grid_sampler_3d(input: Tensor, grid: Tensor, interpolation_mode: int, padding_mode: int,
                    align_corners: bool) -> Tensor:
    """F.grid_sample on 5-D input, its modes given as ATen's integers."""
    return F.grid_sample(input, grid, _GRID_MODES[interpolation_mode], _GRID_PADDINGS[padding_mode], align_corners)


def _clamped(input: Tensor, indices) -> tuple:
    """Each index clamped into its dim (the masked-out positions may hold anything)."""
    return tuple(None if i is None else i.clamp(-input.shape[d], input.shape[d] - 1) for d, i in enumerate(indices))


def _unsafe_masked_index(input: Tensor, mask: Tensor, indices, fill) -> Tensor:
    """input[indices] where mask holds, fill elsewhere."""
    picked = input[tuple(slice(None) if i is None else i for i in _clamped(input, indices))]
    return picked.masked_fill(~mask, fill)


def _unsafe_masked_index_put_accumulate(input: Tensor, mask: Tensor, indices, values: Tensor) -> Tensor:
    """input with values added at indices where mask holds."""
    return input.index_put(_clamped(input, indices), values.masked_fill(~mask, 0), accumulate=True)


def _softmax_backward_data(grad_output: Tensor, output: Tensor, dim: int, input_dtype) -> Tensor:
    """The gradient of softmax's input from its output and the output's gradient."""
    grad = output * (grad_output - (grad_output * output).sum(dim, keepdim=True))
    return grad.to(input_dtype)

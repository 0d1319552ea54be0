"""Dropout: F.dropout, its channel (1d/2d/3d) and alpha variants."""
from __future__ import annotations

import math
import warnings

from .. import ops
from ..tensor import Tensor
from ._util import check_probability

__all__ = ["dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout"]


def _apply_noise(input: Tensor, noise: Tensor, inplace: bool) -> Tensor:
    return input.mul_(noise) if inplace else input * noise


def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero each element with probability p and scale the rest by 1/(1-p) (identity when not training)."""
    check_probability(p)
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return _apply_noise(input, ops.zeros_like(input), inplace)
    noise = ops.empty_like(input).bernoulli_(1.0 - p).div_(1.0 - p)
    return _apply_noise(input, noise, inplace)


def _feature_dropout(input: Tensor, p: float, training: bool, inplace: bool) -> Tensor:
    """ATen's feature_dropout: one draw per input[i, j], shared over every later dim."""
    check_probability(p)
    if not training or p == 0.0 or input.numel() == 0:
        return input
    if input.dim() < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    noise_shape = tuple(input.shape[:2]) + (1,) * (input.dim() - 2)
    if p == 1.0:
        noise = ops.zeros(noise_shape, dtype=input.dtype, device=input.device)
    else:
        noise = ops.empty(noise_shape, dtype=input.dtype, device=input.device).bernoulli_(1.0 - p).div_(1.0 - p)
    return _apply_noise(input, noise, inplace)


def _unbatched_feature_dropout(input: Tensor, p: float, training: bool, inplace: bool, batched: bool) -> Tensor:
    """feature_dropout on `input`, given a leading batch dim of one first when it has none."""
    if batched:
        return _feature_dropout(input, p, training, inplace)
    out = _feature_dropout(input.unsqueeze(0), p, training, inplace)
    return input if inplace else out.squeeze(0)


def _warn_spatial(name: str, dim: int, spatial: int) -> None:
    """torch's deprecation warning for channel dropout on inputs of another rank (it still computes)."""
    warnings.warn(f"{name}: Received a {dim}-D input to {name}, which is deprecated and will result in an error in "
                  "a future release. To retain the behavior and silence this warning, please use dropout instead. "
                  f"Note that {name} exists to provide channel-wise dropout on inputs with {spatial} spatial "
                  f"dimensions, a channel dimension, and an optional batch dimension (i.e. {spatial + 1}D or "
                  f"{spatial + 2}D inputs).", stacklevel=3)


def dropout1d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Channel dropout for (N, C, L) or (C, L) inputs."""
    check_probability(p)
    if input.dim() not in (2, 3):
        raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a {input.dim()}D input. Note that "
                           "dropout1d exists to provide channel-wise dropout on inputs with 1 spatial dimension, a "
                           "channel dimension, and an optional batch dimension (i.e. 2D or 3D inputs).")
    return _unbatched_feature_dropout(input, p, training, inplace, input.dim() == 3)


def dropout2d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Channel dropout for (N, C, H, W) inputs; like torch, a 3D input is taken as (N, C, L), with a warning."""
    check_probability(p)
    if input.dim() not in (3, 4):
        _warn_spatial("dropout2d", input.dim(), 2)
    if input.dim() == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout behavior "
                      "is desired - input is interpreted as shape (N, C, L), where C is the channel dim. This behavior "
                      "will change in a future release to interpret the input as one without a batch dimension, i.e. "
                      "shape (C, H, W). To maintain the 1D channel-wise dropout behavior, please switch to using "
                      "dropout1d instead.", stacklevel=2)
    return _feature_dropout(input, p, training, inplace)


def dropout3d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Channel dropout for (N, C, D, H, W) or (C, D, H, W) inputs."""
    check_probability(p)
    if input.dim() not in (4, 5):
        _warn_spatial("dropout3d", input.dim(), 3)
    return _unbatched_feature_dropout(input, p, training, inplace, input.dim() == 5)


_SELU_ALPHA_PRIME = -1.7580993408473766  # -selu_scale * selu_alpha: the value SELU saturates to


def _alpha_dropout(input: Tensor, p: float, training: bool, inplace: bool, noise_shape: tuple) -> Tensor:
    check_probability(p)
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return _apply_noise(input, ops.zeros_like(input), inplace)
    keep = ops.empty(noise_shape, dtype=input.dtype, device=input.device).bernoulli_(1.0 - p)
    # affine correction so that mean and variance are kept (Klambauer et al., 2017)
    a = 1.0 / math.sqrt((_SELU_ALPHA_PRIME ** 2 * p + 1) * (1 - p))
    b = -a * _SELU_ALPHA_PRIME * p
    out = (input * keep + _SELU_ALPHA_PRIME * (1 - keep)) * a + b
    return input.copy_(out) if inplace else out


def alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False) -> Tensor:
    """Dropout that keeps a SELU network's self-normalizing mean and variance."""
    return _alpha_dropout(input, p, training, inplace, tuple(input.shape))


def feature_alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False) -> Tensor:
    """alpha_dropout with one draw per (batch, channel)."""
    shape = tuple(input.shape[:2]) + (1,) * (input.dim() - 2)
    return _alpha_dropout(input, p, training, inplace, shape)

"""tidal.nn.functional: the stateless layer functions that nn modules call.

Everything here is a composite of tidal ops (so it fuses and differentiates through the ops'
backward formulas). This file holds activations, linear maps, softmax and dropout; the rest is
grouped by concern in functional_norm (normalization), functional_loss (losses),
functional_attention (attention) and functional_shape (embedding, padding, resampling,
distances), all re-exported here.
"""
from __future__ import annotations

import math
import warnings

from .. import ops
from ..ops.elementwise import activations as _act
from ..ops.complex_numbers.tensors import refuse_complex
from ..ops.elementwise.plans import torch_name
from ..ops.dispatch.factory_args import TYPEMETA_NAME
from ..ops.dispatch import autocast as _ac
from ..ops.dispatch.node_names import torch_node
from ..tensor import Tensor
from ..tensor import dtype as dt
from ._util import check_probability

# activations defined in the op library (relu, gelu, silu, elu, softplus, hardswish, ...)
for _name in _act.FUNCTIONAL:
    # the public op when there is one; either way it also takes global tensors (DTensors)
    if hasattr(ops, _name):
        globals()[_name] = getattr(ops, _name)
    else:
        globals()[_name] = ops._accepting_global(getattr(_act, _name), _name)
        globals()[_name].__module__ = __name__   # pickled by reference as tidal.nn.functional.<name>

__all__ = list(_act.FUNCTIONAL) + [
    "linear", "bilinear", "softmax", "log_softmax", "softmin", "glu", "prelu", "rrelu", "rrelu_", "dropout",
    "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout", "gumbel_softmax"]


# -- linear maps ---------------------------------------------------------------------------------
_ROUNDED_ONCE = (dt.bfloat16, dt.float16)


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """y = input @ weight.T + bias."""
    if _ac.ACTIVE[0]:
        input, weight, bias = _ac.lower(input, weight, bias)
    if bias is not None:
        _check_addmm(input, weight, bias)
    if bias is not None and input.dtype in _ROUNDED_ONCE and bias.dim() == 1 and input.dim() >= 1 \
            and (input.dim() == 2 or input.is_contiguous()):
        # torch's fused addmm: the bias joins the float32 accumulator, so a half/bfloat16 result rounds once
        flat = ops.addmm(bias, input.reshape(-1, input.shape[-1]), weight.t())
        return flat if input.dim() == 2 else flat.view(*input.shape[:-1], flat.shape[-1])
    out = ops.matmul(input, weight.t())
    if bias is None:
        return out
    # torch's node: addmm for a batch of vectors, else the view around it
    return torch_node(out + bias, "addmm" if input.dim() == 2 else "view", input, weight, bias)


def _check_addmm(input: Tensor, weight: Tensor, bias: Tensor) -> None:
    """torch's errors for linear with a bias (its addmm on the input seen as 2-D): no silent dtype promotion."""
    if input.dim() == 0 or weight.dim() == 0:
        raise RuntimeError(f"both arguments to linear need to be at least 1D, but they are {input.dim()}D and "
                           f"{weight.dim()}D")
    if bias.dtype is not weight.dtype:  # (addmm checks its self, the bias, first)
        raise RuntimeError(f"self and mat2 must have the same dtype, but got {torch_name(bias.dtype)} and "
                           f"{torch_name(weight.dtype)}")
    if input.dtype is not weight.dtype:
        raise RuntimeError(f"mat1 and mat2 must have the same dtype, but got {torch_name(input.dtype)} and "
                           f"{torch_name(weight.dtype)}")
    if bias.dim() != 1 or weight.dim() != 2 or bias.shape[0] != weight.shape[0]:
        rows = math.prod(input.shape[:-1])
        bias.expand(rows, weight.shape[0] if weight.dim() == 2 else 1)  # torch's expand error when it can't


def _check_bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Tensor | None) -> None:
    """torch's bilinear checks, in its order: dtypes, ranks, each batch dim, then sizes against weight's."""
    named = [("input1", input1), ("input2", input2), ("weight", weight)] + ([("bias", bias)] if bias is not None
                                                                           else [])
    if len({x.dtype for _, x in named}) > 1:  # named as C++ types
        raise RuntimeError("All tensors must have the same dtype, got " + ", ".join(
            f"{name}: {TYPEMETA_NAME.get(x.dtype, torch_name(x.dtype))}" for name, x in named))
    if input1.dim() != input2.dim():
        raise RuntimeError(f"bilinear(): input dimensions do not match: got {input1.dim()} and {input2.dim()}")
    for d in range(input1.dim() - 1):
        if input1.shape[d] != input2.shape[d]:
            raise RuntimeError(f"bilinear(): input batch dimensions do not match at dim {d}: got {input1.shape[d]} "
                               f"and {input2.shape[d]}")
    for name, x, d in (("input1", input1, 1), ("input2", input2, 2)):
        if x.size(-1) != weight.size(d):
            raise RuntimeError(f"bilinear(): {name} size does not match weight size: got {x.size(-1)} but "
                               f"expected {weight.size(d)}")
    if bias is not None and bias.size(0) != weight.size(0):
        raise RuntimeError(f"bilinear(): bias size does not match weight size: got {bias.size(0)} but expected "
                           f"{weight.size(0)}")


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """y[..., o] = sum_ij input1[..., i] * weight[o, i, j] * input2[..., j] + bias[o]."""
    _check_bilinear(input1, input2, weight, bias)
    out_f, in1, in2 = weight.shape
    # (..., i) @ (i, o*j) -> (..., o, j), then contract j with input2
    mixed = ops.matmul(input1, weight.permute(1, 0, 2).reshape(in1, out_f * in2))
    mixed = mixed.reshape(tuple(input1.shape[:-1]) + (out_f, in2))
    out = (mixed * input2.unsqueeze(-2)).sum(-1, dtype=mixed.dtype)  # (a sum would make integer inputs int64)
    return out if bias is None else out + bias


# -- softmax family -------------------------------------------------------------------------------
def _softmax_dim(name: str, input: Tensor, dim, stacklevel: int) -> int:
    if dim is not None:
        return dim
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. "
                  "Change the call to include dim=X as an argument.", stacklevel=stacklevel)
    return 0 if input.dim() in (0, 1, 3) else 1


def softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype: dt.dtype | None = None) -> Tensor:
    """exp(x) / sum(exp(x)) along `dim`."""
    return ops.softmax(input, _softmax_dim("softmax", input, dim, _stacklevel), dtype=dtype)


def log_softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3,
                dtype: dt.dtype | None = None) -> Tensor:
    """log(softmax(x)) along `dim`, computed stably."""
    return ops.log_softmax(input, _softmax_dim("log_softmax", input, dim, _stacklevel), dtype=dtype)


def softmin(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype: dt.dtype | None = None) -> Tensor:
    """softmax(-x) along `dim`."""
    x = input if dtype is None else input.to(dtype)
    return ops.softmax(-x, _softmax_dim("softmin", input, dim, _stacklevel))


def gumbel_softmax(logits: Tensor, tau: float = 1, hard: bool = False, eps: float = 1e-10, dim: int = -1) -> Tensor:
    """A sample from the Gumbel-softmax distribution (straight-through one-hot when `hard`)."""
    gumbels = -ops.empty_like(logits).exponential_().log()
    y_soft = ops.softmax((logits + gumbels) / tau, dim)
    if not hard:
        return y_soft
    index = y_soft.argmax(dim, keepdim=True)
    y_hard = ops.zeros_like(logits).scatter_(dim, index, 1.0)
    return y_hard - y_soft.detach() + y_soft


def glu(input: Tensor, dim: int = -1) -> Tensor:
    """a * sigmoid(b) where a, b are the halves of `input` along `dim`."""
    if input.dim() == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    size = input.shape[dim]
    if size % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {dim % input.dim()} is size {size}")
    if input.dtype.category != dt.FLOAT:  # (integers, bool, complex: torch's kernel has no code for them)
        raise NotImplementedError(f"\"glu_cpu\" not implemented for '{torch_name(input.dtype)}'")
    a, b = input.narrow(dim, 0, size // 2), input.narrow(dim, size // 2, size // 2)  # (split refuses a size of 0)
    return torch_node(a * ops.sigmoid(b), "glu", input)


def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """max(0, x) + weight * min(0, x), with one weight per channel (dim 1) or one shared."""
    if (input.dtype.is_complex or weight.dtype.is_complex) and input.dtype is not weight.dtype:
        raise RuntimeError(f"prelu: Type promoting not supported. Got {torch_name(input.dtype)} and "
                           f"{torch_name(weight.dtype)}")
    if weight.dim() > 1:
        raise RuntimeError(f"prelu: Expected `weight` to be a scalar or 1D tensor, but got: ndim = {weight.dim()}")
    if weight.numel() != 1:
        if input.dim() == 0:
            raise RuntimeError("Not allow zero-dim input tensor.")
        channels = input.shape[1] if input.dim() >= 2 else 1
        if weight.numel() != channels:
            raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found parameter numbers = "
                               f"{weight.numel()} and channel size = {channels}.")
        if input.dim() >= 2:
            weight = weight.reshape((channels,) + (1,) * (input.dim() - 2))
    elif input.dim() == 0:  # one weight on a 0-d input: the result stays 0-d, as in PyTorch
        weight = weight.reshape(())
    refuse_complex(input, "\"prelu_cpu\" not implemented for '{name}'")
    if _ac.ACTIVE[0]:  # on torch's autocast list of lower-precision ops
        input, weight = _ac.lower(input, weight)
    return torch_node(ops.where(input > 0, input, weight * input), "prelu_kernel", input, weight)


def rrelu(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False,
          inplace: bool = False) -> Tensor:
    """Leaky ReLU with a random slope in [lower, upper] when training, their mean otherwise."""
    if lower > upper:
        raise RuntimeError("Lower bound should be less than or equal to the upper bound")
    if not training:
        return _act.leaky_relu(input, (lower + upper) / 2, inplace)
    from ..ops.random.sampling import rrelu_noise  # torch's draws: one slope per element <= 0
    out = input * rrelu_noise(input, lower, upper)
    return input.copy_(out) if inplace else out


def rrelu_(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False) -> Tensor:
    """rrelu in place."""
    return rrelu(input, lower, upper, training, inplace=True)


# -- dropout --------------------------------------------------------------------------------------
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


from .functional_norm import *  # noqa: E402,F401,F403
from .functional_norm import __all__ as _norm_all  # noqa: E402
from .functional_loss import *  # noqa: E402,F401,F403
from .functional_loss import __all__ as _loss_all  # noqa: E402
from .functional_shape import *  # noqa: E402,F401,F403
from .functional_shape import __all__ as _shape_all  # noqa: E402
from .functional_attention import *  # noqa: E402,F401,F403
from .functional_attention import __all__ as _attention_all  # noqa: E402

from ..ops.windowed.conv import conv1d, conv2d, conv_transpose1d, conv_transpose2d  # noqa: E402,F401
from ..ops.windowed.fold import fold, unfold  # noqa: E402,F401
from ..ops.windowed.adaptive_pool import (adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_max_pool1d,
                                          adaptive_max_pool2d)
from ..ops.windowed.pool import avg_pool1d, avg_pool2d, max_pool1d, max_pool2d
from ..ops.windowed import conv as _conv, pool as _pool  # noqa: E402

__all__ += _norm_all + _loss_all + _shape_all + _attention_all + _conv.__all__ + _pool.__all__
from ..ops.windowed.conv import conv3d, conv_tbc, conv_transpose3d  # noqa: E402,F401
from ..ops.windowed.pool import *  # noqa: E402,F401,F403
from ..ops.windowed.adaptive_pool import *  # noqa: E402,F401,F403
from .functional_pool import *  # noqa: E402,F401,F403
from .functional_pool import __all__ as _pool_extra_all  # noqa: E402
from .functional_sparse import *  # noqa: E402,F401,F403
from .functional_sparse import __all__ as _sparse_all  # noqa: E402

__all__ += _pool_extra_all + _sparse_all
from .functional_grid import *  # noqa: E402,F401,F403
from .functional_grid import __all__ as _grid_all  # noqa: E402
from .functional_distance import *  # noqa: E402,F401,F403
from .functional_distance import __all__ as _distance_all  # noqa: E402

__all__ += _grid_all + _distance_all
from .functional_grouped_mm import grouped_mm  # noqa: E402,F401

__all__ += ["grouped_mm"]
from . import grad  # noqa: E402,F401 - torch.nn.functional.grad is torch.nn.grad
# torch.nn.functional's __torch_function__ helpers, for code written on top of it
from ..ops.dispatch.torch_function import (handle_torch_function, has_torch_function, has_torch_function_unary,
                                           has_torch_function_variadic)

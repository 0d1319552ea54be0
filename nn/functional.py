"""tidal.nn.functional: the stateless layer functions that nn modules call.

Everything here is a composite of tidal ops (so it fuses and differentiates through the ops'
backward formulas). This file holds activations, linear maps, softmax and dropout; the rest is
grouped by concern in functional_norm (normalization), functional_loss (losses),
functional_attention (attention) and functional_shape (embedding, padding, resampling,
distances), all re-exported here.
"""
from __future__ import annotations

import warnings

from .. import ops
from ..ops.dispatch.node_names import torch_node
from ..ops.elementwise import activations as _act
from ..ops.elementwise.activations import prelu
from ..ops.elementwise.plans import torch_name
from ..tensor import Tensor
from ..tensor import dtype as dt
from .functional_dropout import (alpha_dropout, dropout, dropout1d, dropout2d, dropout3d,  # noqa: F401
                                 feature_alpha_dropout)
from .functional_linear import bilinear, linear  # noqa: F401

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


def rrelu(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False,
          inplace: bool = False) -> Tensor:
    """Leaky ReLU with a random slope in [lower, upper] when training, their mean otherwise."""
    if lower > upper:
        raise RuntimeError("Lower bound should be less than or equal to the upper bound")
    if not training:  # (named as torch's RreluWithNoiseBackward0/1; a view written in place keeps CopySlices)
        out = _act.leaky_relu(input, (lower + upper) / 2, inplace)
        if not inplace:
            return torch_node(out, "rrelu_with_noise", input)
        return out if out._base is not None else torch_node(out, "RreluWithNoiseBackward1")
    from ..ops.random.sampling import rrelu_noise  # torch's draws: one slope per element <= 0
    out = input * rrelu_noise(input, lower, upper)
    return input.copy_(out) if inplace else torch_node(out, "rrelu_with_noise", input)


def rrelu_(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False) -> Tensor:
    """rrelu in place."""
    return rrelu(input, lower, upper, training, inplace=True)


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

# The convolutions, pools and fold/unfold as the public ops functions (ops/__init__.py's wrappers, not the raw
# ones imported above): a tensor-like's __torch_function__ (vmap's batched values) and global tensors reach them
from ..ops.windowed import adaptive_pool as _adaptive_pool, fold as _fold  # noqa: E402
for _name in _conv.__all__ + _pool.__all__ + _adaptive_pool.__all__ + _fold.__all__:
    if _name in globals() and hasattr(ops, _name):
        globals()[_name] = getattr(ops, _name)
# torch.nn.functional's __torch_function__ helpers, for code written on top of it
from ..ops.dispatch.torch_function import (asking_tensor_likes, handle_torch_function, has_torch_function,
                                           has_torch_function_unary, has_torch_function_variadic)

# the norms, embedding, attention and pad attach their nodes by hand: on vmap's batched values they refuse, and the
# call goes to their batching rules (func/batching_nn.py)
for _name in ("layer_norm", "rms_norm", "group_norm", "batch_norm", "instance_norm", "embedding",
              "scaled_dot_product_attention", "pad"):
    globals()[_name] = asking_tensor_likes(globals()[_name])

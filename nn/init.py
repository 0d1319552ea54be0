"""Weight initialization, in place and outside the graph, drawing from tidal's generators.

`tidal.manual_seed` (or a `generator=`) makes every initializer reproducible. Fan and gain
follow PyTorch's definitions, so the distributions match torch's.
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from .. import ops
from ..autograd import no_grad
from ..tensor import Tensor
from ..tensor import dtype as dt

__all__ = ["calculate_gain", "uniform_", "normal_", "trunc_normal_", "constant_", "ones_", "zeros_", "eye_",
           "dirac_", "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_", "orthogonal_",
           "sparse_", "uniform", "normal", "constant", "eye", "dirac", "xavier_uniform", "xavier_normal",
           "kaiming_uniform", "kaiming_normal", "orthogonal", "sparse"]

_LINEAR_LIKE = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
                "conv_transpose3d", "sigmoid")


def calculate_gain(nonlinearity: str, param=None) -> float:
    """The recommended gain (std multiplier) for a nonlinearity."""
    if nonlinearity in _LINEAR_LIKE:
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif isinstance(param, (int, float)) and not isinstance(param, bool):
            slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _calculate_fan_in_and_fan_out(tensor: Tensor) -> tuple:
    """(fan_in, fan_out): dim 1 and dim 0 sizes, times the receptive field (the product of dims 2+)."""
    if tensor.dim() < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 dimensions")
    receptive = 1
    for s in tensor.shape[2:]:
        receptive *= s
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def _calculate_correct_fan(tensor: Tensor, mode: str) -> int:
    mode = mode.lower()
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of ['fan_in', 'fan_out']")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


@no_grad()
def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0, generator=None) -> Tensor:
    """Fill with U(a, b)."""
    return tensor.uniform_(a, b, generator=generator)


@no_grad()
def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, generator=None) -> Tensor:
    """Fill with N(mean, std^2)."""
    return tensor.normal_(mean, std, generator=generator)


@no_grad()
def trunc_normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0, b: float = 2.0,
                  generator=None) -> Tensor:
    """Fill with N(mean, std^2) truncated to [a, b] (torch's rejection sampling, draw for draw)."""
    if mean < a - 2 * std or mean > b + 2 * std:
        warnings.warn("mean is more than 2 std from [a, b] in nn.init.trunc_normal_. "
                      "The distribution of values may be incorrect.", stacklevel=2)

    if a > b:  # torch samples uniformly in [a, b] here: uniform_'s refusal, in its words
        return tensor.uniform_(a, b, generator=generator)

    def cdf(x: float) -> float:
        return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0
    # torch's rejection samplers, step for step, so the draws from the generator are torch's
    if cdf((b - mean) / std) - cdf((a - mean) / std) > 0.3:  # normals, redrawn where outside [a, b]
        lo, hi = (ops.tensor(v, dtype=tensor.dtype).item() for v in (a, b))
        result = tensor.normal_(mean, std, generator=generator)
        while True:
            outside = (result < lo) | (result > hi)
            if not bool(outside.any()):
                break
            result = ops.where(outside, ops.empty_like(result).normal_(mean, std, generator=generator), result)
        return tensor if result is tensor else tensor.copy_(result)
    log_peak = -0.5 * ((max(a, min(mean, b)) - mean) / std) ** 2  # uniforms on [a, b], kept by the density's ratio

    def log_density(values: Tensor) -> Tensor:
        return values.sub_(mean).div_(std).pow_(2).mul_(-0.5).sub_(log_peak)
    candidates, accept = ops.empty_like(tensor), ops.empty_like(tensor)
    tensor.uniform_(a, b, generator=generator)
    pending = accept.uniform_(generator=generator).log_().gt(log_density(candidates.copy_(tensor)))
    result = tensor
    while bool(pending.any()):
        candidates.uniform_(a, b, generator=generator)
        result = ops.where(pending, candidates, result)
        pending = ops.where(pending, accept.uniform_(generator=generator).log_().gt(log_density(candidates)), pending)
    return tensor if result is tensor else tensor.copy_(result)


# torch's private helpers under their names (older code and copies of torch's own init call them)
def _no_grad_uniform_(tensor: Tensor, a: float, b: float, generator=None) -> Tensor:
    """uniform_ without recording."""
    return uniform_(tensor, a, b, generator)


def _no_grad_normal_(tensor: Tensor, mean: float, std: float, generator=None) -> Tensor:
    """normal_ without recording."""
    return normal_(tensor, mean, std, generator)


def _no_grad_trunc_normal_(tensor: Tensor, mean: float, std: float, a: float, b: float, generator=None) -> Tensor:
    """trunc_normal_ without recording."""
    return trunc_normal_(tensor, mean, std, a, b, generator)


def _no_grad_fill_(tensor: Tensor, val: float) -> Tensor:
    """constant_ without recording."""
    return constant_(tensor, val)


def _no_grad_zero_(tensor: Tensor) -> Tensor:
    """zeros_ without recording."""
    return zeros_(tensor)


@no_grad()
def constant_(tensor: Tensor, val: float) -> Tensor:
    """Fill with `val`."""
    return tensor.fill_(val)


def ones_(tensor: Tensor) -> Tensor:
    """Fill with 1."""
    return constant_(tensor, 1.0)


def zeros_(tensor: Tensor) -> Tensor:
    """Fill with 0."""
    return constant_(tensor, 0.0)


@no_grad()
def eye_(tensor: Tensor) -> Tensor:
    """Fill a 2-D tensor with the identity matrix."""
    if tensor.dim() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    return tensor.copy_(ops.eye(tensor.shape[0], tensor.shape[1], dtype=tensor.dtype, device=tensor.device))


@no_grad()
def dirac_(tensor: Tensor, groups: int = 1) -> Tensor:
    """Fill a 3/4/5-D conv weight so that the convolution is the identity (per group)."""
    dims = tensor.dim()
    if dims not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    sizes = tensor.shape
    if sizes[0] % groups != 0:
        raise ValueError("dim 0 must be divisible by groups")
    out_per_group = sizes[0] // groups
    arr = np.zeros(tuple(sizes), dtype=np.float64)
    centre = tuple(s // 2 for s in sizes[2:])
    for g in range(groups):
        for d in range(min(out_per_group, sizes[1])):
            arr[(g * out_per_group + d, d) + centre] = 1
    return tensor.copy_(Tensor._from_array(arr).to(device=tensor.device))


@no_grad()
def xavier_uniform_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    """U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    bound = gain * math.sqrt(2.0 / float(fan_in + fan_out)) * math.sqrt(3.0)
    return tensor.uniform_(-bound, bound, generator=generator)


@no_grad()
def xavier_normal_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    """N(0, std^2) with std = gain * sqrt(2 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return tensor.normal_(0.0, gain * math.sqrt(2.0 / float(fan_in + fan_out)), generator=generator)


def _kaiming_std(tensor: Tensor, a: float, mode: str, nonlinearity: str) -> float | None:
    if tensor.numel() == 0:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=3)
        return None
    return calculate_gain(nonlinearity, a) / math.sqrt(_calculate_correct_fan(tensor, mode))


@no_grad()
def kaiming_uniform_(tensor: Tensor, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu",
                     generator=None) -> Tensor:
    """U(-b, b) with b = gain * sqrt(3 / fan) (He et al., 2015)."""
    std = _kaiming_std(tensor, a, mode, nonlinearity)
    if std is None:
        return tensor
    bound = math.sqrt(3.0) * std
    return tensor.uniform_(-bound, bound, generator=generator)


@no_grad()
def kaiming_normal_(tensor: Tensor, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu",
                    generator=None) -> Tensor:
    """N(0, std^2) with std = gain / sqrt(fan) (He et al., 2015)."""
    std = _kaiming_std(tensor, a, mode, nonlinearity)
    if std is None:
        return tensor
    return tensor.normal_(0.0, std, generator=generator)


@no_grad()
def orthogonal_(tensor: Tensor, gain: float = 1, generator=None) -> Tensor:
    """A (semi-)orthogonal matrix (dims 1+ flattened), times gain."""
    if tensor.dim() < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    # drawn in the tensor's dtype, as torch's new_empty(...).normal_(): the same words from the generator
    draw = ops.empty((rows, cols), dtype=tensor.dtype, device=tensor.device).normal_(0.0, 1.0, generator=generator)
    a = draw.cpu()._host_array().astype(np.float64)
    a = a.T if rows < cols else a
    # QR on the host (no QR op yet); signs of R's diagonal make Q uniformly distributed
    q, r = np.linalg.qr(a)
    q = q * np.sign(np.diag(r))
    q = q.T if rows < cols else q
    values = Tensor._from_array(np.ascontiguousarray(q) * gain).to(device=tensor.device)
    return tensor.copy_(values.reshape(tuple(tensor.shape)))


@no_grad()
def sparse_(tensor: Tensor, sparsity: float, std: float = 0.01, generator=None) -> Tensor:
    """N(0, std^2) with a fraction `sparsity` of each column set to zero."""
    if tensor.dim() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    rows, cols = tensor.shape
    num_zeros = int(math.ceil(sparsity * rows))
    tensor.normal_(0.0, std, generator=generator)
    # torch's loop: per column the first num_zeros rows of a randperm (from the default generator, as torch's)
    for col in range(cols):
        tensor[ops.randperm(rows)[:num_zeros], col] = 0
    return tensor


def _deprecated(fn):
    old = fn.__name__[:-1]

    def wrapper(*args, **kwargs):
        warnings.warn(f"`nn.init.{old}` is now deprecated in favor of `nn.init.{fn.__name__}`.", FutureWarning,
                      stacklevel=2)
        return fn(*args, **kwargs)
    wrapper.__name__ = old
    wrapper.__doc__ = f"Deprecated alias of {fn.__name__}."
    return wrapper


uniform, normal, constant, eye, dirac = (_deprecated(f) for f in (uniform_, normal_, constant_, eye_, dirac_))
xavier_uniform, xavier_normal = _deprecated(xavier_uniform_), _deprecated(xavier_normal_)
kaiming_uniform, kaiming_normal = _deprecated(kaiming_uniform_), _deprecated(kaiming_normal_)
orthogonal, sparse = _deprecated(orthogonal_), _deprecated(sparse_)


def default_layer_init_(weight: Tensor, bias: Tensor | None) -> None:
    """PyTorch's default for Linear and Conv layers: kaiming_uniform_(a=sqrt(5)) on the weight,
    U(-1/sqrt(fan_in), 1/sqrt(fan_in)) on the bias."""
    kaiming_uniform_(weight, a=math.sqrt(5))
    if bias is not None:
        fan_in, _ = _calculate_fan_in_and_fan_out(weight)
        bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
        uniform_(bias, -bound, bound)

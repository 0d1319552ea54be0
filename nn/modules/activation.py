"""Activation modules: each stores its hyperparameters and calls the matching functional."""
from __future__ import annotations

import warnings

from ... import ops
from ...tensor import Tensor
from .. import functional as F
from .. import init as _init
from ..module import Module
from ..parameter import Parameter

__all__ = ["Threshold", "ReLU", "ReLU6", "RReLU", "Hardtanh", "Sigmoid", "Tanh", "GELU", "SiLU", "Mish", "ELU",
           "CELU", "SELU", "GLU", "LeakyReLU", "LogSigmoid", "Softplus", "Softshrink", "Hardshrink", "Softsign",
           "Tanhshrink", "Hardsigmoid", "Hardswish", "PReLU", "Softmax", "Softmin", "LogSoftmax", "Softmax2d"]


def _inplace_suffix(inplace: bool, first: bool = False) -> str:
    """The ', inplace=True' that PyTorch's reprs append (bare 'inplace=True' when it is the only field)."""
    if not inplace:
        return ""
    return "inplace=True" if first else ", inplace=True"


class _Elementwise(Module):
    """An activation with no hyperparameters but `inplace`; subclasses name their functional in `_fn`."""

    _fn = None
    _shows_inplace = True

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        """The activation applied elementwise."""
        return type(self)._fn(input, inplace=self.inplace)

    def extra_repr(self) -> str:
        return _inplace_suffix(self.inplace, first=True) if self._shows_inplace else ""


class ReLU(_Elementwise):
    """max(0, x)."""

    _fn = staticmethod(F.relu)


class SiLU(_Elementwise):
    """x * sigmoid(x)."""

    _fn = staticmethod(F.silu)


class Mish(_Elementwise):
    """x * tanh(softplus(x))."""

    _fn = staticmethod(F.mish)


class SELU(_Elementwise):
    """scale * (max(0, x) + min(0, alpha * (exp(x) - 1)))."""

    _fn = staticmethod(F.selu)


class Hardsigmoid(_Elementwise):
    """relu6(x + 3) / 6."""

    _fn = staticmethod(F.hardsigmoid)
    _shows_inplace = False


class Hardswish(_Elementwise):
    """x * relu6(x + 3) / 6."""

    _fn = staticmethod(F.hardswish)
    _shows_inplace = False


class _Stateless(Module):
    """An activation with no hyperparameters at all."""

    _fn = None

    def forward(self, input: Tensor) -> Tensor:
        """The activation applied elementwise."""
        return type(self)._fn(input)


class Sigmoid(_Stateless):
    """1 / (1 + exp(-x))."""

    _fn = staticmethod(ops.sigmoid)


class Tanh(_Stateless):
    """tanh(x)."""

    _fn = staticmethod(ops.tanh)


class LogSigmoid(_Stateless):
    """log(sigmoid(x))."""

    _fn = staticmethod(F.logsigmoid)


class Softsign(_Stateless):
    """x / (1 + |x|)."""

    _fn = staticmethod(F.softsign)


class Tanhshrink(_Stateless):
    """x - tanh(x)."""

    _fn = staticmethod(F.tanhshrink)


class Threshold(Module):
    """x where x > threshold, else value."""

    def __init__(self, threshold: float, value: float, inplace: bool = False) -> None:
        super().__init__()
        self.threshold = threshold
        self.value = value
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        """x where x > threshold, else value."""
        return F.threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self) -> str:
        return f"threshold={self.threshold}, value={self.value}{_inplace_suffix(self.inplace)}"


class Hardtanh(Module):
    """clamp(x, min_val, max_val)."""

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False,
                 min_value: float | None = None, max_value: float | None = None) -> None:
        super().__init__()
        if min_value is not None:  # the old keyword names, still taken with torch's warning
            warnings.warn("keyword argument `min_value` is deprecated and renamed to `min_val`", FutureWarning,
                          stacklevel=2)
            min_val = min_value
        if max_value is not None:
            warnings.warn("keyword argument `max_value` is deprecated and renamed to `max_val`", FutureWarning,
                          stacklevel=2)
            max_val = max_value
        if max_val <= min_val:
            raise AssertionError(f"max_val ({max_val}) must be greater than min_val ({min_val})")
        self.min_val = min_val
        self.max_val = max_val
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        """clamp(x, min_val, max_val)."""
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self) -> str:
        return f"min_val={self.min_val}, max_val={self.max_val}{_inplace_suffix(self.inplace)}"


class ReLU6(Hardtanh):
    """min(max(0, x), 6)."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__(0.0, 6.0, inplace)

    def extra_repr(self) -> str:
        return _inplace_suffix(self.inplace, first=True)


class RReLU(Module):
    """Leaky ReLU with a random negative slope in [lower, upper] while training."""

    def __init__(self, lower: float = 1.0 / 8, upper: float = 1.0 / 3, inplace: bool = False) -> None:
        super().__init__()
        self.lower = lower
        self.upper = upper
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        """x, or x * slope for negative x."""
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"lower={self.lower}, upper={self.upper}{_inplace_suffix(self.inplace)}"


class GELU(Module):
    """x * Phi(x) (exact, or the tanh approximation)."""

    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        self.approximate = approximate

    def forward(self, input: Tensor) -> Tensor:
        """x * Phi(x)."""
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class ELU(Module):
    """x for x > 0, alpha * (exp(x) - 1) otherwise."""

    _fn = staticmethod(F.elu)

    def __init__(self, alpha: float = 1.0, inplace: bool = False) -> None:
        super().__init__()
        self.alpha = alpha
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        """The activation applied elementwise."""
        return type(self)._fn(input, self.alpha, self.inplace)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}{_inplace_suffix(self.inplace)}"


class CELU(ELU):
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1))."""

    _fn = staticmethod(F.celu)


class LeakyReLU(Module):
    """x for x >= 0, negative_slope * x otherwise."""

    def __init__(self, negative_slope: float = 1e-2, inplace: bool = False) -> None:
        super().__init__()
        self.negative_slope = negative_slope
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        """The activation applied elementwise."""
        return F.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self) -> str:
        return f"negative_slope={self.negative_slope}{_inplace_suffix(self.inplace)}"


class Softplus(Module):
    """log(1 + exp(beta x)) / beta, linear above `threshold`."""

    def __init__(self, beta: float = 1.0, threshold: float = 20.0) -> None:
        super().__init__()
        self.beta = beta
        self.threshold = threshold

    def forward(self, input: Tensor) -> Tensor:
        """The activation applied elementwise."""
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self) -> str:
        return f"beta={self.beta}, threshold={self.threshold}"


class Softshrink(Module):
    """x - lambd for x > lambd, x + lambd for x < -lambd, else 0."""

    _fn = staticmethod(F.softshrink)

    def __init__(self, lambd: float = 0.5) -> None:
        super().__init__()
        self.lambd = lambd

    def forward(self, input: Tensor) -> Tensor:
        """The activation applied elementwise."""
        return type(self)._fn(input, self.lambd)

    def extra_repr(self) -> str:
        return str(self.lambd)


class Hardshrink(Softshrink):
    """x where |x| > lambd, else 0."""

    _fn = staticmethod(F.hardshrink)


class GLU(Module):
    """a * sigmoid(b) for the two halves of the input along `dim`."""

    def __init__(self, dim: int = -1) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        """a * sigmoid(b)."""
        return F.glu(input, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class PReLU(Module):
    """x for x >= 0, a * x otherwise, with a learned (per-channel or shared) slope a."""

    def __init__(self, num_parameters: int = 1, init: float = 0.25, device=None, dtype=None) -> None:
        super().__init__()
        self.num_parameters = num_parameters
        self.init = init
        self.weight = Parameter(ops.empty(num_parameters, device=device, dtype=dtype))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Every slope set to `init`."""
        _init.constant_(self.weight, self.init)

    def forward(self, input: Tensor) -> Tensor:
        """The activation applied elementwise."""
        return F.prelu(input, self.weight)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"


class _SoftmaxBase(Module):
    """softmax-like along `dim`; subclasses name their functional in `_fn`."""

    _fn = None

    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def __setstate__(self, state: dict) -> None:
        super().__setstate__(state)
        self.__dict__.setdefault("dim", None)

    def forward(self, input: Tensor) -> Tensor:
        """The normalized values along `dim`."""
        return type(self)._fn(input, self.dim, _stacklevel=5)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Softmax(_SoftmaxBase):
    """exp(x) / sum(exp(x)) along `dim`."""

    _fn = staticmethod(F.softmax)


class Softmin(_SoftmaxBase):
    """softmax(-x) along `dim`."""

    _fn = staticmethod(F.softmin)


class LogSoftmax(_SoftmaxBase):
    """log(softmax(x)) along `dim`."""

    _fn = staticmethod(F.log_softmax)


class Softmax2d(Module):
    """softmax over the channel dim of (N, C, H, W) or (C, H, W) inputs."""

    def forward(self, input: Tensor) -> Tensor:
        """softmax over channels."""
        if input.dim() not in (3, 4):
            raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {input.dim()}D instead")
        return F.softmax(input, -3, _stacklevel=5)

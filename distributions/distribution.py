"""Distribution: the base class, with torch's shapes (sample, batch, event) and argument validation."""
from __future__ import annotations

import warnings

from .. import ops
from ..autograd import no_grad
from ..tensor import Size, Tensor
from . import constraints
from .utils import as_size, lazy_property

__all__ = ["Distribution"]


class Distribution:
    """A batch of probability distributions: `batch_shape` independent ones, each over `event_shape` values."""

    has_rsample = False
    has_enumerate_support = False
    _validate_args = __debug__

    @staticmethod
    def set_default_validate_args(value: bool) -> None:
        """Turn argument and sample validation on or off for every new distribution."""
        if value not in [True, False]:
            raise ValueError
        Distribution._validate_args = value

    def __init__(self, batch_shape=Size(), event_shape=Size(), validate_args: bool | None = None):
        self._batch_shape = as_size(batch_shape)
        self._event_shape = as_size(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            try:
                arg_constraints = self.arg_constraints
            except NotImplementedError:
                arg_constraints = {}
                warnings.warn(f"{self.__class__} does not define `arg_constraints`. Please set `arg_constraints = "
                              "{}` or initialize the distribution with `validate_args=False` to turn off "
                              "validation.")
            for param, constraint in arg_constraints.items():
                if constraints.is_dependent(constraint):
                    continue  # skip constraints that cannot be checked
                if param not in self.__dict__ and isinstance(getattr(type(self), param), lazy_property):
                    continue  # skip checking lazily-constructed args
                value = getattr(self, param)
                valid = constraint.check(value)
                if not bool(valid.all()):
                    raise ValueError(
                        f"Expected parameter {param} ({type(value).__name__} of shape {tuple(value.shape)}) of "
                        f"distribution {self!r} to satisfy the constraint {constraint!r}, but found invalid "
                        f"values:\n{_shown(value)}")
        super().__init__()

    def expand(self, batch_shape, _instance=None) -> "Distribution":
        """A new distribution with its batch dimensions expanded to `batch_shape` (parameters are not copied)."""
        raise NotImplementedError

    @property
    def batch_shape(self) -> Size:
        """The shape over which parameters are batched."""
        return self._batch_shape

    @property
    def event_shape(self) -> Size:
        """The shape of a single sample (without batching)."""
        return self._event_shape

    @property
    def arg_constraints(self) -> dict:
        """Parameter name -> the constraint each parameter must satisfy."""
        raise NotImplementedError

    @property
    def support(self):
        """The constraint describing where the distribution puts mass."""
        raise NotImplementedError

    @property
    def mean(self) -> Tensor:
        """The mean of the distribution."""
        raise NotImplementedError(f"{self.__class__} does not implement mean")

    @property
    def mode(self) -> Tensor:
        """The mode of the distribution."""
        raise NotImplementedError(f"{self.__class__} does not implement mode")

    @property
    def variance(self) -> Tensor:
        """The variance of the distribution."""
        raise NotImplementedError(f"{self.__class__} does not implement variance")

    @property
    def stddev(self) -> Tensor:
        """The standard deviation of the distribution."""
        return self.variance.sqrt()

    def sample(self, sample_shape=Size()) -> Tensor:
        """Draw samples of shape sample_shape + batch_shape + event_shape (no gradient)."""
        with no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=Size()) -> Tensor:
        """Draw reparameterized samples (gradients flow to the parameters)."""
        raise NotImplementedError

    def sample_n(self, n: int) -> Tensor:
        """Deprecated: sample((n,))."""
        warnings.warn("sample_n will be deprecated. Use .sample((n,)) instead", UserWarning)
        return self.sample(Size((n,)))

    def log_prob(self, value: Tensor) -> Tensor:
        """The log of the probability density/mass at `value`."""
        raise NotImplementedError

    def cdf(self, value: Tensor) -> Tensor:
        """The cumulative distribution function at `value`."""
        raise NotImplementedError

    def icdf(self, value: Tensor) -> Tensor:
        """The inverse cumulative distribution function at `value`."""
        raise NotImplementedError

    def enumerate_support(self, expand: bool = True) -> Tensor:
        """Every value of a discrete distribution's support, along a new leading dimension."""
        raise NotImplementedError

    def entropy(self) -> Tensor:
        """The entropy, batched over batch_shape."""
        raise NotImplementedError

    def perplexity(self) -> Tensor:
        """exp(entropy)."""
        return ops.exp(self.entropy())

    def _extended_shape(self, sample_shape=Size()) -> Size:
        """sample_shape + batch_shape + event_shape."""
        if not isinstance(sample_shape, Size):
            sample_shape = Size(tuple(sample_shape))
        return Size(tuple(sample_shape) + tuple(self._batch_shape) + tuple(self._event_shape))

    def _validate_sample(self, value: Tensor) -> None:
        """Raise ValueError unless `value` has a broadcastable shape and lies in the support."""
        if not isinstance(value, Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        event_dim_start = len(value.size()) - len(self._event_shape)
        if tuple(value.size()[event_dim_start:]) != tuple(self._event_shape):
            raise ValueError(f"The right-most size of value must match event_shape: {value.size()} vs "
                             f"{self._event_shape}.")
        actual_shape = value.size()
        expected_shape = Size(tuple(self._batch_shape) + tuple(self._event_shape))
        for i, j in zip(reversed(actual_shape), reversed(expected_shape)):
            if i != 1 and j != 1 and i != j:
                raise ValueError(f"Value is not broadcastable with batch_shape+event_shape: {actual_shape} vs "
                                 f"{expected_shape}.")
        try:
            support = self.support
        except NotImplementedError:
            warnings.warn(f"{self.__class__} does not define `support` to enable sample validation. Please "
                          "initialize the distribution with `validate_args=False` to turn off validation.")
            return
        assert support is not None
        valid = support.check(value)
        if not bool(valid.all()):
            raise ValueError(f"Expected value argument ({type(value).__name__} of shape {tuple(value.shape)}) to be "
                             f"within the support ({support!r}) of the distribution {self!r}, but found invalid "
                             f"values:\n{_shown(value)}")

    def _get_checked_instance(self, cls, _instance=None):
        """A blank instance for expand(); subclasses with their own __init__ must define expand too."""
        if _instance is None and type(self).__init__ != cls.__init__:
            raise NotImplementedError(f"Subclass {self.__class__.__name__} of {cls.__name__} that defines a custom "
                                      "__init__ method must also define a custom .expand() method.")
        return self.__new__(type(self)) if _instance is None else _instance

    def __repr__(self) -> str:
        param_names = [k for k, _ in self.arg_constraints.items() if k in self.__dict__]
        args_string = ", ".join(f"{p}: {_brief(self.__dict__[p])}" for p in param_names)
        return self.__class__.__name__ + "(" + args_string + ")"


def _expand_params(self, cls, names: tuple, batch_shape, _instance=None):
    """The common expand(): the named parameters (tensors or distributions) expanded to batch_shape, the event
    shape and validation as in self."""
    new = self._get_checked_instance(cls, _instance)
    batch_shape = Size(tuple(batch_shape))
    for name in names:
        setattr(new, name, getattr(self, name).expand(batch_shape))
    Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
    new._validate_args = self._validate_args
    return new


def _shown(value: Tensor):
    """What an f-string shows for a tensor in torch: the number when 0-d."""
    return value.item() if value.dim() == 0 else value


def _brief(value: Tensor) -> str:
    """A parameter in a repr: its value when it has one element (a number when 0-d, as torch formats it), else its
    size."""
    if value.numel() != 1:
        return str(value.size())
    return str(_shown(value))

"""Count distributions: Poisson, Binomial, Multinomial, Geometric, NegativeBinomial."""
from __future__ import annotations

import math
from numbers import Number

from .. import ops
from ..autograd import no_grad
from ..nn import functional as F
from ..tensor import Size
from . import constraints
from ._sampling import binomial
from .continuous import Gamma
from .discrete import Categorical, _BinaryProbsOrLogits, _expand_with_probs_or_logits, _one_of, _support_values
from .distribution import Distribution, _expand_params
from .exp_family import ExponentialFamily
from .utils import broadcast_all, broadcast_params, lazy_property, logits_to_probs, probs_to_logits, tiny_of

__all__ = ["Poisson", "Binomial", "Multinomial", "Geometric", "NegativeBinomial"]


class Poisson(ExponentialFamily):
    """Poisson(rate): counts with mean and variance rate."""

    arg_constraints = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer

    def __init__(self, rate, validate_args=None):
        (self.rate,), batch_shape = broadcast_params(rate)
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return _expand_params(self, Poisson, ("rate",), batch_shape, _instance)

    @property
    def mean(self):
        return self.rate

    @property
    def mode(self):
        return self.rate.floor()

    @property
    def variance(self):
        return self.rate

    def sample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        with no_grad():
            return ops.poisson(self.rate.expand(tuple(shape)))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        rate, value = broadcast_all(self.rate, value)
        return value.xlogy(rate) - rate - (value + 1).lgamma()

    @property
    def _natural_params(self):
        return (ops.log(self.rate),)

    def _log_normalizer(self, x):
        return ops.exp(x)


def _clamp_by_zero(x):
    """max(x, 0) whose gradient at 0 is 1/2, as torch's."""
    return (x.clamp(min=0) + x - x.clamp(max=0)) / 2


def _init_count_and_probs_or_logits(self, total_count, probs, logits) -> None:
    """Binomial's and NegativeBinomial's parameters: total_count broadcast with whichever of probs / logits is
    given, and of its dtype; `self._param` is that one."""
    _one_of(probs, logits)
    if probs is not None:
        self.total_count, self.probs = broadcast_all(total_count, probs)
        self.total_count = self.total_count.type_as(self.probs)
    else:
        self.total_count, self.logits = broadcast_all(total_count, logits)
        self.total_count = self.total_count.type_as(self.logits)
    self._param = self.probs if probs is not None else self.logits


class Binomial(_BinaryProbsOrLogits, Distribution):
    """Binomial(total_count=1, probs=None, logits=None): successes in total_count Bernoulli trials."""

    arg_constraints = {"total_count": constraints.nonnegative_integer, "probs": constraints.unit_interval,
                       "logits": constraints.real}
    has_enumerate_support = True

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        _init_count_and_probs_or_logits(self, total_count, probs, logits)
        super().__init__(self._param.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return _expand_with_probs_or_logits(self, Binomial, ("total_count",), batch_shape, _instance)

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self.total_count)

    @property
    def mean(self):
        return self.total_count * self.probs

    @property
    def mode(self):
        return ((self.total_count + 1) * self.probs).floor().clamp(max=self.total_count)

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape=Size()):
        shape = tuple(self._extended_shape(sample_shape))
        with no_grad():
            return binomial(self.total_count.expand(shape).contiguous(), self.probs.expand(shape).contiguous())

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        log_factorial_n = ops.lgamma(self.total_count + 1)
        log_factorial_k = ops.lgamma(value + 1)
        log_factorial_nmk = ops.lgamma(self.total_count - value + 1)
        # k * log(p) + (n - k) * log(1 - p) written with logits, stable for either sign
        normalize_term = (self.total_count * _clamp_by_zero(self.logits)
                          + self.total_count * ops.log1p(ops.exp(-ops.abs(self.logits))) - log_factorial_n)
        return value * self.logits - log_factorial_k - log_factorial_nmk - normalize_term

    def entropy(self):
        total_count = int(self.total_count.max())
        if not total_count == self.total_count.min():
            raise NotImplementedError("Inhomogeneous total count not supported by `entropy`.")
        log_prob = self.log_prob(self.enumerate_support(False))
        return -(ops.exp(log_prob) * log_prob).sum(0)

    def enumerate_support(self, expand=True):
        total_count = int(self.total_count.max())
        if not total_count == self.total_count.min():
            raise NotImplementedError("Inhomogeneous total count not supported by `enumerate_support`.")
        return _support_values(1 + total_count, self._param.dtype, self._param.device, self._batch_shape, expand)


class Multinomial(Distribution):
    """Multinomial(total_count=1, probs=None, logits=None): category counts of total_count Categorical draws."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        if not isinstance(total_count, int):
            raise NotImplementedError("inhomogeneous total_count is not supported")
        self.total_count = total_count
        self._categorical = Categorical(probs=probs, logits=logits)
        self._binomial = Binomial(total_count=total_count, probs=self.probs)
        batch_shape = self._categorical.batch_shape
        event_shape = self._categorical.param_shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args)

    def expand(self, batch_shape, _instance=None):
        new = _expand_params(self, Multinomial, (), batch_shape, _instance)
        batch_shape = new.batch_shape
        new.total_count = self.total_count
        new._categorical = self._categorical.expand(batch_shape)
        new._binomial = self._binomial.expand(tuple(batch_shape) + tuple(self.event_shape))
        return new

    @constraints.dependent_property(is_discrete=True, event_dim=1)
    def support(self):
        return constraints.multinomial(self.total_count)

    @property
    def mean(self):
        return self.probs * self.total_count

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)

    @property
    def logits(self):
        return self._categorical.logits

    @property
    def probs(self):
        return self._categorical.probs

    @property
    def param_shape(self):
        return self._categorical.param_shape

    def sample(self, sample_shape=Size()):
        sample_shape = Size(tuple(sample_shape))
        samples = self._categorical.sample(Size((self.total_count,) + tuple(sample_shape)))
        # (total_count, sample, batch) -> (sample, batch, total_count), then count each category
        samples = samples.permute(*range(1, samples.dim()), 0)
        counts = ops.zeros(tuple(self._extended_shape(sample_shape)), dtype=samples.dtype, device=samples.device)
        counts.scatter_add_(-1, samples, ops.ones_like(samples))
        return counts.type_as(self.probs)

    def entropy(self):
        n = ops.tensor(self.total_count, dtype=self.probs.dtype, device=self.probs.device)
        cat_entropy = self._categorical.entropy()
        term1 = n * cat_entropy - ops.lgamma(n + 1)
        support = self._binomial.enumerate_support(expand=False)[1:]
        binomial_probs = ops.exp(self._binomial.log_prob(support))
        weights = ops.lgamma(support + 1)
        term2 = (binomial_probs * weights).sum([0, -1])
        return term1 + term2

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        log_factorial_n = ops.lgamma(value.sum(-1) + 1)
        log_factorial_xs = ops.lgamma(value + 1).sum(-1)
        logits = ops.where((value == 0) & (logits == -math.inf), ops.zeros_like(logits), logits)
        log_powers = (logits * value).sum(-1)
        return log_factorial_n - log_factorial_xs + log_powers


class Geometric(Distribution):
    """Geometric(probs=None, logits=None): the number of failures before the first success."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, probs=None, logits=None, validate_args=None):
        _one_of(probs, logits)
        if probs is not None:
            (self.probs,) = broadcast_all(probs)
        else:
            (self.logits,) = broadcast_all(logits)
        probs_or_logits = probs if probs is not None else logits
        batch_shape = Size() if isinstance(probs_or_logits, Number) else probs_or_logits.size()
        super().__init__(batch_shape, validate_args=validate_args)
        if self._validate_args and probs is not None:
            value = self.probs
            valid = value > 0
            if not bool(valid.all()):
                invalid_value = value.detach()[~valid]
                raise ValueError(f"Expected parameter probs ({type(value).__name__} of shape {tuple(value.shape)}) "
                                 f"of distribution {self!r} to be positive but found invalid values:\n"
                                 f"{invalid_value}")

    def expand(self, batch_shape, _instance=None):
        held = tuple(name for name in ("probs", "logits") if name in self.__dict__)  # Geometric keeps no _param
        return _expand_params(self, Geometric, held, batch_shape, _instance)

    @property
    def mean(self):
        return 1.0 / self.probs - 1.0

    @property
    def mode(self):
        return ops.zeros_like(self.probs)

    @property
    def variance(self):
        return (1.0 / self.probs - 1.0) / self.probs

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits, is_binary=True)

    def sample(self, sample_shape=Size()):
        shape = tuple(self._extended_shape(sample_shape))
        tiny = tiny_of(self.probs.dtype)
        with no_grad():
            u = self.probs.new_empty(shape).uniform_()
            u = u.clamp(min=tiny)
            return (u.log() / (-self.probs).log1p()).floor()

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        value, probs = broadcast_all(value, self.probs)
        probs = ops.where((probs == 1) & (value == 0), ops.zeros_like(probs), probs)
        return value * (-probs).log1p() + self.probs.log()

    def entropy(self):
        return F.binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none") / self.probs


class NegativeBinomial(_BinaryProbsOrLogits, Distribution):
    """NegativeBinomial(total_count, probs=None, logits=None): successes before total_count failures."""

    arg_constraints = {"total_count": constraints.greater_than_eq(0),
                       "probs": constraints.half_open_interval(0.0, 1.0), "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, total_count, probs=None, logits=None, validate_args=None):
        _init_count_and_probs_or_logits(self, total_count, probs, logits)
        super().__init__(self._param.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return _expand_with_probs_or_logits(self, NegativeBinomial, ("total_count",), batch_shape, _instance)

    @property
    def mean(self):
        return self.total_count * ops.exp(self.logits)

    @property
    def mode(self):
        return ((self.total_count - 1) * self.logits.exp()).floor().clamp(min=0.0)

    @property
    def variance(self):
        return self.mean / ops.sigmoid(-self.logits)

    @lazy_property
    def _gamma(self):
        # a Poisson whose rate is Gamma distributed; total_count may be 0, so no validation
        return Gamma(concentration=self.total_count, rate=ops.exp(-self.logits), validate_args=False)

    def sample(self, sample_shape=Size()):
        with no_grad():
            rate = self._gamma.sample(sample_shape=sample_shape)
            return ops.poisson(rate)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        log_unnormalized_prob = self.total_count * F.logsigmoid(-self.logits) + value * F.logsigmoid(self.logits)
        log_normalization = (-ops.lgamma(self.total_count + value) + ops.lgamma(1.0 + value)
                             + ops.lgamma(self.total_count))
        # total_count == 0 and value == 0 has probability 1, but lgamma(0) is infinite
        log_normalization = log_normalization.masked_fill(self.total_count + value == 0.0, 0.0)
        return log_unnormalized_prob - log_normalization

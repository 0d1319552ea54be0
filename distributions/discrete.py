"""Distributions over categories: Bernoulli, Categorical, OneHotCategorical (and its straight-through form)."""
from __future__ import annotations

import math
from numbers import Number

from .. import ops
from ..autograd import no_grad
from ..nn import functional as F
from ..tensor import Size
from ..tensor import dtype as dt
from . import constraints
from .distribution import Distribution, _expand_params
from .exp_family import ExponentialFamily
from .utils import broadcast_all, lazy_property, logits_to_probs, min_of, probs_to_logits

__all__ = ["Bernoulli", "Categorical", "OneHotCategorical", "OneHotCategoricalStraightThrough"]


def _one_of(probs, logits) -> None:
    if (probs is None) == (logits is None):
        raise ValueError("Either `probs` or `logits` must be specified, but not both.")


def _expand_probs_or_logits(self, new, param_shape) -> None:
    """Copy whichever of probs / logits `self` holds onto `new`, expanded; set `new._param`."""
    if "probs" in self.__dict__:
        new.probs = self.probs.expand(param_shape)
        new._param = new.probs
    if "logits" in self.__dict__:
        new.logits = self.logits.expand(param_shape)
        new._param = new.logits


def _init_probs_or_logits(self, probs, logits) -> Size:
    """Set whichever of `self.probs` / `self.logits` is given (as a tensor) and `self._param`; return the
    batch shape, Size() for a plain number."""
    _one_of(probs, logits)
    if probs is not None:
        is_scalar = isinstance(probs, Number)
        (self.probs,) = broadcast_all(probs)
    else:
        is_scalar = isinstance(logits, Number)
        (self.logits,) = broadcast_all(logits)
    self._param = self.probs if probs is not None else self.logits
    return Size() if is_scalar else self._param.size()


def _expand_with_probs_or_logits(self, cls, names: tuple, batch_shape, _instance=None):
    """expand() of a distribution held as probs or logits of its batch shape, plus the named parameters."""
    new = _expand_params(self, cls, names, batch_shape, _instance)
    _expand_probs_or_logits(self, new, new.batch_shape)
    return new


def _support_values(n: int, dtype, device, batch_shape, expand: bool):
    """arange(n) shaped (n, 1, ..., 1) against batch_shape, expanded to it when asked."""
    values = ops.arange(n, dtype=dtype, device=device)
    values = values.view((-1,) + (1,) * len(batch_shape))
    return values.expand((-1,) + tuple(batch_shape)) if expand else values


class _BinaryProbsOrLogits:
    """Mixin of the distributions held as one success probability or its logit (`_param` is the one given):
    each is computed from the other on first use."""

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits, is_binary=True)

    @property
    def param_shape(self):
        return self._param.size()


class Bernoulli(_BinaryProbsOrLogits, ExponentialFamily):
    """Bernoulli(probs=None, logits=None): 1 with probability probs, else 0."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.boolean
    has_enumerate_support = True
    _mean_carrier_measure = 0

    def __init__(self, probs=None, logits=None, validate_args=None):
        batch_shape = _init_probs_or_logits(self, probs, logits)
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return _expand_with_probs_or_logits(self, Bernoulli, (), batch_shape, _instance)

    @property
    def mean(self):
        return self.probs

    @property
    def mode(self):
        mode = (self.probs >= 0.5).to(self.probs)
        return ops.where(self.probs == 0.5, ops.full_like(mode, math.nan), mode)

    @property
    def variance(self):
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        with no_grad():
            return ops.bernoulli(self.probs.expand(tuple(shape)))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return -F.binary_cross_entropy_with_logits(logits, value, reduction="none")

    def entropy(self):
        return F.binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none")

    def enumerate_support(self, expand=True):
        return _support_values(2, self._param.dtype, self._param.device, self._batch_shape, expand)

    @property
    def _natural_params(self):
        return (ops.logit(self.probs),)

    def _log_normalizer(self, x):
        return ops.log1p(ops.exp(x))


class Categorical(Distribution):
    """Categorical(probs=None, logits=None): an index in [0, K) drawn with the given (unnormalized) weights."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.independent(constraints.real, 1)}
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        _one_of(probs, logits)
        if probs is not None:
            if probs.dim() < 1:
                raise ValueError("`probs` parameter must be at least one-dimensional.")
            self.probs = probs / probs.sum(-1, keepdim=True)
        else:
            if logits.dim() < 1:
                raise ValueError("`logits` parameter must be at least one-dimensional.")
            self.logits = logits - logits.logsumexp(dim=-1, keepdim=True)  # normalize
        self._param = self.probs if probs is not None else self.logits
        self._num_events = self._param.size()[-1]
        batch_shape = self._param.size()[:-1] if self._param.dim() > 1 else Size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = _expand_params(self, Categorical, (), batch_shape, _instance)
        _expand_probs_or_logits(self, new, tuple(new.batch_shape) + (self._num_events,))
        new._num_events = self._num_events
        return new

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self._num_events - 1)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits)

    @property
    def param_shape(self):
        return self._param.size()

    @property
    def mean(self):
        return ops.full(tuple(self._extended_shape()), math.nan, dtype=self.probs.dtype, device=self.probs.device)

    @property
    def mode(self):
        return self.probs.argmax(dim=-1)

    @property
    def variance(self):
        return ops.full(tuple(self._extended_shape()), math.nan, dtype=self.probs.dtype, device=self.probs.device)

    def sample(self, sample_shape=Size()):
        sample_shape = Size(tuple(sample_shape))
        probs_2d = self.probs.reshape(-1, self._num_events)
        samples_2d = ops.multinomial(probs_2d, sample_shape.numel(), True).T
        return samples_2d.reshape(tuple(self._extended_shape(sample_shape)))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        value = value.long().unsqueeze(-1)
        value, log_pmf = ops.broadcast_tensors(value, self.logits)
        value = value[..., :1]
        return log_pmf.gather(-1, value).squeeze(-1)

    def entropy(self):
        logits = self.logits.clamp(min=min_of(self.logits.dtype))  # -inf logits: 0 * -inf must be 0
        p_log_p = logits * self.probs
        return -p_log_p.sum(-1)

    def enumerate_support(self, expand=True):
        return _support_values(self._num_events, dt.int64, self._param.device, self._batch_shape, expand)


def _wrap_categorical(self, probs, logits) -> tuple[Size, Size]:
    """Set `self._categorical` from probs or logits; return the batch and event shape of a one-hot draw of it."""
    self._categorical = Categorical(probs, logits)
    return self._categorical.batch_shape, self._categorical.param_shape[-1:]


class _OverCategorical:
    """Mixin of the distributions over one-hot vectors of a Categorical `_categorical` (OneHotCategorical,
    ExpRelaxedCategorical): its probs, logits and param_shape are theirs."""

    @property
    def probs(self):
        return self._categorical.probs

    @property
    def logits(self):
        return self._categorical.logits

    @property
    def param_shape(self):
        return self._categorical.param_shape


class OneHotCategorical(_OverCategorical, Distribution):
    """OneHotCategorical(probs=None, logits=None): a Categorical draw as a one-hot vector."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.one_hot
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        super().__init__(*_wrap_categorical(self, probs, logits), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return _expand_params(self, OneHotCategorical, ("_categorical",), batch_shape, _instance)

    @property
    def _param(self):
        return self._categorical._param

    @property
    def mean(self):
        return self._categorical.probs

    @property
    def mode(self):
        probs = self._categorical.probs
        return F.one_hot(probs.argmax(dim=-1), num_classes=probs.shape[-1]).to(probs)

    @property
    def variance(self):
        return self._categorical.probs * (1 - self._categorical.probs)

    def sample(self, sample_shape=Size()):
        sample_shape = Size(tuple(sample_shape))
        probs = self._categorical.probs
        indices = self._categorical.sample(sample_shape)
        return F.one_hot(indices, self._categorical._num_events).to(probs)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        indices = value.max(-1)[1]
        return self._categorical.log_prob(indices)

    def entropy(self):
        return self._categorical.entropy()

    def enumerate_support(self, expand=True):
        n = self.event_shape[0]
        values = ops.eye(n, dtype=self._param.dtype, device=self._param.device)
        values = values.view((n,) + (1,) * len(self.batch_shape) + (n,))
        return values.expand((n,) + tuple(self.batch_shape) + (n,)) if expand else values


class OneHotCategoricalStraightThrough(OneHotCategorical):
    """OneHotCategorical whose rsample passes gradients straight through to the probabilities."""

    has_rsample = True

    def rsample(self, sample_shape=Size()):
        samples = self.sample(sample_shape)
        probs = self._categorical.probs  # cached via lazy_property
        return samples + (probs - probs.detach())

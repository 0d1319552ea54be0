"""Relaxed (Concrete / Gumbel-softmax) distributions: RelaxedBernoulli and RelaxedOneHotCategorical."""
from __future__ import annotations

from .. import ops
from ..tensor import Size
from . import constraints
from .discrete import (_BinaryProbsOrLogits, _OverCategorical, _expand_with_probs_or_logits, _init_probs_or_logits,
                       _wrap_categorical)
from .distribution import Distribution, _expand_params
from .transformed import TransformedDistribution
from .transforms import ExpTransform, SigmoidTransform
from .utils import broadcast_all, clamp_probs

__all__ = ["LogitRelaxedBernoulli", "RelaxedBernoulli", "ExpRelaxedCategorical", "RelaxedOneHotCategorical"]


class LogitRelaxedBernoulli(_BinaryProbsOrLogits, Distribution):
    """The logit of a RelaxedBernoulli sample (temperature, probs or logits)."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.real

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        self.temperature = temperature
        batch_shape = _init_probs_or_logits(self, probs, logits)
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = _expand_with_probs_or_logits(self, LogitRelaxedBernoulli, (), batch_shape, _instance)
        new.temperature = self.temperature
        return new

    def rsample(self, sample_shape=Size()):
        shape = tuple(self._extended_shape(sample_shape))
        probs = clamp_probs(self.probs.expand(shape))
        uniforms = clamp_probs(ops.rand(shape, dtype=probs.dtype, device=probs.device))
        return (uniforms.log() - (-uniforms).log1p() + probs.log() - (-probs).log1p()) / self.temperature

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        diff = logits - value.mul(self.temperature)
        return self.temperature.log() + diff - 2 * diff.exp().log1p()


class _RelaxedParams:
    """Mixin of the relaxed distributions defined by transforming a base one: its parameters are the base's."""

    @property
    def temperature(self):
        return self.base_dist.temperature

    @property
    def logits(self):
        return self.base_dist.logits

    @property
    def probs(self):
        return self.base_dist.probs


class RelaxedBernoulli(_RelaxedParams, TransformedDistribution):
    """RelaxedBernoulli(temperature, probs=None, logits=None): a reparameterizable relaxation to (0, 1)."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        base_dist = LogitRelaxedBernoulli(temperature, probs, logits)
        super().__init__(base_dist, SigmoidTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(RelaxedBernoulli, _instance)
        return super().expand(batch_shape, _instance=new)


class ExpRelaxedCategorical(_OverCategorical, Distribution):
    """The log of a RelaxedOneHotCategorical sample (temperature, probs or logits)."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        batch_shape, event_shape = _wrap_categorical(self, probs, logits)
        self.temperature = temperature
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = _expand_params(self, ExpRelaxedCategorical, ("_categorical",), batch_shape, _instance)
        new.temperature = self.temperature
        return new

    def rsample(self, sample_shape=Size()):
        shape = tuple(self._extended_shape(sample_shape))
        uniforms = clamp_probs(ops.rand(shape, dtype=self.logits.dtype, device=self.logits.device))
        gumbels = -((-(uniforms.log())).log())
        scores = (self.logits + gumbels) / self.temperature
        return scores - scores.logsumexp(dim=-1, keepdim=True)

    def log_prob(self, value):
        K = self._categorical._num_events
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        log_scale = ops.full_like(self.temperature, float(K)).lgamma() - self.temperature.log().mul(-(K - 1))
        score = logits - value.mul(self.temperature)
        score = (score - score.logsumexp(dim=-1, keepdim=True)).sum(-1)
        return score + log_scale


class RelaxedOneHotCategorical(_RelaxedParams, TransformedDistribution):
    """RelaxedOneHotCategorical(temperature, probs=None, logits=None): the Gumbel-softmax on the simplex."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        base_dist = ExpRelaxedCategorical(temperature, probs, logits, validate_args=validate_args)
        super().__init__(base_dist, ExpTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(RelaxedOneHotCategorical, _instance)
        return super().expand(batch_shape, _instance=new)

"""ContinuousBernoulli: the density proportional to p^x (1-p)^(1-x) on [0, 1], with its KL pairs.

Near p = 1/2 the closed forms divide 0 by 0, so inside `lims` they switch to Taylor expansions in (p - 1/2)."""
from __future__ import annotations

import math

from .. import ops
from ..autograd import no_grad
from ..nn import functional as F
from ..tensor import Size
from . import constraints
from .continuous import Beta, Exponential, Gamma, Laplace, Normal, Uniform
from .discrete import _expand_with_probs_or_logits, _init_probs_or_logits
from .exp_family import ExponentialFamily
from .kl import _infinite_like, register_kl
from .transformed import Gumbel
from .transformed_families import Pareto
from .utils import broadcast_all, clamp_probs, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["ContinuousBernoulli"]


class ContinuousBernoulli(ExponentialFamily):
    """ContinuousBernoulli(probs=None, logits=None, lims=(0.499, 0.501)): a continuous relaxation on [0, 1]."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    _mean_carrier_measure = 0
    has_rsample = True

    def __init__(self, probs=None, logits=None, lims=(0.499, 0.501), validate_args=None):
        batch_shape = _init_probs_or_logits(self, probs, logits)
        if probs is not None:
            # checked before the clamp below, which would hide invalid values
            if validate_args is not None and not bool(self.arg_constraints["probs"].check(self.probs).all()):
                raise ValueError("The parameter probs has invalid values")
            self.probs = self._param = clamp_probs(self.probs)
        self._lims = lims
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = _expand_with_probs_or_logits(self, ContinuousBernoulli, (), batch_shape, _instance)
        new._lims = self._lims
        return new

    def _outside_unstable_region(self):
        return ops.le(self.probs, self._lims[0]) | ops.gt(self.probs, self._lims[1])

    def _cut_probs(self):
        """probs, with the unstable region replaced by lims[0] (the Taylor branch is used there instead)."""
        return ops.where(self._outside_unstable_region(), self.probs, self._lims[0] * ops.ones_like(self.probs))

    def _cont_bern_log_norm(self):
        """The log normalizing constant log(2 atanh(1 - 2p) / (1 - 2p))."""
        cut_probs = self._cut_probs()
        below_half = ops.where(ops.le(cut_probs, 0.5), cut_probs, ops.zeros_like(cut_probs))
        above_half = ops.where(ops.ge(cut_probs, 0.5), cut_probs, ops.ones_like(cut_probs))
        log_norm = ops.log(ops.abs(ops.log1p(-cut_probs) - ops.log(cut_probs))) - ops.where(
            ops.le(cut_probs, 0.5), ops.log1p(-2.0 * below_half), ops.log(2.0 * above_half - 1.0))
        x = ops.pow(self.probs - 0.5, 2)
        taylor = math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * x) * x
        return ops.where(self._outside_unstable_region(), log_norm, taylor)

    @property
    def mean(self):
        cut_probs = self._cut_probs()
        mus = cut_probs / (2.0 * cut_probs - 1.0) + 1.0 / (ops.log1p(-cut_probs) - ops.log(cut_probs))
        x = self.probs - 0.5
        taylor = 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * ops.pow(x, 2)) * x
        return ops.where(self._outside_unstable_region(), mus, taylor)

    @property
    def stddev(self):
        return ops.sqrt(self.variance)

    @property
    def variance(self):
        cut_probs = self._cut_probs()
        variances = (cut_probs * (cut_probs - 1.0) / ops.pow(1.0 - 2.0 * cut_probs, 2)
                     + 1.0 / ops.pow(ops.log1p(-cut_probs) - ops.log(cut_probs), 2))
        x = ops.pow(self.probs - 0.5, 2)
        taylor = 1.0 / 12.0 - (1.0 / 15.0 - 128.0 / 945.0 * x) * x
        return ops.where(self._outside_unstable_region(), variances, taylor)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return clamp_probs(logits_to_probs(self.logits, is_binary=True))

    @property
    def param_shape(self):
        return self._param.size()

    def sample(self, sample_shape=Size()):
        shape = tuple(self._extended_shape(sample_shape))
        u = ops.rand(shape, dtype=self.probs.dtype, device=self.probs.device)
        with no_grad():
            return self.icdf(u)

    def rsample(self, sample_shape=Size()):
        shape = tuple(self._extended_shape(sample_shape))
        u = ops.rand(shape, dtype=self.probs.dtype, device=self.probs.device)
        return self.icdf(u)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return -F.binary_cross_entropy_with_logits(logits, value, reduction="none") + self._cont_bern_log_norm()

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        cut_probs = self._cut_probs()
        cdfs = ((ops.pow(cut_probs, value) * ops.pow(1.0 - cut_probs, 1.0 - value) + cut_probs - 1.0)
                / (2.0 * cut_probs - 1.0))
        unbounded_cdfs = ops.where(self._outside_unstable_region(), cdfs, value)
        return ops.where(ops.le(value, 0.0), ops.zeros_like(value),
                           ops.where(ops.ge(value, 1.0), ops.ones_like(value), unbounded_cdfs))

    def icdf(self, value):
        cut_probs = self._cut_probs()
        inverted = ((ops.log1p(-cut_probs + value * (2.0 * cut_probs - 1.0)) - ops.log1p(-cut_probs))
                    / (ops.log(cut_probs) - ops.log1p(-cut_probs)))
        return ops.where(self._outside_unstable_region(), inverted, value)

    def entropy(self):
        log_probs0 = ops.log1p(-self.probs)
        log_probs1 = ops.log(self.probs)
        return self.mean * (log_probs0 - log_probs1) - self._cont_bern_log_norm() - log_probs0

    @property
    def _natural_params(self):
        return (self.logits,)

    def _log_normalizer(self, x):
        outside = ops.le(x, self._lims[0] - 0.5) | ops.gt(x, self._lims[1] - 0.5)
        cut_nat_params = ops.where(outside, x, (self._lims[0] - 0.5) * ops.ones_like(x))
        log_norm = ops.log(ops.abs(ops.expm1(cut_nat_params))) - ops.log(ops.abs(cut_nat_params))
        taylor = 0.5 * x + ops.pow(x, 2) / 24.0 - ops.pow(x, 4) / 2880.0
        return ops.where(outside, log_norm, taylor)


def _log_partition_terms(q):
    """-log(1 - q) - log C(q): what E_p[-log q(x)] adds to -mean * logits."""
    return -ops.log1p(-q.probs) - q._cont_bern_log_norm()


@register_kl(ContinuousBernoulli, ContinuousBernoulli)
def _kl_continuous_bernoulli_continuous_bernoulli(p, q):
    t1 = p.mean * (p.logits - q.logits)
    return t1 + p._cont_bern_log_norm() + ops.log1p(-p.probs) + _log_partition_terms(q)


@register_kl(Beta, ContinuousBernoulli)
def _kl_beta_continuous_bernoulli(p, q):
    return -p.entropy() - p.mean * q.logits + _log_partition_terms(q)


@register_kl(ContinuousBernoulli, Exponential)
def _kl_continuous_bernoulli_exponential(p, q):
    return -p.entropy() - ops.log(q.rate) + q.rate * p.mean


@register_kl(ContinuousBernoulli, Normal)
def _kl_continuous_bernoulli_normal(p, q):
    t2 = 0.5 * (math.log(2.0 * math.pi) + ops.square(q.loc / q.scale)) + ops.log(q.scale)
    t3 = (p.variance + ops.square(p.mean) - 2.0 * q.loc * p.mean) / (2.0 * ops.square(q.scale))
    return -p.entropy() + t2 + t3


@register_kl(ContinuousBernoulli, Uniform)
def _kl_continuous_bernoulli_uniform(p, q):
    result = -p.entropy() + (q.high - q.low).log()
    outside = ops.ge(q.low, p.support.lower_bound) | ops.le(q.high, p.support.upper_bound)
    return ops.where(outside, _infinite_like(result), result)


@register_kl(Uniform, ContinuousBernoulli)
def _kl_uniform_continuous_bernoulli(p, q):
    result = -p.entropy() - p.mean * q.logits + _log_partition_terms(q)
    outside = ops.ge(p.high, q.support.upper_bound) | ops.le(p.low, q.support.lower_bound)
    return ops.where(outside, _infinite_like(result), result)


def _infinite(param: str):
    def kl(p, q):
        return _infinite_like(getattr(p, param))
    return kl


register_kl(ContinuousBernoulli, Pareto)(_infinite("probs"))
for _p_type, _param in ((Exponential, "rate"), (Gamma, "concentration"), (Gumbel, "loc"), (Laplace, "loc"),
                        (Normal, "loc"), (Pareto, "scale")):
    register_kl(_p_type, ContinuousBernoulli)(_infinite(_param))

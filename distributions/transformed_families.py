"""More distributions torch defines by transforming a simpler one: HalfCauchy, Pareto, Weibull, InverseGamma,
Kumaraswamy, LogisticNormal."""
from __future__ import annotations

import math

from .. import ops
from . import constraints
from .continuous import Cauchy, Exponential, Gamma, Normal, Uniform
from .transformed import TransformedDistribution, _FoldedAtZero
from .transforms import AbsTransform, AffineTransform, ExpTransform, PowerTransform, StickBreakingTransform
from .utils import broadcast_all

__all__ = ["HalfCauchy", "Pareto", "Weibull", "InverseGamma", "Kumaraswamy", "LogisticNormal"]

_EULER_GAMMA = 0.57721566490153286060


class HalfCauchy(_FoldedAtZero, TransformedDistribution):
    """HalfCauchy(scale): |Cauchy(0, scale)|."""

    arg_constraints = {"scale": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, scale, validate_args=None):
        base_dist = Cauchy(0, scale, validate_args=False)
        super().__init__(base_dist, AbsTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(HalfCauchy, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def mean(self):
        return ops.full(tuple(self._extended_shape()), math.inf, dtype=self.scale.dtype, device=self.scale.device)

    @property
    def variance(self):
        return self.base_dist.variance

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        value = ops.as_tensor(value, dtype=self.base_dist.scale.dtype, device=self.base_dist.scale.device)
        return self._folded_log_prob(value)


class Pareto(TransformedDistribution):
    """Pareto(scale, alpha): scale * exp(Exponential(alpha))."""

    arg_constraints = {"alpha": constraints.positive, "scale": constraints.positive}

    def __init__(self, scale, alpha, validate_args=None):
        self.scale, self.alpha = broadcast_all(scale, alpha)
        base_dist = Exponential(self.alpha, validate_args=validate_args)
        transforms = [ExpTransform(), AffineTransform(loc=0, scale=self.scale)]
        super().__init__(base_dist, transforms, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Pareto, _instance)
        new.scale = self.scale.expand(tuple(batch_shape))
        new.alpha = self.alpha.expand(tuple(batch_shape))
        return super().expand(batch_shape, _instance=new)

    @property
    def mean(self):
        a = self.alpha.clamp(min=1)  # infinite for alpha <= 1
        return a * self.scale / (a - 1)

    @property
    def mode(self):
        return self.scale

    @property
    def variance(self):
        a = self.alpha.clamp(min=2)  # infinite for alpha <= 2
        return self.scale.pow(2) * a / ((a - 1).pow(2) * (a - 2))

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        return constraints.greater_than_eq(self.scale)

    def entropy(self):
        return (self.scale / self.alpha).log() + (1 + self.alpha.reciprocal())


class Weibull(TransformedDistribution):
    """Weibull(scale, concentration): scale * Exponential(1) ** (1 / concentration)."""

    arg_constraints = {"scale": constraints.positive, "concentration": constraints.positive}
    support = constraints.positive

    def __init__(self, scale, concentration, validate_args=None):
        self.scale, self.concentration = broadcast_all(scale, concentration)
        self.concentration_reciprocal = self.concentration.reciprocal()
        base_dist = Exponential(ops.ones_like(self.scale), validate_args=validate_args)
        transforms = [PowerTransform(exponent=self.concentration_reciprocal), AffineTransform(loc=0, scale=self.scale)]
        super().__init__(base_dist, transforms, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Weibull, _instance)
        new.scale = self.scale.expand(tuple(batch_shape))
        new.concentration = self.concentration.expand(tuple(batch_shape))
        new.concentration_reciprocal = new.concentration.reciprocal()
        base_dist = self.base_dist.expand(batch_shape)
        transforms = [PowerTransform(exponent=new.concentration_reciprocal), AffineTransform(loc=0, scale=new.scale)]
        TransformedDistribution.__init__(new, base_dist, transforms, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        return self.scale * ops.exp(ops.lgamma(1 + self.concentration_reciprocal))

    @property
    def mode(self):
        return self.scale * ((self.concentration - 1) / self.concentration) ** self.concentration.reciprocal()

    @property
    def variance(self):
        return self.scale.pow(2) * (ops.exp(ops.lgamma(1 + 2 * self.concentration_reciprocal))
                                    - ops.exp(2 * ops.lgamma(1 + self.concentration_reciprocal)))

    def entropy(self):
        return (_EULER_GAMMA * (1 - self.concentration_reciprocal)
                + ops.log(self.scale * self.concentration_reciprocal) + 1)


class InverseGamma(TransformedDistribution):
    """InverseGamma(concentration, rate): 1 / Gamma(concentration, rate)."""

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, concentration, rate, validate_args=None):
        base_dist = Gamma(concentration, rate, validate_args=validate_args)
        neg_one = -base_dist.rate.new_ones(())
        super().__init__(base_dist, PowerTransform(neg_one), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(InverseGamma, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def concentration(self):
        return self.base_dist.concentration

    @property
    def rate(self):
        return self.base_dist.rate

    @property
    def mean(self):
        result = self.rate / (self.concentration - 1)
        return ops.where(self.concentration > 1, result, ops.full_like(result, math.inf))

    @property
    def mode(self):
        return self.rate / (self.concentration + 1)

    @property
    def variance(self):
        result = self.rate.square() / ((self.concentration - 1).square() * (self.concentration - 2))
        return ops.where(self.concentration > 2, result, ops.full_like(result, math.inf))

    def entropy(self):
        return (self.concentration + self.rate.log() + self.concentration.lgamma()
                - (1 + self.concentration) * self.concentration.digamma())


def _kumaraswamy_moment(a, b, n):
    """E[X^n] of Kumaraswamy(a, b) = b B(1 + n/a, b), through lgamma."""
    arg1 = 1 + n / a
    log_value = ops.lgamma(arg1) + ops.lgamma(b) - ops.lgamma(arg1 + b)
    return b * ops.exp(log_value)


class Kumaraswamy(TransformedDistribution):
    """Kumaraswamy(concentration1, concentration0): (1 - U ** (1/c0)) ** (1/c1) for U uniform."""

    arg_constraints = {"concentration1": constraints.positive, "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args=None):
        self.concentration1, self.concentration0 = broadcast_all(concentration1, concentration0)
        base_dist = Uniform(ops.full_like(self.concentration0, 0), ops.full_like(self.concentration0, 1),
                            validate_args=validate_args)
        transforms = [PowerTransform(exponent=self.concentration0.reciprocal()),
                      AffineTransform(loc=1.0, scale=-1.0),
                      PowerTransform(exponent=self.concentration1.reciprocal())]
        super().__init__(base_dist, transforms, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Kumaraswamy, _instance)
        new.concentration1 = self.concentration1.expand(tuple(batch_shape))
        new.concentration0 = self.concentration0.expand(tuple(batch_shape))
        return super().expand(batch_shape, _instance=new)

    @property
    def mean(self):
        return _kumaraswamy_moment(self.concentration1, self.concentration0, 1)

    @property
    def mode(self):
        log_mode = (self.concentration0.reciprocal() * (-self.concentration0).log1p()
                    - (-self.concentration0 * self.concentration1).log1p())  # in log space for stability
        undefined = (self.concentration0 < 1) | (self.concentration1 < 1)
        return ops.where(undefined, ops.full_like(log_mode, math.nan), log_mode).exp()

    @property
    def variance(self):
        return _kumaraswamy_moment(self.concentration1, self.concentration0, 2) - ops.pow(self.mean, 2)

    def entropy(self):
        t1 = 1 - self.concentration1.reciprocal()
        t0 = 1 - self.concentration0.reciprocal()
        H0 = ops.digamma(self.concentration0 + 1) + _EULER_GAMMA
        return t0 + t1 * H0 - ops.log(self.concentration1) - ops.log(self.concentration0)


class LogisticNormal(TransformedDistribution):
    """LogisticNormal(loc, scale): a Normal vector mapped onto the simplex by stick breaking."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        base_dist = Normal(loc, scale, validate_args=validate_args)
        if not base_dist.batch_shape:
            base_dist = base_dist.expand([1])
        super().__init__(base_dist, StickBreakingTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LogisticNormal, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def loc(self):
        return self.base_dist.base_dist.loc

    @property
    def scale(self):
        return self.base_dist.base_dist.scale

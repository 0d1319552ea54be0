"""Univariate continuous distributions: Normal, Uniform, Exponential, Laplace, Cauchy, Gamma, Chi2, Beta,
StudentT, FisherSnedecor."""
from __future__ import annotations

import math
from numbers import Number

from .. import ops
from ..autograd import no_grad
from ..ops.elementwise.special_functions import gammainc
from ..tensor import Size
from . import constraints
from ._sampling import standard_gamma
from .distribution import Distribution, _expand_params
from .exp_family import ExponentialFamily
from .multivariate import Dirichlet
from .utils import _standard_normal, broadcast_all, broadcast_params, eps_of, tiny_of

__all__ = ["Normal", "Uniform", "Exponential", "Laplace", "Cauchy", "Gamma", "Chi2", "Beta", "StudentT",
           "FisherSnedecor"]


class Normal(ExponentialFamily):
    """Normal(loc, scale): the Gaussian with mean loc and standard deviation scale."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(self, loc, scale, validate_args=None):
        (self.loc, self.scale), batch_shape = broadcast_params(loc, scale)
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return _expand_params(self, Normal, ("loc", "scale"), batch_shape, _instance)

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def stddev(self):
        return self.scale

    @property
    def variance(self):
        return self.stddev.pow(2)

    def sample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        with no_grad():
            return ops.normal(self.loc.expand(shape), self.scale.expand(shape))

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        eps = _standard_normal(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + eps * self.scale

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        var = self.scale ** 2
        log_scale = math.log(self.scale) if isinstance(self.scale, Number) else self.scale.log()
        return -((value - self.loc) ** 2) / (2 * var) - log_scale - math.log(math.sqrt(2 * math.pi))

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 0.5 * (1 + ops.erf((value - self.loc) * self.scale.reciprocal() / math.sqrt(2)))

    def icdf(self, value):
        return self.loc + self.scale * ops.erfinv(2 * value - 1) * math.sqrt(2)

    def entropy(self):
        return 0.5 + 0.5 * math.log(2 * math.pi) + ops.log(self.scale)

    @property
    def _natural_params(self):
        return self.loc / self.scale.pow(2), -0.5 * self.scale.pow(2).reciprocal()

    def _log_normalizer(self, x, y):
        return -0.25 * x.pow(2) / y + 0.5 * ops.log(-math.pi / y)


class Uniform(Distribution):
    """Uniform(low, high): uniform on the half-open interval [low, high)."""

    has_rsample = True

    def __init__(self, low, high, validate_args=None):
        (self.low, self.high), batch_shape = broadcast_params(low, high)
        super().__init__(batch_shape, validate_args=validate_args)

    @property
    def arg_constraints(self):
        return {"low": constraints.less_than(self.high), "high": constraints.greater_than(self.low)}

    def expand(self, batch_shape, _instance=None):
        return _expand_params(self, Uniform, ("low", "high"), batch_shape, _instance)

    @property
    def mean(self):
        return (self.high + self.low) / 2

    @property
    def mode(self):
        return math.nan * self.high

    @property
    def stddev(self):
        return (self.high - self.low) / 12 ** 0.5

    @property
    def variance(self):
        return (self.high - self.low).pow(2) / 12

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        return constraints.interval(self.low, self.high)

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        rand = ops.rand(tuple(shape), dtype=self.low.dtype, device=self.low.device)
        return self.low + rand * (self.high - self.low)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        lb = self.low.le(value).type_as(self.low)
        ub = self.high.gt(value).type_as(self.low)
        return ops.log(lb.mul(ub)) - ops.log(self.high - self.low)

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        result = (value - self.low) / (self.high - self.low)
        return result.clamp(min=0, max=1)

    def icdf(self, value):
        return value * (self.high - self.low) + self.low

    def entropy(self):
        return ops.log(self.high - self.low)


class Exponential(ExponentialFamily):
    """Exponential(rate): density rate * exp(-rate * x) on x >= 0."""

    arg_constraints = {"rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(self, rate, validate_args=None):
        (self.rate,), batch_shape = broadcast_params(rate)
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return _expand_params(self, Exponential, ("rate",), batch_shape, _instance)

    @property
    def mean(self):
        return self.rate.reciprocal()

    @property
    def mode(self):
        return ops.zeros_like(self.rate)

    @property
    def stddev(self):
        return self.rate.reciprocal()

    @property
    def variance(self):
        return self.rate.pow(-2)

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        return self.rate.new_empty(tuple(shape)).exponential_() / self.rate

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return self.rate.log() - self.rate * value

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 1 - ops.exp(-self.rate * value)

    def icdf(self, value):
        return -ops.log1p(-value) / self.rate

    def entropy(self):
        return 1.0 - ops.log(self.rate)

    @property
    def _natural_params(self):
        return (-self.rate,)

    def _log_normalizer(self, x):
        return -ops.log(-x)


class Laplace(Distribution):
    """Laplace(loc, scale): density exp(-|x - loc| / scale) / (2 scale)."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        (self.loc, self.scale), batch_shape = broadcast_params(loc, scale)
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return _expand_params(self, Laplace, ("loc", "scale"), batch_shape, _instance)

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        return 2 * self.scale.pow(2)

    @property
    def stddev(self):
        return (2 ** 0.5) * self.scale

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        u = self.loc.new_empty(tuple(shape)).uniform_(eps_of(self.loc.dtype) - 1, 1)
        return self.loc - self.scale * u.sign() * ops.log1p(-u.abs())

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return -ops.log(2 * self.scale) - ops.abs(value - self.loc) / self.scale

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 0.5 - 0.5 * (value - self.loc).sign() * ops.expm1(-(value - self.loc).abs() / self.scale)

    def icdf(self, value):
        term = value - 0.5
        return self.loc - self.scale * term.sign() * ops.log1p(-2 * term.abs())

    def entropy(self):
        return 1 + ops.log(2 * self.scale)


class Cauchy(Distribution):
    """Cauchy(loc, scale): the ratio of two independent normals, shifted and scaled."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        (self.loc, self.scale), batch_shape = broadcast_params(loc, scale)
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return _expand_params(self, Cauchy, ("loc", "scale"), batch_shape, _instance)

    @property
    def mean(self):
        return ops.full(tuple(self._extended_shape()), math.nan, dtype=self.loc.dtype, device=self.loc.device)

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        return ops.full(tuple(self._extended_shape()), math.inf, dtype=self.loc.dtype, device=self.loc.device)

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        eps = self.loc.new_empty(tuple(shape)).cauchy_()
        return self.loc + eps * self.scale

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return -math.log(math.pi) - self.scale.log() - (((value - self.loc) / self.scale) ** 2).log1p()

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return ops.atan((value - self.loc) / self.scale) / math.pi + 0.5

    def icdf(self, value):
        return ops.tan(math.pi * (value - 0.5)) * self.scale + self.loc

    def entropy(self):
        return math.log(4 * math.pi) + self.scale.log()


class Gamma(ExponentialFamily):
    """Gamma(concentration, rate): density rate^a x^(a-1) exp(-rate x) / Gamma(a)."""

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(self, concentration, rate, validate_args=None):
        (self.concentration, self.rate), batch_shape = broadcast_params(concentration, rate)
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return _expand_params(self, Gamma, ("concentration", "rate"), batch_shape, _instance)

    @property
    def mean(self):
        return self.concentration / self.rate

    @property
    def mode(self):
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self):
        return self.concentration / self.rate.pow(2)

    def rsample(self, sample_shape=Size()):
        shape = tuple(self._extended_shape(sample_shape))
        value = standard_gamma(self.concentration.expand(shape)) / self.rate.expand(shape)
        return value.clamp(min=tiny_of(value.dtype))  # a sample of 0 would give log_prob -inf

    def log_prob(self, value):
        value = ops.as_tensor(value, dtype=self.rate.dtype, device=self.rate.device)
        if self._validate_args:
            self._validate_sample(value)
        return (ops.xlogy(self.concentration, self.rate) + ops.xlogy(self.concentration - 1, value)
                - self.rate * value - ops.lgamma(self.concentration))

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return gammainc(self.concentration, self.rate * value)

    def entropy(self):
        return (self.concentration - ops.log(self.rate) + ops.lgamma(self.concentration)
                + (1.0 - self.concentration) * ops.digamma(self.concentration))

    @property
    def _natural_params(self):
        return self.concentration - 1, -self.rate

    def _log_normalizer(self, x, y):
        return ops.lgamma(x + 1) + (x + 1) * ops.log(-y.reciprocal())


class Chi2(Gamma):
    """Chi2(df): Gamma(df / 2, 1 / 2)."""

    arg_constraints = {"df": constraints.positive}

    def __init__(self, df, validate_args=None):
        super().__init__(0.5 * df, 0.5, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Chi2, _instance)
        return super().expand(batch_shape, new)

    @property
    def df(self):
        return self.concentration * 2


class Beta(ExponentialFamily):
    """Beta(concentration1, concentration0) on [0, 1], sampled through a two-category Dirichlet."""

    arg_constraints = {"concentration1": constraints.positive, "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args=None):
        if isinstance(concentration1, Number) and isinstance(concentration0, Number):
            both = ops.tensor([float(concentration1), float(concentration0)])
        else:
            concentration1, concentration0 = broadcast_all(concentration1, concentration0)
            both = ops.stack([concentration1, concentration0], -1)
        self._dirichlet = Dirichlet(both, validate_args=validate_args)
        super().__init__(self._dirichlet._batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return _expand_params(self, Beta, ("_dirichlet",), batch_shape, _instance)

    @property
    def mean(self):
        return self.concentration1 / (self.concentration1 + self.concentration0)

    @property
    def mode(self):
        return self._dirichlet.mode[..., 0]

    @property
    def variance(self):
        total = self.concentration1 + self.concentration0
        return self.concentration1 * self.concentration0 / (total.pow(2) * (total + 1))

    def rsample(self, sample_shape=()):
        return self._dirichlet.rsample(sample_shape).select(-1, 0)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        heads_tails = ops.stack([value, 1.0 - value], -1)
        return self._dirichlet.log_prob(heads_tails)

    def entropy(self):
        return self._dirichlet.entropy()

    @property
    def concentration1(self):
        result = self._dirichlet.concentration[..., 0]
        return ops.tensor([result]) if isinstance(result, Number) else result

    @property
    def concentration0(self):
        result = self._dirichlet.concentration[..., 1]
        return ops.tensor([result]) if isinstance(result, Number) else result

    @property
    def _natural_params(self):
        return self.concentration1, self.concentration0

    def _log_normalizer(self, x, y):
        return ops.lgamma(x) + ops.lgamma(y) - ops.lgamma(x + y)


class StudentT(Distribution):
    """StudentT(df, loc, scale): Student's t with df degrees of freedom, shifted and scaled."""

    arg_constraints = {"df": constraints.positive, "loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, df, loc=0.0, scale=1.0, validate_args=None):
        self.df, self.loc, self.scale = broadcast_all(df, loc, scale)
        self._chi2 = Chi2(self.df)
        super().__init__(self.df.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return _expand_params(self, StudentT, ("df", "loc", "scale", "_chi2"), batch_shape, _instance)

    @property
    def mean(self):
        return ops.where(self.df <= 1, ops.full_like(self.loc, math.nan), self.loc)

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        df = self.df
        finite = self.scale.pow(2) * df / ops.where(df > 2, df - 2, ops.ones_like(df))
        m = ops.where(df > 2, finite, ops.full_like(df, math.inf))
        return ops.where(df <= 1, ops.full_like(df, math.nan), m)

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        X = _standard_normal(shape, dtype=self.df.dtype, device=self.df.device)
        Z = self._chi2.rsample(sample_shape)
        Y = X * ops.rsqrt(Z / self.df)
        return self.loc + self.scale * Y

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        y = (value - self.loc) / self.scale
        Z = (self.scale.log() + 0.5 * self.df.log() + 0.5 * math.log(math.pi) + ops.lgamma(0.5 * self.df)
             - ops.lgamma(0.5 * (self.df + 1.0)))
        return -0.5 * (self.df + 1.0) * ops.log1p(y ** 2.0 / self.df) - Z

    def entropy(self):
        lbeta = ops.lgamma(0.5 * self.df) + math.lgamma(0.5) - ops.lgamma(0.5 * (self.df + 1))
        return (self.scale.log() + 0.5 * (self.df + 1) * (ops.digamma(0.5 * (self.df + 1))
                - ops.digamma(0.5 * self.df)) + 0.5 * self.df.log() + lbeta)


class FisherSnedecor(Distribution):
    """FisherSnedecor(df1, df2): the F distribution, a ratio of scaled chi-squares."""

    arg_constraints = {"df1": constraints.positive, "df2": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, df1, df2, validate_args=None):
        (self.df1, self.df2), batch_shape = broadcast_params(df1, df2)
        self._gamma1 = Gamma(self.df1 * 0.5, self.df1)
        self._gamma2 = Gamma(self.df2 * 0.5, self.df2)
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return _expand_params(self, FisherSnedecor, ("df1", "df2", "_gamma1", "_gamma2"), batch_shape, _instance)

    @property
    def mean(self):
        df2 = ops.where(self.df2 <= 2, ops.full_like(self.df2, math.nan), self.df2)
        return df2 / (df2 - 2)

    @property
    def mode(self):
        mode = (self.df1 - 2) / self.df1 * self.df2 / (self.df2 + 2)
        return ops.where(self.df1 <= 2, ops.full_like(mode, math.nan), mode)

    @property
    def variance(self):
        df2 = ops.where(self.df2 <= 4, ops.full_like(self.df2, math.nan), self.df2)
        return 2 * df2.pow(2) * (self.df1 + df2 - 2) / (self.df1 * (df2 - 2).pow(2) * (df2 - 4))

    def rsample(self, sample_shape=Size()):
        shape = tuple(self._extended_shape(sample_shape))
        # X1 ~ Gamma(df1 / 2, df1), X2 ~ Gamma(df2 / 2, df2): X1 / X2 ~ F(df1, df2)
        X1 = self._gamma1.rsample(sample_shape).view(shape)
        X2 = self._gamma2.rsample(sample_shape).view(shape)
        tiny = tiny_of(X2.dtype)
        return (X1 / X2.clamp(min=tiny)).clamp(min=tiny)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        ct1 = self.df1 * 0.5
        ct2 = self.df2 * 0.5
        ct3 = self.df1 / self.df2
        t1 = (ct1 + ct2).lgamma() - ct1.lgamma() - ct2.lgamma()
        t2 = ct1 * ct3.log() + (ct1 - 1) * ops.log(value)
        t3 = (ct1 + ct2) * ops.log1p(ct3 * value)
        return t1 + t2 - t3


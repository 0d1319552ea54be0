"""GeneralizedPareto(loc, scale, concentration): the limit law of threshold exceedances (exponential at
concentration 0, bounded above when it is negative)."""
from __future__ import annotations

import math
from numbers import Real

from .. import ops
from ..tensor import Size
from . import constraints
from .distribution import Distribution, _expand_params
from .utils import broadcast_params

__all__ = ["GeneralizedPareto"]


class GeneralizedPareto(Distribution):
    """GeneralizedPareto(loc, scale, concentration), sampled through its inverse cdf."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive, "concentration": constraints.real}
    has_rsample = True

    def __init__(self, loc, scale, concentration, validate_args=None):
        (self.loc, self.scale, self.concentration), batch_shape = broadcast_params(loc, scale, concentration)
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return _expand_params(self, GeneralizedPareto, ("loc", "scale", "concentration"), batch_shape, _instance)

    def _safe_concentration(self):
        """(concentration == 0 mask, concentration with the zeros replaced by 1)."""
        eq_zero = ops.isclose(self.concentration, ops.zeros_like(self.concentration))
        return eq_zero, ops.where(eq_zero, ops.ones_like(self.concentration), self.concentration)

    def rsample(self, sample_shape=Size()):
        shape = tuple(self._extended_shape(sample_shape))
        u = ops.rand(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.icdf(u)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        z = self._z(value)
        eq_zero, safe_conc = self._safe_concentration()
        y = 1 / safe_conc + ops.ones_like(z)
        where_nonzero = ops.where(y == 0, y, y * ops.log1p(safe_conc * z))
        log_scale = math.log(self.scale) if isinstance(self.scale, Real) else self.scale.log()
        return -log_scale - ops.where(eq_zero, z, where_nonzero)

    def log_survival_function(self, value):
        """log(1 - cdf(value))."""
        if self._validate_args:
            self._validate_sample(value)
        z = self._z(value)
        eq_zero, safe_conc = self._safe_concentration()
        where_nonzero = -ops.log1p(safe_conc * z) / safe_conc
        return ops.where(eq_zero, -z, where_nonzero)

    def log_cdf(self, value):
        """log(cdf(value))."""
        return ops.log1p(-ops.exp(self.log_survival_function(value)))

    def cdf(self, value):
        return ops.exp(self.log_cdf(value))

    def icdf(self, value):
        eq_zero, safe_conc = self._safe_concentration()
        logu = ops.log1p(-value)
        where_nonzero = self.loc + self.scale / safe_conc * ops.expm1(-safe_conc * logu)
        where_zero = self.loc - self.scale * logu
        return ops.where(eq_zero, where_zero, where_nonzero)

    def _z(self, x):
        return (x - self.loc) / self.scale

    @property
    def mean(self):
        valid = self.concentration < 1
        safe_conc = ops.where(valid, self.concentration, ops.full_like(self.concentration, 0.5))
        result = self.loc + self.scale / (1 - safe_conc)
        return ops.where(valid, result, ops.full_like(result, math.nan))

    @property
    def variance(self):
        valid = self.concentration < 0.5
        safe_conc = ops.where(valid, self.concentration, ops.full_like(self.concentration, 0.25))
        result = self.scale ** 2 / ((1 - safe_conc) ** 2 * (1 - 2 * safe_conc))
        return ops.where(valid, result, ops.full_like(result, math.nan))

    def entropy(self):
        ans = ops.log(self.scale) + self.concentration + 1
        return ops.broadcast_to(ans, tuple(self._batch_shape))

    @property
    def mode(self):
        return self.loc

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        lower = self.loc
        upper = ops.where(self.concentration < 0, lower - self.scale / self.concentration,
                            ops.full_like(lower, math.inf))
        return constraints.interval(lower, upper)

"""VonMises(loc, concentration): the circular normal distribution on [-pi, pi)."""
from __future__ import annotations

import math

from .. import ops
from ..autograd import no_grad
from ..tensor import Size, Tensor
from ..tensor import dtype as dt
from . import constraints
from .distribution import Distribution
from .utils import broadcast_all, lazy_property

__all__ = ["VonMises"]

# polynomial approximations of the modified Bessel functions I0 and I1 (Abramowitz & Stegun 9.8.1-9.8.4), the ones
# torch evaluates, so log densities agree to the last digit: in (x / 3.75)^2 below 3.75, in 3.75 / x above
_BESSEL_SMALL = {0: (1.0, 3.5156229, 3.0899424, 1.2067492, 0.2659732, 0.0360768, 0.0045813),
                 1: (0.5, 0.87890594, 0.51498869, 0.15084934, 0.02658733, 0.00301532, 0.00032411)}
_BESSEL_LARGE = {0: (0.39894228, 0.01328592, 0.00225319, -0.00157565, 0.00916281, -0.02057706, 0.02635537,
                     -0.01647633, 0.00392377),
                 1: (0.39894228, -0.03988024, -0.00362018, 0.00163801, -0.01031555, 0.02282967, -0.02895312,
                     0.01787654, -0.00420059)}


def _polynomial(y: Tensor, coefficients: tuple) -> Tensor:
    """sum_k c_k y^k by Horner's rule."""
    result = coefficients[-1] * ops.ones_like(y)
    for c in reversed(coefficients[:-1]):
        result = result * y + c
    return result


def _log_modified_bessel_fn(x: Tensor, order: int = 0) -> Tensor:
    """log I_order(x) for x > 0, order 0 or 1."""
    if order not in (0, 1):
        raise AssertionError(f"order must be 0 or 1, got {order}")
    small = _polynomial((x / 3.75) ** 2, _BESSEL_SMALL[order])
    if order == 1:
        small = x.abs() * small
    large = x - 0.5 * x.log() + _polynomial(3.75 / x, _BESSEL_LARGE[order]).log()
    return ops.where(x < 3.75, small.log(), large)


class VonMises(Distribution):
    """VonMises(loc, concentration): density exp(concentration cos(x - loc)) / (2 pi I0(concentration))."""

    arg_constraints = {"loc": constraints.real, "concentration": constraints.positive}
    support = constraints.real
    has_rsample = False

    def __init__(self, loc, concentration, validate_args=None):
        self.loc, self.concentration = broadcast_all(loc, concentration)
        super().__init__(self.loc.shape, Size(), validate_args)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        log_prob = self.concentration * ops.cos(value - self.loc)
        return log_prob - math.log(2 * math.pi) - _log_modified_bessel_fn(self.concentration, order=0)

    def sample(self, sample_shape=Size()):
        """Best and Fisher's rejection sampler in double precision, torch's steps (three uniforms per element
        and round, until every element is accepted), so the draws from the generator are torch's."""
        shape = tuple(self._extended_shape(sample_shape))
        with no_grad():
            loc, kappa = self.loc.double(), self.concentration.double()
            tau = 1 + (1 + 4 * kappa ** 2).sqrt()
            rho = (tau - (2 * tau).sqrt()) / (2 * kappa)
            r = ops.where(kappa < 1e-5, 1 / kappa + kappa, (1 + rho ** 2) / (2 * rho))
            x = ops.zeros(shape, dtype=dt.float64, device=self.loc.device)
            done = ops.zeros(shape, dtype=dt.bool_, device=self.loc.device)
            while not bool(done.all()):
                u1, u2, u3 = ops.rand((3,) + shape, dtype=dt.float64, device=self.loc.device).unbind()
                z = ops.cos(math.pi * u1)
                f = (1 + r * z) / (r + z)
                c = kappa * (r - f)
                accept = ((c * (2 - c) - u2) > 0) | ((c / u2).log() + 1 - c >= 0)
                if bool(accept.any()):
                    x = ops.where(accept, (u3 - 0.5).sign() * f.acos(), x)
                    done = done | accept
            return ((x + math.pi + loc) % (2 * math.pi) - math.pi).to(self.loc.dtype)

    def expand(self, batch_shape, _instance=None):
        try:
            return super().expand(batch_shape)
        except NotImplementedError:
            validate_args = self.__dict__.get("_validate_args")
            return type(self)(self.loc.expand(tuple(batch_shape)), self.concentration.expand(tuple(batch_shape)),
                              validate_args=validate_args)

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @lazy_property
    def variance(self):
        """The circular variance 1 - I1(k) / I0(k)."""
        return 1 - (_log_modified_bessel_fn(self.concentration, order=1)
                    - _log_modified_bessel_fn(self.concentration, order=0)).exp()

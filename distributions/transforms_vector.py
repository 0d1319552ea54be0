"""Transforms of whole vectors and matrices (Softmax, StickBreaking, LowerCholesky, PositiveDefinite,
CorrCholesky) and a distribution's cdf as a transform."""
from __future__ import annotations

import math

from .. import ops
from ..nn import functional as F
from ..ops.linalg import namespace as linalg
from ..tensor import Size
from . import constraints
from .transform import Transform, _ParameterFree, _needs_dims
from .transforms_elementwise import _clipped_sigmoid
from .utils import eps_of, tiny_of, tril_matrix_to_vec, vec_to_tril_matrix

__all__ = ["CorrCholeskyTransform", "CumulativeDistributionTransform", "LowerCholeskyTransform",
           "PositiveDefiniteTransform", "SoftmaxTransform", "StickBreakingTransform"]


class SoftmaxTransform(_ParameterFree):
    """Real vectors to the simplex by softmax (not bijective: the inverse is the log)."""

    domain = constraints.real_vector
    codomain = constraints.simplex

    def _call(self, x):
        probs = (x - x.max(-1, True)[0]).exp()
        return probs / probs.sum(-1, True)

    def _inverse(self, y):
        return y.log()

    def forward_shape(self, shape):
        _needs_dims(len(shape), 1)
        return shape

    def inverse_shape(self, shape):
        _needs_dims(len(shape), 1)
        return shape


class StickBreakingTransform(_ParameterFree):
    """Real vectors of length K-1 to the K-simplex by stick breaking (bijective)."""

    domain = constraints.real_vector
    codomain = constraints.simplex
    bijective = True

    def _call(self, x):
        offset = x.shape[-1] + 1 - x.new_ones(x.shape[-1]).cumsum(-1)
        z = _clipped_sigmoid(x - offset.log())
        z_cumprod = (1 - z).cumprod(-1)
        return F.pad(z, [0, 1], value=1) * F.pad(z_cumprod, [1, 0], value=1)

    def _inverse(self, y):
        y_crop = y[..., :-1]
        offset = y.shape[-1] - y.new_ones(y_crop.shape[-1]).cumsum(-1)
        sf = 1 - y_crop.cumsum(-1)
        sf = ops.clamp(sf, min=tiny_of(y.dtype))  # the remaining stick may round to 0
        return y_crop.log() - sf.log() + offset.log()

    def log_abs_det_jacobian(self, x, y):
        offset = x.shape[-1] + 1 - x.new_ones(x.shape[-1]).cumsum(-1)
        x = x - offset.log()
        return (-x + F.logsigmoid(x) + y[..., :-1].log()).sum(-1)

    def forward_shape(self, shape):
        _needs_dims(len(shape), 1)
        return Size(tuple(shape[:-1]) + (shape[-1] + 1,))

    def inverse_shape(self, shape):
        _needs_dims(len(shape), 1)
        return Size(tuple(shape[:-1]) + (shape[-1] - 1,))


class LowerCholeskyTransform(_ParameterFree):
    """Unconstrained square matrices to lower-triangular ones with a positive (exponentiated) diagonal."""

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.lower_cholesky

    def _call(self, x):
        return x.tril(-1) + x.diagonal(dim1=-2, dim2=-1).exp().diag_embed()

    def _inverse(self, y):
        return y.tril(-1) + y.diagonal(dim1=-2, dim2=-1).log().diag_embed()


class PositiveDefiniteTransform(_ParameterFree):
    """Unconstrained square matrices to positive definite ones: L L^T with L from LowerCholeskyTransform."""

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.positive_definite

    def _call(self, x):
        x = LowerCholeskyTransform()(x)
        return x @ x.mT

    def _inverse(self, y):
        return LowerCholeskyTransform().inv(linalg.cholesky(y))


class CorrCholeskyTransform(Transform):
    """Vectors of D(D-1)/2 reals to Cholesky factors of D x D correlation matrices (tanh, then stick breaking
    on the squared entries of each row)."""

    domain = constraints.real_vector
    codomain = constraints.corr_cholesky
    bijective = True

    def _call(self, x):
        x = ops.tanh(x)
        eps = eps_of(x.dtype)
        x = x.clamp(min=-1 + eps, max=1 - eps)
        r = vec_to_tril_matrix(x, diag=-1)
        # y = sign(r) sqrt(z * cumprod(1 - z)) with z = r^2, which is r * sqrt(cumprod(1 - z))
        z1m_cumprod_sqrt = (1 - r ** 2).sqrt().cumprod(-1)
        r = r + ops.eye(r.shape[-1], dtype=r.dtype, device=r.device)  # unit diagonal
        return r * F.pad(z1m_cumprod_sqrt[..., :-1], [1, 0], value=1)

    def _inverse(self, y):
        y_cumsum = 1 - ops.cumsum(y * y, dim=-1)
        y_cumsum_shifted = F.pad(y_cumsum[..., :-1], [1, 0], value=1)
        y_vec = tril_matrix_to_vec(y, diag=-1)
        y_cumsum_vec = tril_matrix_to_vec(y_cumsum_shifted, diag=-1)
        t = y_vec / y_cumsum_vec.sqrt()
        return (t.log1p() - t.neg().log1p()) / 2  # atanh

    def log_abs_det_jacobian(self, x, y, intermediates=None):
        # the spaces differ in dimension: this is the Jacobian against the flattened lower triangle of y
        y1m_cumsum = 1 - (y * y).cumsum(dim=-1)
        y1m_cumsum_tril = tril_matrix_to_vec(y1m_cumsum, diag=-2)  # diag -2: no shift of the cumulative product
        stick_breaking_logdet = 0.5 * y1m_cumsum_tril.log().sum(-1)
        tanh_logdet = -2 * (x + F.softplus(-2 * x) - math.log(2.0)).sum(dim=-1)
        return stick_breaking_logdet + tanh_logdet

    def forward_shape(self, shape):
        _needs_dims(len(shape), 1)
        N = shape[-1]
        D = round((0.25 + 2 * N) ** 0.5 + 0.5)
        if D * (D - 1) // 2 != N:
            raise ValueError("Input is not a flattened lower-diagonal number")
        return Size(tuple(shape[:-1]) + (D, D))

    def inverse_shape(self, shape):
        _needs_dims(len(shape), 2)
        if shape[-2] != shape[-1]:
            raise ValueError("Input is not square")
        D = shape[-1]
        return Size(tuple(shape[:-2]) + (D * (D - 1) // 2,))


class CumulativeDistributionTransform(Transform):
    """A distribution's cdf as a transform onto the unit interval (its log density is the Jacobian)."""

    bijective = True
    codomain = constraints.unit_interval
    sign = +1

    def __init__(self, distribution, cache_size: int = 0):
        super().__init__(cache_size=cache_size)
        self.distribution = distribution

    @property
    def domain(self):
        return self.distribution.support

    def _call(self, x):
        return self.distribution.cdf(x)

    def _inverse(self, y):
        return self.distribution.icdf(y)

    def log_abs_det_jacobian(self, x, y):
        return self.distribution.log_prob(x)

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return CumulativeDistributionTransform(self.distribution, cache_size=cache_size)


"""Wishart(df, covariance_matrix | precision_matrix | scale_tril): distributions over positive definite matrices,
sampled by the Bartlett decomposition (reparameterized through chi-square and normal draws)."""
from __future__ import annotations

import math
import warnings
from numbers import Number

from .. import ops
from ..ops.linalg import namespace as linalg
from ..tensor import Size
from . import constraints
from .continuous import Chi2
from .distribution import _expand_params
from .exp_family import ExponentialFamily
from .multivariate import _ScaleTrilMatrices, _scale_tril_from
from .utils import eps_of

__all__ = ["Wishart"]

_LOG_2 = math.log(2)


def _mvdigamma(x, p: int):
    """The multivariate digamma: sum over i < p of digamma(x - i/2)."""
    if not bool(x.gt((p - 1) / 2).all()):
        raise AssertionError("Wrong domain for multivariate digamma function.")
    shifts = ops.arange(p, dtype=x.dtype, device=x.device).div(2)
    return ops.digamma(x.unsqueeze(-1) - shifts.expand(tuple(x.shape) + (-1,))).sum(-1)


def _logdet_spd(matrix):
    """log det of symmetric positive definite matrices, through their Cholesky factors."""
    return 2 * linalg.cholesky(matrix).diagonal(dim1=-2, dim2=-1).log().sum(-1)


class Wishart(_ScaleTrilMatrices, ExponentialFamily):
    """Wishart(df, covariance_matrix=None, precision_matrix=None, scale_tril=None)."""

    support = constraints.positive_definite
    has_rsample = True
    _mean_carrier_measure = 0

    @property
    def arg_constraints(self):
        return {"covariance_matrix": constraints.positive_definite,
                "precision_matrix": constraints.positive_definite, "scale_tril": constraints.lower_cholesky,
                "df": constraints.greater_than(self.event_shape[-1] - 1)}

    def __init__(self, df, covariance_matrix=None, precision_matrix=None, scale_tril=None, validate_args=None):
        if (covariance_matrix is not None) + (scale_tril is not None) + (precision_matrix is not None) != 1:
            raise AssertionError("Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified.")
        param = next(p for p in (covariance_matrix, precision_matrix, scale_tril) if p is not None)
        if param.dim() < 2:
            raise ValueError("scale_tril must be at least two-dimensional, with optional leading batch dimensions")
        if isinstance(df, Number):
            batch_shape = Size(tuple(param.shape[:-2]))
            self.df = ops.tensor(df, dtype=param.dtype, device=param.device)
        else:
            batch_shape = Size(tuple(ops.broadcast_shapes(tuple(param.shape[:-2]), tuple(df.shape))))
            self.df = df.expand(batch_shape)
        event_shape = param.shape[-2:]
        if bool(self.df.le(event_shape[-1] - 1).any()):
            raise ValueError(f"Value of df={df} expected to be greater than ndim - 1 = {event_shape[-1] - 1}.")
        matrix_shape = tuple(batch_shape) + (-1, -1)
        if scale_tril is not None:
            self.scale_tril = param.expand(matrix_shape)
        elif covariance_matrix is not None:
            self.covariance_matrix = param.expand(matrix_shape)
        else:
            self.precision_matrix = param.expand(matrix_shape)
        if bool(self.df.lt(event_shape[-1]).any()):
            warnings.warn("Low df values detected. Singular samples are highly likely to occur for ndim - 1 < df < "
                          "ndim.", stacklevel=2)
        super().__init__(batch_shape, event_shape, validate_args=validate_args)
        self._batch_dims = [-(x + 1) for x in range(len(self._batch_shape))]
        self._unbroadcasted_scale_tril = _scale_tril_from(scale_tril, covariance_matrix, precision_matrix)
        self._dist_chi2 = self._bartlett_chi2(batch_shape)

    def _bartlett_chi2(self, batch_shape):
        """The chi-squares of the Bartlett factor's diagonal: df - i degrees of freedom on row i."""
        shifts = ops.arange(self._event_shape[-1], dtype=self._unbroadcasted_scale_tril.dtype,
                              device=self._unbroadcasted_scale_tril.device)
        return Chi2(df=self.df.unsqueeze(-1) - shifts.expand(tuple(batch_shape) + (-1,)))

    def expand(self, batch_shape, _instance=None):
        new = _expand_params(self, Wishart, (), batch_shape, _instance)
        batch_shape = new.batch_shape
        cov_shape = tuple(batch_shape) + tuple(self.event_shape)
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril.expand(cov_shape)
        new.df = self.df.expand(batch_shape)
        new._batch_dims = [-(x + 1) for x in range(len(batch_shape))]
        self._expand_matrices(new, cov_shape)
        new._dist_chi2 = new._bartlett_chi2(batch_shape)
        return new

    def _matrix_shape(self) -> tuple:
        return tuple(self._batch_shape) + tuple(self._event_shape)

    def _df_matrix(self):
        return self.df.view(tuple(self._batch_shape) + (1, 1))

    @property
    def mean(self):
        return self._df_matrix() * self.covariance_matrix

    @property
    def mode(self):
        factor = self.df - self.covariance_matrix.shape[-1] - 1
        factor = ops.where(factor <= 0, ops.full_like(factor, math.nan), factor)
        return factor.view(tuple(self._batch_shape) + (1, 1)) * self.covariance_matrix

    @property
    def variance(self):
        V = self.covariance_matrix
        diag_V = V.diagonal(dim1=-2, dim2=-1)
        return self._df_matrix() * (V.pow(2) + diag_V.unsqueeze(-1) * diag_V.unsqueeze(-2))

    def _bartlett_sampling(self, sample_shape=Size()):
        """S = (L A)(L A)^T with A lower triangular: sqrt(chi2(df - i)) on the diagonal, normals below it."""
        p = self._event_shape[-1]
        noise = self._dist_chi2.rsample(sample_shape).sqrt().clamp(min=eps_of(self.df.dtype)).diag_embed()
        # the p (p - 1) / 2 normals below the diagonal, row by row, as torch draws them
        i, j = ops.tril_indices(p, p, offset=-1)
        noise[..., i, j] = ops.randn(tuple(sample_shape) + tuple(self._batch_shape) + (p * (p - 1) // 2,),
                                       dtype=noise.dtype, device=noise.device)
        chol = self._unbroadcasted_scale_tril @ noise
        return chol @ chol.transpose(-2, -1)

    def rsample(self, sample_shape=Size(), max_try_correction=None):
        max_try_correction = 10 if max_try_correction is None else max_try_correction
        sample_shape = Size(tuple(sample_shape))
        sample = self._bartlett_sampling(sample_shape)
        # torch's correction loop, step for step, so that its draws are torch's: note that torch's first check
        # marks the samples *in* the support (positive definite), so it always warns and draws those again once
        is_singular = self.support.check(sample.detach())
        if self._batch_shape:
            is_singular = is_singular.amax(self._batch_dims)
        if bool(is_singular.any()):
            warnings.warn("Singular sample detected.", stacklevel=2)
            for _ in range(max_try_correction):
                sample_new = self._bartlett_sampling(Size(tuple(is_singular[is_singular].shape)))
                sample[is_singular.clone()] = sample_new  # (a copy: the mask changes below; torch's loses backward)
                is_singular_new = ~self.support.check(sample_new.detach())
                if self._batch_shape:
                    is_singular_new = is_singular_new.amax(self._batch_dims)
                is_singular[is_singular.clone()] = is_singular_new
                if not bool(is_singular.any()):
                    break
        return sample

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        nu = self.df
        p = self._event_shape[-1]
        L = self._unbroadcasted_scale_tril
        # tr(Sigma^-1 X) with Sigma = L L^T: solve L Y = X, then L^T Z = Y
        batch = tuple(ops.broadcast_shapes(tuple(L.shape[:-2]), tuple(value.shape[:-2])))
        L_b = L.expand(batch + (p, p))
        Z = linalg.solve(L_b.mT, linalg.solve(L_b, value.expand(batch + (p, p))))
        half_logdet_scale = L.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        return (-nu * (p * _LOG_2 / 2 + half_logdet_scale) - ops.mvlgamma(nu / 2, p=p)
                + (nu - p - 1) / 2 * _logdet_spd(value) - Z.diagonal(dim1=-2, dim2=-1).sum(dim=-1) / 2)

    def entropy(self):
        nu = self.df
        p = self._event_shape[-1]
        half_logdet_scale = self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        return ((p + 1) * (p * _LOG_2 / 2 + half_logdet_scale) + ops.mvlgamma(nu / 2, p=p)
                - (nu - p - 1) / 2 * _mvdigamma(nu / 2, p=p) + nu * p / 2)

    @property
    def _natural_params(self):
        nu = self.df
        p = self._event_shape[-1]
        return -self.precision_matrix / 2, (nu - p - 1) / 2

    def _log_normalizer(self, x, y):
        p = self._event_shape[-1]
        return (y + (p + 1) / 2) * (-_logdet_spd(-2 * x) + _LOG_2 * p) + ops.mvlgamma(y + (p + 1) / 2, p=p)

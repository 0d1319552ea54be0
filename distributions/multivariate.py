"""Multivariate distributions: Dirichlet, MultivariateNormal, LowRankMultivariateNormal."""
from __future__ import annotations

import math

import numpy as np

from .. import ops
from ..nn import functional as F
from ..ops.linalg import namespace as linalg
from ..tensor import Size, Tensor
from ..tensor import dtype as dt
from . import constraints
from ._sampling import standard_gamma
from .distribution import Distribution, _expand_params
from .exp_family import ExponentialFamily
from .utils import _standard_normal, lazy_property, tiny_of

__all__ = ["Dirichlet", "MultivariateNormal", "LowRankMultivariateNormal"]


def _batch_mv(bmat: Tensor, bvec: Tensor) -> Tensor:
    """Matrix-vector products over broadcast batch dimensions."""
    return ops.matmul(bmat, bvec.unsqueeze(-1)).squeeze(-1)


def _solve_lower(bL: Tensor, bB: Tensor) -> Tensor:
    """L^-1 B over broadcast batch dimensions (B a batch of matrices)."""
    batch = ops.broadcast_shapes(tuple(bL.shape[:-2]), tuple(bB.shape[:-2]))
    bL = bL.tril()  # only the lower triangle is read (so only it gets a gradient), as solve_triangular
    return linalg.solve(bL.expand(tuple(batch) + tuple(bL.shape[-2:])),
                              bB.expand(tuple(batch) + tuple(bB.shape[-2:])))


def _batch_mahalanobis(bL: Tensor, bx: Tensor) -> Tensor:
    """x^T (L L^T)^-1 x for a batch of lower-triangular L and vectors x (batch shapes broadcast)."""
    sol = _solve_lower(bL, bx.unsqueeze(-1)).squeeze(-1)
    return sol.pow(2).sum(-1)


def _precision_to_scale_tril(P: Tensor) -> Tensor:
    """The lower Cholesky factor of P^-1, through the Cholesky factor of the flipped precision."""
    Lf = linalg.cholesky(ops.flip(P, (-2, -1)))
    L_inv = ops.transpose(ops.flip(Lf, (-2, -1)), -2, -1)
    eye = ops.eye(P.shape[-1], dtype=P.dtype, device=P.device)
    return linalg.solve(L_inv, eye.expand(tuple(L_inv.shape)))


class Dirichlet(ExponentialFamily):
    """Dirichlet(concentration): distributions over the simplex, sampled as normalized gammas."""

    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration, validate_args=None):
        if concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        batch_shape, event_shape = concentration.shape[:-1], concentration.shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = _expand_params(self, Dirichlet, (), batch_shape, _instance)
        batch_shape = new.batch_shape
        new.concentration = self.concentration.expand(tuple(batch_shape) + tuple(self.event_shape))
        return new

    def rsample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        dtype = self.concentration.dtype
        # as torch's _sample_dirichlet: gammas drawn and normalized in double, then rounded to the dtype and kept
        # inside (0, 1)
        gammas = standard_gamma(self.concentration.double().expand(shape)).clamp(min=tiny_of(dt.float64))
        ratio = (gammas / gammas.sum(-1, keepdim=True)).to(dtype)
        below_one = float(np.nextafter(np.array(1.0, dtype.np), np.array(0.0, dtype.np)))
        return ratio.clamp(min=tiny_of(dtype), max=below_one)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return (ops.xlogy(self.concentration - 1.0, value).sum(-1) + ops.lgamma(self.concentration.sum(-1))
                - ops.lgamma(self.concentration).sum(-1))

    @property
    def mean(self):
        return self.concentration / self.concentration.sum(-1, True)

    @property
    def mode(self):
        concentrationm1 = (self.concentration - 1).clamp(min=0.0)
        mode = concentrationm1 / concentrationm1.sum(-1, True)
        # all concentrations below 1: the mass piles on the corner of the largest one
        corner = F.one_hot(concentrationm1.argmax(-1), concentrationm1.shape[-1]).to(mode)
        return ops.where((self.concentration < 1).all(dim=-1, keepdim=True), corner, mode)

    @property
    def variance(self):
        con0 = self.concentration.sum(-1, True)
        return self.concentration * (con0 - self.concentration) / (con0.pow(2) * (con0 + 1))

    def entropy(self):
        k = self.concentration.size(-1)
        a0 = self.concentration.sum(-1)
        return (ops.lgamma(self.concentration).sum(-1) - ops.lgamma(a0) - (k - a0) * ops.digamma(a0)
                - ((self.concentration - 1.0) * ops.digamma(self.concentration)).sum(-1))

    @property
    def _natural_params(self):
        return (self.concentration,)

    def _log_normalizer(self, x):
        return x.lgamma().sum(-1) - ops.lgamma(x.sum(-1))


def _scale_tril_from(scale_tril, covariance_matrix, precision_matrix) -> Tensor:
    """The lower Cholesky factor of whichever of the three matrices is given."""
    if scale_tril is not None:
        return scale_tril
    if covariance_matrix is not None:
        return linalg.cholesky(covariance_matrix)
    return _precision_to_scale_tril(precision_matrix)


class _ScaleTrilMatrices:
    """Mixin of the distributions held as the Cholesky factor `_unbroadcasted_scale_tril` of a covariance matrix
    (MultivariateNormal, Wishart): the three matrices, shaped as `_matrix_shape()`, computed on first use."""

    @lazy_property
    def scale_tril(self):
        return self._unbroadcasted_scale_tril.expand(self._matrix_shape())

    @lazy_property
    def covariance_matrix(self):
        L = self._unbroadcasted_scale_tril
        return ops.matmul(L, L.mT).expand(self._matrix_shape())

    @lazy_property
    def precision_matrix(self):
        L_inv = linalg.inv(self._unbroadcasted_scale_tril)
        return ops.matmul(L_inv.mT, L_inv).expand(self._matrix_shape())

    def _expand_matrices(self, new, shape) -> None:
        """Copy the matrices computed so far onto `new`, expanded to `shape`."""
        for name in ("covariance_matrix", "scale_tril", "precision_matrix"):
            if name in self.__dict__:
                setattr(new, name, self.__dict__[name].expand(shape))


class MultivariateNormal(_ScaleTrilMatrices, Distribution):
    """MultivariateNormal(loc, covariance_matrix | precision_matrix | scale_tril): the Gaussian over vectors."""

    arg_constraints = {"loc": constraints.real_vector, "covariance_matrix": constraints.positive_definite,
                       "precision_matrix": constraints.positive_definite, "scale_tril": constraints.lower_cholesky}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, covariance_matrix=None, precision_matrix=None, scale_tril=None, validate_args=None):
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        if (covariance_matrix is not None) + (scale_tril is not None) + (precision_matrix is not None) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified.")
        given = next((name, m) for name, m in (("scale_tril", scale_tril), ("covariance_matrix", covariance_matrix),
                                               ("precision_matrix", precision_matrix)) if m is not None)
        name, matrix = given
        if matrix.dim() < 2:
            raise ValueError(f"{'scale_tril matrix' if name == 'scale_tril' else name} must be at least "
                             "two-dimensional, with optional leading batch dimensions")
        batch_shape = tuple(ops.broadcast_shapes(tuple(matrix.shape[:-2]), tuple(loc.shape[:-1])))
        setattr(self, name, matrix.expand(batch_shape + (-1, -1)))
        self.loc = loc.expand(batch_shape + (-1,))
        event_shape = self.loc.shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)
        self._unbroadcasted_scale_tril = _scale_tril_from(scale_tril, covariance_matrix, precision_matrix)

    def expand(self, batch_shape, _instance=None):
        new = _expand_params(self, MultivariateNormal, (), batch_shape, _instance)
        batch_shape = new.batch_shape
        loc_shape = tuple(batch_shape) + tuple(self.event_shape)
        cov_shape = loc_shape + tuple(self.event_shape)
        new.loc = self.loc.expand(loc_shape)
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril
        self._expand_matrices(new, cov_shape)
        return new

    def _matrix_shape(self) -> tuple:
        return tuple(self._batch_shape) + tuple(self._event_shape) + tuple(self._event_shape)

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        return self._unbroadcasted_scale_tril.pow(2).sum(-1).expand(
            tuple(self._batch_shape) + tuple(self._event_shape))

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        eps = _standard_normal(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + _batch_mv(self._unbroadcasted_scale_tril, eps)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        diff = value - self.loc
        M = _batch_mahalanobis(self._unbroadcasted_scale_tril, diff)
        half_log_det = self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + M) - half_log_det

    def entropy(self):
        half_log_det = self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        H = 0.5 * self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + half_log_det
        return H if len(self._batch_shape) == 0 else H.expand(tuple(self._batch_shape))


def _batch_capacitance_tril(W: Tensor, D: Tensor) -> Tensor:
    """Cholesky of the capacitance matrix I + W^T D^-1 W."""
    m = W.size(-1)
    Wt_Dinv = W.mT / D.unsqueeze(-2)
    K = ops.matmul(Wt_Dinv, W) + ops.eye(m, dtype=W.dtype, device=W.device)
    return linalg.cholesky(K)


def _batch_lowrank_logdet(W: Tensor, D: Tensor, capacitance_tril: Tensor) -> Tensor:
    """log det(W W^T + D) by the matrix determinant lemma."""
    return 2 * capacitance_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1) + D.log().sum(-1)


def _batch_lowrank_mahalanobis(W: Tensor, D: Tensor, x: Tensor, capacitance_tril: Tensor) -> Tensor:
    """x^T (W W^T + D)^-1 x by the Woodbury identity."""
    Wt_Dinv = W.mT / D.unsqueeze(-2)
    Wt_Dinv_x = _batch_mv(Wt_Dinv, x)
    mahalanobis_term1 = (x.pow(2) / D).sum(-1)
    mahalanobis_term2 = _batch_mahalanobis(capacitance_tril, Wt_Dinv_x)
    return mahalanobis_term1 - mahalanobis_term2


class LowRankMultivariateNormal(Distribution):
    """LowRankMultivariateNormal(loc, cov_factor, cov_diag): covariance cov_factor cov_factor^T + diag(cov_diag)."""

    arg_constraints = {"loc": constraints.real_vector, "cov_factor": constraints.independent(constraints.real, 2),
                       "cov_diag": constraints.independent(constraints.positive, 1)}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, cov_factor, cov_diag, validate_args=None):
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        event_shape = loc.shape[-1:]
        if cov_factor.dim() < 2:
            raise ValueError("cov_factor must be at least two-dimensional, with optional leading batch dimensions")
        if tuple(cov_factor.shape[-2:-1]) != tuple(event_shape):
            raise ValueError(f"cov_factor must be a batch of matrices with shape {event_shape[0]} x m")
        if tuple(cov_diag.shape[-1:]) != tuple(event_shape):
            raise ValueError(f"cov_diag must be a batch of vectors with shape {event_shape}")
        loc_ = loc.unsqueeze(-1)
        cov_diag_ = cov_diag.unsqueeze(-1)
        try:
            loc_, self.cov_factor, cov_diag_ = ops.broadcast_tensors(loc_, cov_factor, cov_diag_)
        except RuntimeError as e:
            raise ValueError(f"Incompatible batch shapes: loc {loc.shape}, cov_factor {cov_factor.shape}, "
                             f"cov_diag {cov_diag.shape}") from e
        self.loc = loc_[..., 0]
        self.cov_diag = cov_diag_[..., 0]
        batch_shape = self.loc.shape[:-1]
        self._unbroadcasted_cov_factor = cov_factor
        self._unbroadcasted_cov_diag = cov_diag
        self._capacitance_tril = _batch_capacitance_tril(cov_factor, cov_diag)
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = _expand_params(self, LowRankMultivariateNormal, (), batch_shape, _instance)
        batch_shape = new.batch_shape
        loc_shape = tuple(batch_shape) + tuple(self.event_shape)
        new.loc = self.loc.expand(loc_shape)
        new.cov_diag = self.cov_diag.expand(loc_shape)
        new.cov_factor = self.cov_factor.expand(loc_shape + tuple(self.cov_factor.shape[-1:]))
        new._unbroadcasted_cov_factor = self._unbroadcasted_cov_factor
        new._unbroadcasted_cov_diag = self._unbroadcasted_cov_diag
        new._capacitance_tril = self._capacitance_tril
        return new

    def _matrix_shape(self) -> tuple:
        return tuple(self._batch_shape) + tuple(self._event_shape) + tuple(self._event_shape)

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @lazy_property
    def variance(self):
        return (self._unbroadcasted_cov_factor.pow(2).sum(-1) + self._unbroadcasted_cov_diag).expand(
            tuple(self._batch_shape) + tuple(self._event_shape))

    @lazy_property
    def scale_tril(self):
        # (W W^T + D) = D^1/2 (I + D^-1/2 W W^T D^-1/2) D^1/2: scale the Cholesky factor of the middle term
        n = self._event_shape[0]
        cov_diag_sqrt_unsqueeze = self._unbroadcasted_cov_diag.sqrt().unsqueeze(-1)
        Dinvsqrt_W = self._unbroadcasted_cov_factor / cov_diag_sqrt_unsqueeze
        K = ops.matmul(Dinvsqrt_W, Dinvsqrt_W.mT) + ops.eye(n, dtype=Dinvsqrt_W.dtype, device=Dinvsqrt_W.device)
        return (cov_diag_sqrt_unsqueeze * linalg.cholesky(K)).expand(self._matrix_shape())

    @lazy_property
    def covariance_matrix(self):
        W = self._unbroadcasted_cov_factor
        covariance_matrix = ops.matmul(W, W.mT) + ops.diag_embed(self._unbroadcasted_cov_diag)
        return covariance_matrix.expand(self._matrix_shape())

    @lazy_property
    def precision_matrix(self):
        Wt_Dinv = self._unbroadcasted_cov_factor.mT / self._unbroadcasted_cov_diag.unsqueeze(-2)
        A = _solve_lower(self._capacitance_tril, Wt_Dinv)
        precision_matrix = ops.diag_embed(self._unbroadcasted_cov_diag.reciprocal()) - A.mT @ A
        return precision_matrix.expand(self._matrix_shape())

    def rsample(self, sample_shape=Size()):
        shape = tuple(self._extended_shape(sample_shape))
        W_shape = shape[:-1] + tuple(self.cov_factor.shape[-1:])
        eps_W = _standard_normal(W_shape, dtype=self.loc.dtype, device=self.loc.device)
        eps_D = _standard_normal(shape, dtype=self.loc.dtype, device=self.loc.device)
        return (self.loc + _batch_mv(self._unbroadcasted_cov_factor, eps_W)
                + self._unbroadcasted_cov_diag.sqrt() * eps_D)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        diff = value - self.loc
        M = _batch_lowrank_mahalanobis(self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag, diff,
                                       self._capacitance_tril)
        log_det = _batch_lowrank_logdet(self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag,
                                        self._capacitance_tril)
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + log_det + M)

    def entropy(self):
        log_det = _batch_lowrank_logdet(self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag,
                                        self._capacitance_tril)
        H = 0.5 * (self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + log_det)
        return H if len(self._batch_shape) == 0 else H.expand(tuple(self._batch_shape))

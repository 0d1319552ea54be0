"""LKJCholesky(dim, concentration): the LKJ distribution over Cholesky factors of correlation matrices."""
from __future__ import annotations

import math

from .. import ops
from ..autograd import no_grad
from ..tensor import Size
from . import constraints
from .continuous import Beta
from .distribution import Distribution, _expand_params
from .utils import broadcast_all, tiny_of

__all__ = ["LKJCholesky"]


class LKJCholesky(Distribution):
    """LKJCholesky(dim, concentration=1.0): density of L proportional to det(L L^T)^(concentration - 1), sampled
    by the onion method (each row a Beta-distributed length times a uniform direction)."""

    arg_constraints = {"concentration": constraints.positive}
    support = constraints.corr_cholesky

    def __init__(self, dim: int, concentration=1.0, validate_args=None):
        if dim < 2:
            raise ValueError(f"Expected dim to be an integer greater than or equal to 2. Found dim={dim}.")
        self.dim = dim
        (self.concentration,) = broadcast_all(concentration)
        batch_shape = self.concentration.size()
        event_shape = Size((dim, dim))
        # the squared length of row i (beyond the first) is Beta(i/2, concentration + (dim - 2)/2 - (i - 1)/2)
        marginal_conc = self.concentration + 0.5 * (self.dim - 2)
        offset = ops.arange(self.dim - 1, dtype=self.concentration.dtype, device=self.concentration.device)
        offset = ops.cat([offset.new_zeros((1,)), offset])
        self._beta = Beta(offset + 0.5, marginal_conc.unsqueeze(-1) - 0.5 * offset)
        super().__init__(batch_shape, event_shape, validate_args)

    def expand(self, batch_shape, _instance=None):
        new = _expand_params(self, LKJCholesky, (), batch_shape, _instance)
        batch_shape = new.batch_shape
        new.dim = self.dim
        new.concentration = self.concentration.expand(batch_shape)
        new._beta = self._beta.expand(tuple(batch_shape) + (self.dim,))
        return new

    def sample(self, sample_shape=Size()):
        with no_grad():
            y = self._beta.sample(sample_shape).unsqueeze(-1)
            u_normal = ops.randn(tuple(self._extended_shape(sample_shape)), dtype=y.dtype, device=y.device).tril(-1)
            norms = u_normal.norm(dim=-1, keepdim=True)
            # the first row has no off-diagonal entries: its direction is empty, not 0 / 0
            first_row = ops.arange(self.dim, device=y.device).reshape(self.dim, 1) == 0
            u_hypersphere = ops.where(first_row, ops.zeros_like(u_normal), u_normal / norms)
            w = ops.sqrt(y) * u_hypersphere
            diag_elems = ops.clamp(1 - ops.sum(w ** 2, dim=-1), min=tiny_of(w.dtype)).sqrt()
            return w + ops.diag_embed(diag_elems)

    def log_prob(self, value):
        # the density of the correlation matrix, det ** (concentration - 1), times the Jacobian from the Cholesky
        # factor, prod L_ii ** (dim - i): prod L_ii ** (2 concentration - 2 + dim - i)
        if self._validate_args:
            self._validate_sample(value)
        diag_elems = value.diagonal(dim1=-1, dim2=-2)[..., 1:]
        order = ops.arange(2, self.dim + 1, device=self.concentration.device)
        order = 2 * (self.concentration - 1).unsqueeze(-1) + self.dim - order
        unnormalized_log_pdf = ops.sum(order * diag_elems.log(), dim=-1)
        dm1 = self.dim - 1
        alpha = self.concentration + 0.5 * dm1
        denominator = ops.lgamma(alpha) * dm1
        numerator = ops.mvlgamma(alpha - 0.5, dm1)
        # the normalizer's pi term is dm1 * dim / 4 * log(pi); mvlgamma holds dm1 * (dm1 - 1) / 4 of it
        pi_constant = 0.5 * dm1 * math.log(math.pi)
        return unnormalized_log_pdf - (pi_constant + numerator - denominator)

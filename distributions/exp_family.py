"""ExponentialFamily: distributions of the form p(x) = h(x) exp(<theta, t(x)> - F(theta))."""
from __future__ import annotations

from .. import autograd
from ..autograd import enable_grad
from ..tensor import Tensor
from .distribution import Distribution

__all__ = ["ExponentialFamily"]


class ExponentialFamily(Distribution):
    """An exponential family: natural parameters, log normalizer F, and the mean carrier measure."""

    @property
    def _natural_params(self) -> tuple:
        """The natural parameters theta, one tensor per parameter."""
        raise NotImplementedError

    def _log_normalizer(self, *natural_params) -> Tensor:
        """F(theta)."""
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self):
        """E[log h(x)]."""
        raise NotImplementedError

    def entropy(self) -> Tensor:
        """Entropy from the Bregman divergence of the log normalizer: F - <theta, grad F> - E[log h]."""
        result = -self._mean_carrier_measure
        nparams = [p.detach().requires_grad_() for p in self._natural_params]
        with enable_grad():
            lg_normal = self._log_normalizer(*nparams)
            gradients = autograd.grad(lg_normal.sum(), nparams, create_graph=True)
        result = result + lg_normal
        for np_, g in zip(nparams, gradients):
            result = result - (np_ * g).reshape(tuple(self._batch_shape) + (-1,)).sum(-1)
        return result

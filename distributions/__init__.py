"""tidal.distributions: probability distributions, transforms and KL divergences, as torch.distributions.

Parameters are tidal tensors, so log_prob, entropy, cdf and KL are differentiable; `rsample` gives
reparameterized samples where PyTorch does (Gamma, Beta and Dirichlet through implicit gradients).
Samples come from tidal's generators (`tidal.manual_seed`).
"""
from __future__ import annotations

from . import constraints, transforms
from .constraint_registry import biject_to, transform_to
from .continuous import Beta, Cauchy, Chi2, Exponential, Gamma, Laplace, Normal, StudentT, Uniform
from .discrete import (Bernoulli, Binomial, Categorical, Geometric, Multinomial, OneHotCategorical,
                       OneHotCategoricalStraightThrough, Poisson)
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .independent import Independent, MixtureSameFamily
from .kl import kl_divergence, register_kl
from .multivariate import Dirichlet, LowRankMultivariateNormal, MultivariateNormal
from .relaxed import ExpRelaxedCategorical, LogitRelaxedBernoulli, RelaxedBernoulli, RelaxedOneHotCategorical
from .transformed import Gumbel, HalfNormal, LogNormal, TransformedDistribution
from .transforms import (AbsTransform, AffineTransform, ComposeTransform, ExpTransform, IndependentTransform,
                         LowerCholeskyTransform, PowerTransform, ReshapeTransform, SigmoidTransform,
                         SoftmaxTransform, SoftplusTransform, StickBreakingTransform, TanhTransform, Transform,
                         identity_transform)

__all__ = ["AbsTransform", "AffineTransform", "Bernoulli", "Beta", "Binomial", "Categorical", "Cauchy", "Chi2",
           "ComposeTransform", "Dirichlet", "Distribution", "ExpRelaxedCategorical", "ExpTransform", "Exponential",
           "ExponentialFamily", "Gamma", "Geometric", "Gumbel", "HalfNormal", "Independent", "IndependentTransform",
           "Laplace", "LogNormal", "LogitRelaxedBernoulli", "LowRankMultivariateNormal", "LowerCholeskyTransform",
           "MixtureSameFamily", "Multinomial", "MultivariateNormal", "Normal", "OneHotCategorical",
           "OneHotCategoricalStraightThrough", "Poisson", "PowerTransform", "RelaxedBernoulli",
           "RelaxedOneHotCategorical", "ReshapeTransform", "SigmoidTransform", "SoftmaxTransform",
           "SoftplusTransform", "StickBreakingTransform", "StudentT", "TanhTransform", "Transform",
           "TransformedDistribution", "Uniform", "biject_to", "constraints", "identity_transform", "kl_divergence",
           "register_kl", "transform_to", "transforms"]

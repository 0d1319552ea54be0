"""tidal.distributions: probability distributions, transforms and KL divergences, as torch.distributions.

Parameters are tidal tensors, so log_prob, entropy, cdf and KL are differentiable; `rsample` gives
reparameterized samples where PyTorch does (Gamma, Beta and Dirichlet through implicit gradients).
Samples come from tidal's generators (`tidal.manual_seed`).
"""
from __future__ import annotations

from . import _torch_modules, constraints, transforms
from .constraint_registry import biject_to, transform_to
from .continuous_bernoulli import ContinuousBernoulli
from .continuous import Beta, Cauchy, Chi2, Exponential, FisherSnedecor, Gamma, Laplace, Normal, StudentT, Uniform
from .counts import Binomial, Geometric, Multinomial, NegativeBinomial, Poisson
from .discrete import Bernoulli, Categorical, OneHotCategorical, OneHotCategoricalStraightThrough
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .generalized_pareto import GeneralizedPareto
from .independent import Independent, MixtureSameFamily
from .kl import kl_divergence, register_kl
from . import kl_cross  # noqa: F401 - registers the cross-family pairs
from .lkj import LKJCholesky
from .multivariate import Dirichlet, LowRankMultivariateNormal, MultivariateNormal
from .relaxed import ExpRelaxedCategorical, LogitRelaxedBernoulli, RelaxedBernoulli, RelaxedOneHotCategorical
from .von_mises import VonMises
from .wishart import Wishart
from .transformed import Gumbel, HalfNormal, LogNormal, TransformedDistribution
from .transformed_families import HalfCauchy, InverseGamma, Kumaraswamy, LogisticNormal, Pareto, Weibull
from .transforms import (AbsTransform, AffineTransform, CatTransform, ComposeTransform, CorrCholeskyTransform,
                         CumulativeDistributionTransform, ExpTransform, IndependentTransform, LowerCholeskyTransform,
                         PositiveDefiniteTransform, PowerTransform, ReshapeTransform, SigmoidTransform,
                         SoftmaxTransform, SoftplusTransform, StackTransform, StickBreakingTransform, TanhTransform,
                         Transform, identity_transform)

__all__ = ["AbsTransform", "AffineTransform", "Bernoulli", "Beta", "Binomial", "CatTransform", "Categorical",
           "Cauchy", "Chi2", "ComposeTransform", "ContinuousBernoulli", "CorrCholeskyTransform",
           "CumulativeDistributionTransform", "Dirichlet", "Distribution", "ExpRelaxedCategorical", "ExpTransform",
           "Exponential", "ExponentialFamily", "FisherSnedecor", "Gamma", "GeneralizedPareto", "Geometric", "Gumbel",
           "HalfCauchy", "HalfNormal", "Independent", "IndependentTransform", "InverseGamma", "Kumaraswamy",
           "LKJCholesky", "Laplace", "LogNormal", "LogisticNormal", "LogitRelaxedBernoulli",
           "LowRankMultivariateNormal", "LowerCholeskyTransform", "MixtureSameFamily", "Multinomial",
           "MultivariateNormal", "NegativeBinomial", "Normal", "OneHotCategorical",
           "OneHotCategoricalStraightThrough", "Pareto", "Poisson", "PositiveDefiniteTransform", "PowerTransform",
           "RelaxedBernoulli", "RelaxedOneHotCategorical", "ReshapeTransform", "SigmoidTransform",
           "SoftmaxTransform", "SoftplusTransform", "StackTransform", "StickBreakingTransform", "StudentT",
           "TanhTransform", "Transform", "TransformedDistribution", "Uniform", "VonMises", "Weibull", "Wishart",
           "biject_to", "constraints", "identity_transform", "kl_divergence", "register_kl", "transform_to",
           "transforms"]

_torch_modules.register(__name__, globals())


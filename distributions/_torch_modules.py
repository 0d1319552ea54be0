"""torch.distributions' per-family module paths (`from torch.distributions.normal import Normal`), as modules
in sys.modules that hold the same classes, for the families that tidal groups into fewer files."""
from __future__ import annotations

import importlib.machinery
import sys
import types

__all__ = ["register"]

# torch's module name -> the names it defines
MODULES = {
    "bernoulli": ("Bernoulli",), "beta": ("Beta",), "binomial": ("Binomial",), "categorical": ("Categorical",),
    "cauchy": ("Cauchy",), "chi2": ("Chi2",), "dirichlet": ("Dirichlet",), "exponential": ("Exponential",),
    "fishersnedecor": ("FisherSnedecor",), "gamma": ("Gamma",), "geometric": ("Geometric",), "gumbel": ("Gumbel",),
    "half_cauchy": ("HalfCauchy",), "half_normal": ("HalfNormal",), "inverse_gamma": ("InverseGamma",),
    "kumaraswamy": ("Kumaraswamy",), "laplace": ("Laplace",), "lkj_cholesky": ("LKJCholesky",),
    "log_normal": ("LogNormal",), "logistic_normal": ("LogisticNormal",),
    "lowrank_multivariate_normal": ("LowRankMultivariateNormal",), "mixture_same_family": ("MixtureSameFamily",),
    "multinomial": ("Multinomial",), "multivariate_normal": ("MultivariateNormal",),
    "negative_binomial": ("NegativeBinomial",), "normal": ("Normal",),
    "one_hot_categorical": ("OneHotCategorical", "OneHotCategoricalStraightThrough"), "pareto": ("Pareto",),
    "poisson": ("Poisson",), "relaxed_bernoulli": ("LogitRelaxedBernoulli", "RelaxedBernoulli"),
    "relaxed_categorical": ("ExpRelaxedCategorical", "RelaxedOneHotCategorical"), "studentT": ("StudentT",),
    "transformed_distribution": ("TransformedDistribution",), "uniform": ("Uniform",), "weibull": ("Weibull",),
}


def register(package: str, namespace: dict) -> None:
    """Put `package.<torch module>` into sys.modules for each entry of MODULES, taking the names from namespace."""
    for name, exported in MODULES.items():
        full = f"{package}.{name}"
        if full in sys.modules:
            continue
        module = types.ModuleType(full, f"torch.distributions.{name}: {', '.join(exported)}.")
        module.__dict__.update({n: namespace[n] for n in exported}, __all__=list(exported))
        module.__spec__ = importlib.machinery.ModuleSpec(full, None)
        sys.modules[full] = module
        namespace[name] = module

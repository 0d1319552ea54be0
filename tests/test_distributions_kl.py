"""kl_divergence against torch (values and gradients for every registered pair, the registry's dispatch and
errors), and validation errors, enumerate_support and reprs as torch's."""
import numpy as np
import pytest
import torch
from distribution_db import build, second

import tidal
import tidal.distributions as D


KL_PAIRS = [
    ("Normal", "Normal"), ("Uniform", "Uniform_wide"), ("Exponential", "Exponential"), ("Laplace", "Laplace"),
    ("Cauchy", "Cauchy"), ("Gamma", "Gamma"), ("Beta", "Beta"), ("Bernoulli", "Bernoulli_logits"),
    ("Geometric", "Geometric"), ("Poisson", "Poisson"), ("Binomial", "Binomial"), ("Categorical", "Categorical"),
    ("OneHotCategorical", "OneHotCategorical"), ("Dirichlet", "Dirichlet"), ("Gumbel", "Gumbel"),
    ("HalfNormal", "HalfNormal"), ("LogNormal", "LogNormal"), ("Independent", "Independent"),
    ("MultivariateNormal_tril", "MultivariateNormal_cov"), ("LowRankMultivariateNormal", "MultivariateNormal_4"),
    ("MultivariateNormal_4", "LowRankMultivariateNormal"),
    ("LowRankMultivariateNormal", "LowRankMultivariateNormal"), ("Exponential", "Gamma"), ("Exponential", "Normal"),
    ("Uniform", "Normal"), ("Normal", "Laplace"), ("Beta", "Uniform_unit"), ("Pareto", "Pareto"),
    ("Bernoulli", "Poisson"), ("Beta", "Exponential"), ("Beta", "Gamma"), ("Beta", "Normal"), ("Beta", "Pareto"),
    ("Exponential", "Gumbel"), ("Exponential", "Uniform"), ("Gamma", "Exponential"), ("Gamma", "Gumbel"),
    ("Gamma", "Normal"), ("Gumbel", "Normal"), ("Gumbel", "Gamma"), ("Laplace", "Normal"), ("Normal", "Gumbel"),
    ("Normal", "Beta"), ("Pareto", "Exponential"), ("Pareto", "Gamma"), ("Pareto", "Normal"), ("Pareto", "Uniform"),
    ("Uniform_unit", "Beta"), ("Uniform", "Exponential"), ("Uniform", "Gamma"), ("Uniform", "Gumbel"),
    ("Uniform", "Pareto"), ("Poisson", "Binomial"), ("Weibull", "Weibull"), ("NegativeBinomial", "Poisson"),
    ("ContinuousBernoulli", "ContinuousBernoulli_logits"), ("Beta", "ContinuousBernoulli"),
    ("ContinuousBernoulli", "Exponential"), ("ContinuousBernoulli", "Normal"), ("ContinuousBernoulli", "Uniform"),
    ("Uniform_unit", "ContinuousBernoulli"), ("Gamma", "ContinuousBernoulli"), ("ContinuousBernoulli", "Pareto"),
]
@pytest.mark.parametrize("p_case,q_case", KL_PAIRS)
def test_kl_divergence_follows_torch(p_case, q_case):
    results = []
    for fw in (torch, tidal):
        p, p_leaves = build(fw, p_case)
        q, q_leaves = second(fw, q_case, 5)
        try:
            kl = fw.distributions.kl_divergence(p, q)
        except NotImplementedError as exc:  # torch has no formula for this pair either
            results.append((type(exc), str(exc)))
            continue
        grads = [None] * len(p_leaves + q_leaves)
        if kl.requires_grad:  # supports that do not nest give a constant inf
            grads = fw.autograd.grad(kl.sum(), p_leaves + q_leaves, allow_unused=True)
        results.append((kl.detach().numpy(), [None if g is None else g.numpy() for g in grads]))
    (theirs, their_grads), (ours, our_grads) = results
    if theirs is NotImplementedError:
        assert ours is theirs and our_grads == their_grads
        return
    np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=1e-8)
    for mine, ref in zip(our_grads, their_grads):
        if ref is None:
            assert mine is None or not np.any(mine)
        else:
            np.testing.assert_allclose(mine, ref, rtol=1e-5, atol=1e-8)


def test_kl_registry_has_every_torch_pair():
    from torch.distributions.kl import _KL_REGISTRY as theirs
    assert ({(p.__name__, q.__name__) for p, q in D.kl._KL_REGISTRY}
            == {(p.__name__, q.__name__) for p, q in theirs})


def test_kl_registry_dispatch_and_errors():
    class MyNormal(D.Normal):
        pass

    p, q = MyNormal(0.0, 1.0), D.Normal(1.0, 2.0)
    assert float(D.kl_divergence(p, q)) == pytest.approx(float(D.kl_divergence(D.Normal(0.0, 1.0), q)))

    @D.register_kl(MyNormal, D.Normal)
    def _mine(p, q):
        return tidal.tensor(42.0)

    assert float(D.kl_divergence(p, q)) == 42.0
    with pytest.raises(NotImplementedError, match="No KL\\(p \\|\\| q\\) is implemented for p type Binomial and q "
                                                  "type Normal"):
        D.kl_divergence(D.Binomial(3, tidal.tensor(0.5)), q)
    bregman = [_message(lambda: M.kl_divergence(M.Poisson(t.tensor(1.0)), M.Normal(0.0, 1.0)))
               for M, t in ((D, tidal), (torch.distributions, torch))]
    assert bregman[0] == bregman[1] and bregman[0][0] is NotImplementedError


def test_kl_of_one_exponential_family_by_bregman_divergence():
    """The Bregman form (what a family without a closed-form pair gets) agrees with the closed forms."""
    bregman = D.kl._KL_REGISTRY[D.ExponentialFamily, D.ExponentialFamily]
    pairs = [(D.Bernoulli(tidal.tensor([0.2, 0.6])), D.Bernoulli(tidal.tensor([0.5, 0.9]))),
             (D.Normal(tidal.tensor([0.0, 1.0]), tidal.tensor([1.0, 2.0])), D.Normal(tidal.tensor(0.5), 1.5)),
             (D.Gamma(tidal.tensor([2.0, 0.5]), tidal.tensor(1.0)),
              D.Gamma(tidal.tensor(1.0), tidal.tensor([2.0, 3.0]))),
             (D.Poisson(tidal.tensor([0.5, 4.0])), D.Poisson(tidal.tensor([1.0, 2.0]))),
             (D.Dirichlet(tidal.tensor([1.0, 2.0, 3.0])), D.Dirichlet(tidal.tensor([2.0, 2.0, 0.5])))]
    for p, q in pairs:
        np.testing.assert_allclose(bregman(p, q).detach().numpy(), D.kl_divergence(p, q).numpy(), rtol=1e-5)


def _message(fn):
    try:
        fn()
    except Exception as exc:  # noqa: BLE001
        return type(exc), str(exc).replace("tidal.", "torch.")
    return None, None


VALIDATION = {
    "negative scale": lambda M, t: M.Normal(0.0, -1.0),
    "negative scale tensor": lambda M, t: M.Normal(t.zeros(2), t.tensor([1.0, -1.0])),
    "probs and logits": lambda M, t: M.Bernoulli(probs=0.3, logits=0.1),
    "neither probs nor logits": lambda M, t: M.Categorical(),
    "probs out of range": lambda M, t: M.Bernoulli(probs=t.tensor([0.5, 1.5])),
    "uniform low >= high": lambda M, t: M.Uniform(t.tensor([0.0, 1.0]), t.tensor([1.0, 1.0])),
    "categorical 0-d": lambda M, t: M.Categorical(probs=t.tensor(1.0)),
    "simplex": lambda M, t: M.Categorical(probs=t.tensor([0.5, -0.5, 1.0])),
    "dirichlet 0-d": lambda M, t: M.Dirichlet(t.tensor(1.0)),
    "multinomial count": lambda M, t: M.Multinomial(t.tensor(3), probs=t.tensor([0.5, 0.5])),
    "sample support": lambda M, t: M.Exponential(t.tensor([1.0, 2.0])).log_prob(t.tensor([1.0, -1.0])),
    "sample shape": lambda M, t: M.Normal(t.zeros(3), t.ones(3)).log_prob(t.zeros(2)),
    "event shape": lambda M, t: M.Dirichlet(t.ones(3)).log_prob(t.ones(2) / 2),
    "log_prob of a number": lambda M, t: M.Normal(0.0, 1.0).log_prob(0.5),
    "mvn one of": lambda M, t: M.MultivariateNormal(t.zeros(2)),
    "mvn matrix dims": lambda M, t: M.MultivariateNormal(t.zeros(2), scale_tril=t.ones(2)),
    "mvn not pd": lambda M, t: M.MultivariateNormal(t.zeros(2), covariance_matrix=t.tensor([[1.0, 2.0], [2.0, 1.0]])),
    "lowrank factor": lambda M, t: M.LowRankMultivariateNormal(t.zeros(3), t.ones(2, 1), t.ones(3)),
    "independent ndims": lambda M, t: M.Independent(M.Normal(t.zeros(3), t.ones(3)), 2),
    "mixture type": lambda M, t: M.MixtureSameFamily(M.Normal(0.0, 1.0), M.Normal(t.zeros(2), t.ones(2))),
    "mixture components": lambda M, t: M.MixtureSameFamily(M.Categorical(logits=t.zeros(3)),
                                                           M.Normal(t.zeros(2), t.ones(2))),
    "transforms type": lambda M, t: M.TransformedDistribution(M.Normal(0.0, 1.0), "exp"),
    "binomial entropy": lambda M, t: M.Binomial(t.tensor([2.0, 3.0]), probs=t.tensor([0.5, 0.5])).entropy(),
    "geometric zero": lambda M, t: M.Geometric(probs=t.tensor([0.0, 0.5])),
    "expand custom init": lambda M, t: type("Sub", (M.Normal,), {"__init__": lambda self: M.Normal.__init__(
        self, 0.0, 1.0)})().expand((2,)),
}


@pytest.mark.parametrize("case", list(VALIDATION))
def test_validation_errors_match_torch(case):
    their_type, their_msg = _message(lambda: VALIDATION[case](torch.distributions, torch))
    our_type, our_msg = _message(lambda: VALIDATION[case](D, tidal))
    assert their_type is not None
    assert our_type is their_type
    assert our_msg == their_msg


def test_validation_can_be_switched_off():
    D.Normal(0.0, -1.0, validate_args=False)
    D.Distribution.set_default_validate_args(False)
    try:
        D.Normal(0.0, -1.0).log_prob(tidal.tensor(1.0))
    finally:
        D.Distribution.set_default_validate_args(True)
    with pytest.raises(ValueError):
        D.Normal(0.0, -1.0)


def test_enumerate_support_and_repr():
    for build in (lambda M, t: M.Bernoulli(probs=t.tensor([0.2, 0.5, 0.9])),
                  lambda M, t: M.Categorical(probs=t.tensor([[0.2, 0.8], [0.5, 0.5]])),
                  lambda M, t: M.OneHotCategorical(probs=t.tensor([[0.2, 0.8], [0.5, 0.5]])),
                  lambda M, t: M.Binomial(t.tensor([3.0, 3.0]), probs=t.tensor([0.2, 0.5]))):
        theirs, ours = build(torch.distributions, torch), build(D, tidal)
        for expand in (True, False):
            np.testing.assert_array_equal(ours.enumerate_support(expand).numpy(),
                                          theirs.enumerate_support(expand).numpy())
            assert ours.enumerate_support(expand).dtype.name == str(theirs.enumerate_support(expand).dtype)[6:]
        assert repr(ours).replace("tidal.", "torch.") == repr(theirs)
    assert repr(D.constraints.interval(0.0, 1.0)) == repr(torch.distributions.constraints.interval(0.0, 1.0))
    assert repr(D.constraints.real_vector) == repr(torch.distributions.constraints.real_vector)

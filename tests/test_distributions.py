"""tidal.distributions against torch.distributions: log_prob, entropy, moments, cdf/icdf and KL values and their
gradients in the parameters; sample shapes and moments; rsample gradients; validation errors; transforms."""
import os
import sys

import numpy as np
import pytest
import torch

import tidal
import tidal.distributions as D

rng = np.random.default_rng(0)
B = (3, 2)  # the batch shape most records use


def _pos(*shape, low=0.5, high=2.5):
    return rng.uniform(low, high, shape)


def _simplex(*shape):
    x = rng.uniform(0.2, 1.0, shape)
    return x / x.sum(-1, keepdims=True)


def _spd(n, *batch):
    a = rng.normal(size=batch + (n, n))
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


def _corr_cholesky(*batch, n):
    """Cholesky factors of random n x n correlation matrices."""
    x = rng.normal(size=batch + (n, 2 * n))
    cov = x @ np.swapaxes(x, -1, -2)
    d = np.sqrt(np.diagonal(cov, axis1=-2, axis2=-1))
    return np.linalg.cholesky(cov / d[..., :, None] / d[..., None, :])


def _tril(n, *batch):
    a = np.tril(rng.normal(size=batch + (n, n)) * 0.3, -1)
    return a + np.eye(n) * rng.uniform(0.5, 1.5, batch + (n,))[..., None]


# name -> (factory(distributions module, params), params, values for log_prob, methods to compare)
MOMENTS = ("log_prob", "entropy", "mean", "variance", "stddev")
CASES = {
    "Normal": (lambda M, p: M.Normal(p["loc"], p["scale"]), {"loc": rng.normal(size=B), "scale": _pos(*B)},
               rng.normal(size=(4,) + B), MOMENTS + ("cdf", "icdf", "mode")),
    "Uniform": (lambda M, p: M.Uniform(p["low"], p["high"]), {"low": -_pos(*B), "high": _pos(*B)},
                rng.uniform(-0.4, 0.4, (4,) + B), MOMENTS + ("cdf", "icdf")),
    "Exponential": (lambda M, p: M.Exponential(p["rate"]), {"rate": _pos(*B)}, _pos(4, *B),
                    MOMENTS + ("cdf", "icdf", "mode")),
    "Laplace": (lambda M, p: M.Laplace(p["loc"], p["scale"]), {"loc": rng.normal(size=B), "scale": _pos(*B)},
                rng.normal(size=(4,) + B), MOMENTS + ("cdf", "icdf")),
    "Cauchy": (lambda M, p: M.Cauchy(p["loc"], p["scale"]), {"loc": rng.normal(size=B), "scale": _pos(*B)},
               rng.normal(size=(4,) + B), ("log_prob", "entropy", "cdf", "icdf", "mean", "variance")),
    "Gamma": (lambda M, p: M.Gamma(p["concentration"], p["rate"]),
              {"concentration": _pos(*B), "rate": _pos(*B)}, _pos(4, *B), MOMENTS + ("mode",)),
    "Chi2": (lambda M, p: M.Chi2(p["df"]), {"df": _pos(*B, low=1, high=4)}, _pos(4, *B), MOMENTS),
    "Beta": (lambda M, p: M.Beta(p["c1"], p["c0"]), {"c1": _pos(*B), "c0": _pos(*B)},
             rng.uniform(0.05, 0.95, (4,) + B), MOMENTS + ("mode",)),
    "StudentT": (lambda M, p: M.StudentT(p["df"], p["loc"], p["scale"]),
                 {"df": _pos(*B, low=2.5, high=6), "loc": rng.normal(size=B), "scale": _pos(*B)},
                 rng.normal(size=(4,) + B), MOMENTS),
    "LogNormal": (lambda M, p: M.LogNormal(p["loc"], p["scale"]), {"loc": rng.normal(size=B), "scale": _pos(*B)},
                  _pos(4, *B), MOMENTS + ("cdf", "icdf", "mode")),
    "HalfNormal": (lambda M, p: M.HalfNormal(p["scale"]), {"scale": _pos(*B)}, _pos(4, *B),
                   MOMENTS + ("cdf", "icdf")),
    "Gumbel": (lambda M, p: M.Gumbel(p["loc"], p["scale"]), {"loc": rng.normal(size=B), "scale": _pos(*B)},
               rng.normal(size=(4,) + B), MOMENTS + ("cdf",)),
    "Bernoulli": (lambda M, p: M.Bernoulli(probs=p["probs"]), {"probs": rng.uniform(0.1, 0.9, B)},
                  rng.integers(0, 2, (4,) + B).astype(float), MOMENTS),
    "Bernoulli_logits": (lambda M, p: M.Bernoulli(logits=p["logits"]), {"logits": rng.normal(size=B)},
                         rng.integers(0, 2, (4,) + B).astype(float), MOMENTS),
    "Geometric": (lambda M, p: M.Geometric(probs=p["probs"]), {"probs": rng.uniform(0.1, 0.9, B)},
                  rng.integers(0, 6, (4,) + B).astype(float), MOMENTS),
    "Poisson": (lambda M, p: M.Poisson(p["rate"]), {"rate": _pos(*B)}, rng.integers(0, 6, (4,) + B).astype(float),
                MOMENTS[:1] + ("mean", "variance", "mode")),
    "Binomial": (lambda M, p: M.Binomial(5, probs=p["probs"]), {"probs": rng.uniform(0.1, 0.9, B)},
                 rng.integers(0, 6, (4,) + B).astype(float), MOMENTS + ("mode",)),
    "Binomial_logits": (lambda M, p: M.Binomial(p["n"], logits=p["logits"]),
                        {"n": np.full(B, 7.0), "logits": rng.normal(size=B)},
                        rng.integers(0, 8, (4,) + B).astype(float), ("log_prob", "mean", "variance")),
    "Categorical": (lambda M, p: M.Categorical(probs=p["probs"]), {"probs": _simplex(3, 4)},
                    rng.integers(0, 4, (5, 3)).astype(float), ("log_prob", "entropy", "mode")),
    "Categorical_logits": (lambda M, p: M.Categorical(logits=p["logits"]), {"logits": rng.normal(size=(3, 4))},
                           rng.integers(0, 4, (5, 3)).astype(float), ("log_prob", "entropy")),
    "OneHotCategorical": (lambda M, p: M.OneHotCategorical(probs=p["probs"]), {"probs": _simplex(3, 4)},
                          np.eye(4)[rng.integers(0, 4, (5, 3))], MOMENTS + ("mode",)),
    "Multinomial": (lambda M, p: M.Multinomial(6, probs=p["probs"]), {"probs": _simplex(2, 3)},
                    np.array([[[1, 2, 3], [6, 0, 0]], [[0, 0, 6], [2, 2, 2]]], float), MOMENTS),
    "Dirichlet": (lambda M, p: M.Dirichlet(p["conc"]), {"conc": _pos(3, 4)}, _simplex(5, 3, 4), MOMENTS + ("mode",)),
    "MultivariateNormal_tril": (lambda M, p: M.MultivariateNormal(p["loc"], scale_tril=p["L"]),
                                {"loc": rng.normal(size=(2, 3)), "L": _tril(3, 2)}, rng.normal(size=(4, 2, 3)),
                                MOMENTS),
    "MultivariateNormal_cov": (lambda M, p: M.MultivariateNormal(p["loc"], covariance_matrix=p["cov"]),
                               {"loc": rng.normal(size=(2, 3)), "cov": _spd(3, 2)}, rng.normal(size=(4, 2, 3)),
                               MOMENTS + ("precision_matrix", "scale_tril")),
    "MultivariateNormal_prec": (lambda M, p: M.MultivariateNormal(p["loc"], precision_matrix=p["prec"]),
                                {"loc": rng.normal(size=(3,)), "prec": _spd(3)}, rng.normal(size=(4, 3)),
                                MOMENTS + ("covariance_matrix",)),
    "LowRankMultivariateNormal": (lambda M, p: M.LowRankMultivariateNormal(p["loc"], p["W"], p["d"]),
                                  {"loc": rng.normal(size=(2, 4)), "W": rng.normal(size=(2, 4, 2)),
                                   "d": _pos(2, 4)}, rng.normal(size=(3, 2, 4)),
                                  MOMENTS + ("covariance_matrix", "precision_matrix", "scale_tril")),
    "Independent": (lambda M, p: M.Independent(M.Normal(p["loc"], p["scale"]), 1),
                    {"loc": rng.normal(size=B), "scale": _pos(*B)}, rng.normal(size=(4,) + B), MOMENTS),
    "MixtureSameFamily": (lambda M, p: M.MixtureSameFamily(M.Categorical(logits=p["w"]),
                                                           M.Normal(p["loc"], p["scale"])),
                          {"w": rng.normal(size=(2, 3)), "loc": rng.normal(size=(2, 3)), "scale": _pos(2, 3)},
                          rng.normal(size=(4, 2)), ("log_prob", "mean", "variance", "cdf")),
    "MixtureSameFamily_mvn": (lambda M, p: M.MixtureSameFamily(
        M.Categorical(probs=p["w"]), M.Independent(M.Normal(p["loc"], p["scale"]), 1)),
        {"w": _simplex(3), "loc": rng.normal(size=(3, 2)), "scale": _pos(3, 2)}, rng.normal(size=(4, 2)),
        ("log_prob", "mean", "variance")),
    "RelaxedBernoulli": (lambda M, p: M.RelaxedBernoulli(p["t"], probs=p["probs"]),
                         {"t": np.array(0.7), "probs": rng.uniform(0.1, 0.9, B)}, rng.uniform(0.05, 0.95, (4,) + B),
                         ("log_prob",)),
    "RelaxedOneHotCategorical": (lambda M, p: M.RelaxedOneHotCategorical(p["t"], logits=p["logits"]),
                                 {"t": np.array(0.5), "logits": rng.normal(size=(3, 4))}, _simplex(5, 3, 4),
                                 ("log_prob",)),
    "TransformedDistribution": (lambda M, p: M.TransformedDistribution(
        M.Normal(p["loc"], p["scale"]), [M.transforms.AffineTransform(p["a"], p["b"]),
                                         M.transforms.SigmoidTransform()]),
        {"loc": rng.normal(size=B), "scale": _pos(*B), "a": rng.normal(size=B), "b": _pos(*B)},
        rng.uniform(0.05, 0.95, (4,) + B), ("log_prob", "cdf", "icdf")),
    "TransformedDistribution_stickbreaking": (lambda M, p: M.TransformedDistribution(
        M.Normal(p["loc"], p["scale"]), M.transforms.StickBreakingTransform()),
        {"loc": rng.normal(size=(2, 3)), "scale": _pos(2, 3)}, _simplex(4, 2, 4), ("log_prob",)),
    "TransformedDistribution_tanh": (lambda M, p: M.TransformedDistribution(
        M.Normal(p["loc"], p["scale"]), [M.transforms.TanhTransform(), M.transforms.AffineTransform(0.0, 2.0)]),
        {"loc": rng.normal(size=B), "scale": _pos(*B)}, rng.uniform(-1.8, 1.8, (4,) + B), ("log_prob", "cdf")),
    "FisherSnedecor": (lambda M, p: M.FisherSnedecor(p["df1"], p["df2"]),
                       {"df1": _pos(*B, low=2.5, high=6), "df2": _pos(*B, low=4.5, high=9)}, _pos(4, *B),
                       ("log_prob", "mean", "variance", "mode")),
    "NegativeBinomial": (lambda M, p: M.NegativeBinomial(p["n"], probs=p["probs"]),
                         {"n": _pos(*B, low=1, high=5), "probs": rng.uniform(0.1, 0.9, B)},
                         rng.integers(0, 6, (4,) + B).astype(float), ("log_prob", "mean", "variance", "mode")),
    "HalfCauchy": (lambda M, p: M.HalfCauchy(p["scale"]), {"scale": _pos(*B)}, _pos(4, *B),
                   ("log_prob", "entropy", "cdf", "icdf", "mean")),
    "Pareto": (lambda M, p: M.Pareto(p["scale"], p["alpha"]), {"scale": _pos(*B, low=0.2, high=0.5),
                                                               "alpha": _pos(*B, low=2.5, high=4)},
               _pos(4, *B, low=0.6, high=3), MOMENTS + ("cdf", "icdf", "mode")),
    "Weibull": (lambda M, p: M.Weibull(p["scale"], p["concentration"]),
                {"scale": _pos(*B), "concentration": _pos(*B, low=1.2, high=3)}, _pos(4, *B),
                MOMENTS + ("cdf", "icdf", "mode")),
    "InverseGamma": (lambda M, p: M.InverseGamma(p["concentration"], p["rate"]),
                     {"concentration": _pos(*B, low=2.5, high=4), "rate": _pos(*B)}, _pos(4, *B), MOMENTS + ("mode",)),
    "Kumaraswamy": (lambda M, p: M.Kumaraswamy(p["c1"], p["c0"]), {"c1": _pos(*B, low=1.2), "c0": _pos(*B, low=1.2)},
                    rng.uniform(0.05, 0.95, (4,) + B), MOMENTS + ("cdf", "mode")),
    "LogisticNormal": (lambda M, p: M.LogisticNormal(p["loc"], p["scale"]),
                       {"loc": rng.normal(size=(2, 3)), "scale": _pos(2, 3)}, _simplex(4, 2, 4), ("log_prob",)),
    "ContinuousBernoulli": (lambda M, p: M.ContinuousBernoulli(probs=p["probs"]),
                            {"probs": np.array([[0.2, 0.4995], [0.7, 0.5003], [0.95, 0.3]])},
                            rng.uniform(0.05, 0.95, (4,) + B), MOMENTS + ("cdf", "icdf")),
    "ContinuousBernoulli_logits": (lambda M, p: M.ContinuousBernoulli(logits=p["logits"]),
                                   {"logits": rng.normal(size=B)}, rng.uniform(0.05, 0.95, (4,) + B),
                                   MOMENTS + ("cdf",)),
    "GeneralizedPareto": (lambda M, p: M.GeneralizedPareto(p["loc"], p["scale"], p["c"]),
                          {"loc": rng.normal(size=B), "scale": _pos(*B), "c": np.array([[0.2, -0.2], [0.0, 0.3],
                                                                                        [0.1, 0.4]])},
                          _pos(4, *B, low=3, high=3.5), ("log_prob", "entropy", "mean", "variance", "cdf", "icdf")),
    "VonMises": (lambda M, p: M.VonMises(p["loc"], p["k"]), {"loc": rng.uniform(-3, 3, B),
                                                            "k": np.array([[0.3, 2.0], [3.7, 3.8], [10.0, 50.0]])},
                 rng.uniform(-3, 3, (4,) + B), ("log_prob", "mean", "variance", "mode")),
    "LKJCholesky": (lambda M, p: M.LKJCholesky(4, p["c"]), {"c": np.array([0.5, 1.0, 3.0])},
                    _corr_cholesky(5, 3, n=4), ("log_prob",)),
    "Wishart_tril": (lambda M, p: M.Wishart(p["df"], scale_tril=p["L"]), {"df": np.array([4.0, 6.5]),
                                                                           "L": _tril(3, 2)},
                     _spd(3, 4, 2), MOMENTS + ("mode",)),
    "Wishart_cov": (lambda M, p: M.Wishart(p["df"], covariance_matrix=p["cov"]), {"df": np.array(5.0),
                                                                                  "cov": _spd(3)},
                    _spd(3, 4), ("log_prob", "entropy", "mean", "variance")),
    "Wishart_prec": (lambda M, p: M.Wishart(p["df"], precision_matrix=p["prec"]), {"df": np.array([3.5, 4.0]),
                                                                                  "prec": _spd(3, 2)},
                     _spd(3, 4, 2), ("log_prob", "entropy", "mean")),
}


FLOAT32_CASES = {"GeneralizedPareto"}  # torch's own log_prob and cdf fail in float64 (a float32 zero inside)


def _dtype(fw, case):
    return fw.float32 if case in FLOAT32_CASES else fw.float64


def _build(fw, case):
    """(distribution, parameter leaves) in torch or tidal, in float64 (float32 where torch needs it)."""
    make, params, _, _ = CASES[case]
    leaves = {k: fw.tensor(v, dtype=_dtype(fw, case), requires_grad=True) for k, v in params.items()}
    return make(fw.distributions, leaves), list(leaves.values())


def _evaluate(fw, case, method):
    """The method's value (as NumPy) and the gradients of its sum in every parameter."""
    dist, leaves = _build(fw, case)
    value = CASES[case][2]
    if method in ("log_prob", "cdf"):
        out = getattr(dist, method)(fw.tensor(value, dtype=_dtype(fw, case)))
    elif method == "icdf":
        out = dist.icdf(fw.tensor(np.linspace(0.05, 0.95, 4)[:, None, None] * np.ones(B), dtype=_dtype(fw, case)))
    elif method == "entropy":
        out = dist.entropy()
    else:
        out = getattr(dist, method)
    values = out.detach().numpy()
    if not out.requires_grad or not np.isfinite(values).all():
        return values, None
    grads = fw.autograd.grad(out.sum(), leaves, allow_unused=True)
    return values, [None if g is None else g.numpy() for g in grads]


@pytest.mark.parametrize("case,method", [(c, m) for c, rec in CASES.items() for m in rec[3]])
def test_values_and_gradients_follow_torch(case, method):
    theirs, their_grads = _evaluate(torch, case, method)
    ours, our_grads = _evaluate(tidal, case, method)
    assert ours.shape == theirs.shape
    rtol = 1e-5 if case in FLOAT32_CASES else 1e-6
    np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=1e-8, equal_nan=True)
    assert (our_grads is None) == (their_grads is None)
    for mine, ref in zip(our_grads or (), their_grads or ()):
        if ref is None or mine is None:  # torch reports an unused parameter as None, tidal may too
            assert mine is None or not np.any(mine)
            continue
        np.testing.assert_allclose(mine, ref, rtol=10 * rtol, atol=1e-8)


@pytest.mark.parametrize("case", list(CASES))
def test_shapes_and_expand_follow_torch(case):
    theirs, ours = _build(torch, case)[0], _build(tidal, case)[0]
    assert tuple(ours.batch_shape) == tuple(theirs.batch_shape)
    assert tuple(ours.event_shape) == tuple(theirs.event_shape)
    assert ours.has_rsample == theirs.has_rsample
    assert ours.has_enumerate_support == theirs.has_enumerate_support
    tidal.manual_seed(0)
    sample = ours.sample((5,))
    their_sample = theirs.sample((5,))
    assert tuple(sample.shape) == tuple(their_sample.shape) and sample.dtype.name == str(their_sample.dtype)[6:]
    if ours.has_rsample:
        assert tuple(ours.rsample((2, 1)).shape) == tuple(theirs.rsample((2, 1)).shape)
    if not case.startswith(("MixtureSameFamily", "Multinomial", "LowRank", "Transformed")):
        big = (4,) + tuple(theirs.batch_shape)
        expanded_t, expanded = theirs.expand(big), ours.expand(big)
        assert tuple(expanded.batch_shape) == tuple(expanded_t.batch_shape)
        assert type(expanded) is type(ours)
        value = CASES[case][2]
        np.testing.assert_allclose(
            expanded.log_prob(tidal.tensor(value[:1], dtype=_dtype(tidal, case))).detach().numpy(),
            expanded_t.log_prob(torch.tensor(value[:1], dtype=_dtype(torch, case))).detach().numpy(), rtol=1e-5)


def _check_support(dist, sample) -> None:
    assert bool(dist.support.check(sample).all())


# distributions whose samples are checked against their own mean and variance (float32, fixed seed)
MOMENT_CASES = {
    "Normal": lambda: D.Normal(tidal.tensor([0.5, -2.0]), tidal.tensor([1.0, 0.3])),
    "Uniform": lambda: D.Uniform(tidal.tensor([0.0, -1.0]), tidal.tensor([2.0, 3.0])),
    "Exponential": lambda: D.Exponential(tidal.tensor([0.5, 3.0])),
    "Laplace": lambda: D.Laplace(tidal.tensor([1.0, -1.0]), tidal.tensor([0.5, 2.0])),
    "Gamma": lambda: D.Gamma(tidal.tensor([0.3, 4.0]), tidal.tensor([1.0, 2.0])),
    "Chi2": lambda: D.Chi2(tidal.tensor([1.0, 5.0])),
    "Beta": lambda: D.Beta(tidal.tensor([0.5, 3.0]), tidal.tensor([2.0, 1.5])),
    "StudentT": lambda: D.StudentT(tidal.tensor([5.0, 8.0]), tidal.tensor([1.0, 0.0]), tidal.tensor([1.0, 2.0])),
    "LogNormal": lambda: D.LogNormal(tidal.tensor([0.0, 0.5]), tidal.tensor([0.5, 0.25])),
    "HalfNormal": lambda: D.HalfNormal(tidal.tensor([1.0, 3.0])),
    "Gumbel": lambda: D.Gumbel(tidal.tensor([0.0, 2.0]), tidal.tensor([1.0, 0.5])),
    "Bernoulli": lambda: D.Bernoulli(probs=tidal.tensor([0.2, 0.7])),
    "Geometric": lambda: D.Geometric(probs=tidal.tensor([0.3, 0.8])),
    "Poisson": lambda: D.Poisson(tidal.tensor([0.5, 7.0])),
    "Binomial": lambda: D.Binomial(tidal.tensor([10.0, 3.0]), probs=tidal.tensor([0.3, 0.9])),
    "Categorical": lambda: D.OneHotCategorical(probs=tidal.tensor([0.1, 0.2, 0.7])),
    "Multinomial": lambda: D.Multinomial(5, probs=tidal.tensor([0.1, 0.2, 0.7])),
    "Dirichlet": lambda: D.Dirichlet(tidal.tensor([0.5, 1.0, 4.0])),
    "MultivariateNormal": lambda: D.MultivariateNormal(tidal.tensor([1.0, -1.0]),
                                                       tidal.tensor([[2.0, 0.5], [0.5, 1.0]])),
    "LowRankMultivariateNormal": lambda: D.LowRankMultivariateNormal(
        tidal.tensor([1.0, 0.0, -1.0]), tidal.tensor([[1.0], [0.5], [-1.0]]), tidal.tensor([0.5, 1.0, 2.0])),
    "MixtureSameFamily": lambda: D.MixtureSameFamily(D.Categorical(probs=tidal.tensor([0.3, 0.7])),
                                                     D.Normal(tidal.tensor([-2.0, 2.0]), tidal.tensor([0.5, 1.0]))),
    "FisherSnedecor": lambda: D.FisherSnedecor(tidal.tensor([5.0, 12.0]), tidal.tensor([20.0, 30.0])),
    "NegativeBinomial": lambda: D.NegativeBinomial(tidal.tensor([3.0, 0.5]), probs=tidal.tensor([0.4, 0.7])),
    "Pareto": lambda: D.Pareto(tidal.tensor([1.0, 0.5]), tidal.tensor([5.0, 6.0])),
    "Weibull": lambda: D.Weibull(tidal.tensor([1.0, 2.0]), tidal.tensor([1.5, 4.0])),
    "InverseGamma": lambda: D.InverseGamma(tidal.tensor([6.0, 9.0]), tidal.tensor([1.0, 3.0])),
    "Kumaraswamy": lambda: D.Kumaraswamy(tidal.tensor([0.5, 2.0]), tidal.tensor([3.0, 1.5])),
    "ContinuousBernoulli": lambda: D.ContinuousBernoulli(tidal.tensor([0.2, 0.5, 0.9])),
    "GeneralizedPareto": lambda: D.GeneralizedPareto(tidal.tensor([0.0, 1.0]), tidal.tensor([1.0, 2.0]),
                                                     tidal.tensor([0.1, -0.3])),
    "VonMises": lambda: D.VonMises(tidal.tensor([0.5, -2.0]), tidal.tensor([4.0, 50.0])),
    "Wishart": lambda: D.Wishart(tidal.tensor(6.0), tidal.tensor([[2.0, 0.5], [0.5, 1.0]])),
    "RelaxedBernoulli": lambda: D.RelaxedBernoulli(tidal.tensor(0.5), probs=tidal.tensor([0.2, 0.7])),
    "RelaxedOneHotCategorical": lambda: D.RelaxedOneHotCategorical(tidal.tensor(0.5),
                                                                   probs=tidal.tensor([0.1, 0.2, 0.7])),
}


@pytest.mark.parametrize("case", list(MOMENT_CASES))
def test_sample_moments(case):
    tidal.manual_seed(1)
    dist = MOMENT_CASES[case]()
    n = 20000
    samples = dist.sample((n,))
    assert tuple(samples.shape) == (n,) + tuple(dist.batch_shape) + tuple(dist.event_shape)
    if dist.support is not None and not case.startswith("Relaxed"):
        _check_support(dist, samples)
    x = samples.double().numpy()
    if case.startswith("Relaxed"):  # no closed-form mean: the relaxed draws sit in (0, 1) and track the probs
        assert ((x >= 0) & (x <= 1)).all()
        order = np.argsort(x.mean(0))
        assert list(order) == list(np.argsort(dist.probs.numpy()))
        return
    mean, var = dist.mean.numpy(), dist.variance.numpy()
    if case == "VonMises":  # circular statistics: the mean direction and 1 - the mean resultant length
        np.testing.assert_allclose(np.angle(np.exp(1j * x).mean(0)), mean, atol=0.03)
        np.testing.assert_allclose(1 - np.abs(np.exp(1j * x).mean(0)), var, rtol=0.05, atol=2e-3)
        return
    err = np.sqrt(var / n)
    np.testing.assert_array_less(np.abs(x.mean(0) - mean), 6 * err + 1e-9)
    if case in ("StudentT",):  # heavy tails: the variance estimate is too noisy to test
        return
    np.testing.assert_allclose(x.var(0), var, rtol=0.1, atol=1e-3)
    if case == "MultivariateNormal":
        np.testing.assert_allclose(np.cov(x.T), dist.covariance_matrix.numpy(), rtol=0.1, atol=0.05)


def test_gamma_cdf_follows_torch():
    """Gamma.cdf is the regularized incomplete gamma function: values and the rate/value gradients as torch; like
    torch, no derivative in the concentration."""
    conc, rate, value = _pos(3, 4, low=0.1, high=30), _pos(3, 4), _pos(2, 3, 4, low=0.01, high=20)
    outs = []
    for fw in (torch, tidal):
        c, r = fw.tensor(conc), fw.tensor(rate, requires_grad=True)
        v = fw.tensor(value, requires_grad=True)
        for cls in (fw.distributions.Gamma, lambda c, r: fw.distributions.Chi2(2 * c)):
            cdf = cls(c, r).cdf(v)
            outs.append([cdf.detach().numpy()] + [g.numpy() for g in fw.autograd.grad(cdf.sum(), [r, v],
                                                                                        allow_unused=True)
                                                  if g is not None])
        c.requires_grad_()
        with pytest.raises(NotImplementedError, match="the derivative for 'igamma: input' is not implemented"):
            fw.autograd.grad(fw.distributions.Gamma(c, r).cdf(v).sum(), [c])
    for mine, ref in zip(outs[2:], outs[:2]):
        assert len(mine) == len(ref)
        for m, t in zip(mine, ref):
            np.testing.assert_allclose(m, t, rtol=1e-6, atol=1e-9)


def test_exponential_family_entropy_from_the_log_normalizer():
    """ExponentialFamily.entropy (the Bregman form torch uses as a default) agrees with the closed forms."""
    for dist in (D.Normal(tidal.tensor([0.5, -1.0]), tidal.tensor([2.0, 0.3])), D.Exponential(tidal.tensor([0.5, 3.0])),
                 D.Gamma(tidal.tensor([0.7, 4.0]), tidal.tensor([1.0, 2.0])), D.Poisson(tidal.tensor([0.5, 3.0]))):
        if isinstance(dist, D.Poisson):
            with pytest.raises(NotImplementedError):  # no closed form and no mean carrier measure, as torch
                D.ExponentialFamily.entropy(dist)
            continue
        np.testing.assert_allclose(D.ExponentialFamily.entropy(dist).detach().numpy(), dist.entropy().numpy(),
                                   rtol=1e-5)


def test_lkj_cholesky_samples():
    """LKJ samples are Cholesky factors of correlation matrices whose correlations spread as torch's sampler's do
    (its onion method: with concentration 1 in 3 x 3, variance 1/4 for the first and about 0.3 for the others),
    and larger concentrations pull them towards 0."""
    spreads = []
    for fw in (torch, tidal):
        fw.manual_seed(4)
        L = fw.distributions.LKJCholesky(3, fw.tensor([1.0, 20.0])).sample((20000,))
        assert tuple(L.shape) == (20000, 2, 3, 3)
        assert bool(D.constraints.corr_cholesky.check(tidal.tensor(L.numpy())).all())
        corr = (L @ L.mT).numpy()
        np.testing.assert_allclose(np.diagonal(corr, axis1=-2, axis2=-1), 1.0, atol=1e-5)
        spreads.append(corr[..., [1, 2, 2], [0, 0, 1]].var(0))
    np.testing.assert_allclose(spreads[1], spreads[0], rtol=0.08)
    assert (spreads[1][1] < 0.05).all()


SCALAR_DRAWS = [
    lambda M, t: M.Normal(0.0, 1.0).sample(), lambda M, t: M.Normal(0.0, 1.0).sample((2,)),
    lambda M, t: M.Poisson(t.tensor(2.0)).sample(), lambda M, t: M.Bernoulli(0.3).sample((3,)),
    lambda M, t: M.Categorical(t.tensor([0.2, 0.8])).sample((3,)), lambda M, t: M.Binomial(10, t.tensor(0.2)).sample(),
    lambda M, t: M.Gamma(2.0, 3.0).rsample((2,)), lambda M, t: M.Dirichlet(t.tensor([1.0, 2.0])).sample(),
    lambda M, t: M.Uniform(0.0, 1.0).sample(), lambda M, t: M.Geometric(0.3).sample((2,)),
    lambda M, t: M.Multinomial(5, t.tensor([0.2, 0.8])).sample(), lambda M, t: M.Beta(2.0, 3.0).sample(),
    lambda M, t: M.StudentT(3.0).sample(), lambda M, t: M.VonMises(t.tensor(0.0), t.tensor(1.0)).sample(),
    lambda M, t: M.NegativeBinomial(3.0, 0.5).sample(), lambda M, t: M.LKJCholesky(3, 1.0).sample(),
    lambda M, t: M.Poisson(t.tensor([1.0, 2.0])).log_prob(t.tensor([1, 2])),
    lambda M, t: M.Categorical(t.tensor([0.2, 0.8])).log_prob(t.tensor([1, 0])),
    lambda M, t: M.Normal(t.tensor(0.0, dtype=t.float64), 1.0).rsample(),
]


@pytest.mark.parametrize("draw", range(len(SCALAR_DRAWS)))
def test_numbers_as_parameters_and_dtypes(draw):
    """Numbers as parameters, 0-d tensors and integer values: shapes and dtypes as torch's."""
    theirs, ours = SCALAR_DRAWS[draw](torch.distributions, torch), SCALAR_DRAWS[draw](D, tidal)
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert ours.dtype.name == str(theirs.dtype)[6:]


def test_samples_follow_the_seed():
    dist = D.Gamma(tidal.tensor([0.5, 2.0]), tidal.tensor(1.0))
    tidal.manual_seed(7)
    first = dist.sample((3,)).numpy()
    tidal.manual_seed(7)
    np.testing.assert_array_equal(dist.sample((3,)).numpy(), first)
    assert not np.array_equal(dist.sample((3,)).numpy(), first)


def test_rsample_gradients():
    """Reparameterized samples: d(loc + scale eps) exactly; the implicit gamma gradient matches torch's at the same
    points and makes d E[x] / d alpha right for Gamma, Beta and Dirichlet."""
    loc = tidal.tensor([0.5, -1.0], requires_grad=True)
    scale = tidal.tensor([2.0, 0.5], requires_grad=True)
    tidal.manual_seed(3)
    z = D.Normal(loc, scale).rsample((4,))
    gl, gs = tidal.autograd.grad(z.sum(), [loc, scale])
    np.testing.assert_allclose(gl.numpy(), [4.0, 4.0])
    np.testing.assert_allclose(gs.numpy(), ((z.detach() - loc.detach()) / scale.detach()).sum(0).numpy(), rtol=1e-6)

    alpha = np.array([0.2, 0.7, 1.0, 3.0, 25.0, 400.0])
    x = torch._standard_gamma(torch.tensor(alpha).expand(500, 6).contiguous())
    from tidal.distributions._sampling import gamma_sample_grad
    np.testing.assert_allclose(gamma_sample_grad(np.broadcast_to(alpha, x.shape), x.numpy()),
                               torch._standard_gamma_grad(torch.tensor(alpha).expand(500, 6), x).numpy(), rtol=2e-3)

    n = 40000
    conc = tidal.tensor([0.5, 2.0, 6.0], dtype=tidal.float64, requires_grad=True)
    rate = tidal.tensor([1.0, 3.0, 0.5], dtype=tidal.float64, requires_grad=True)
    samples = D.Gamma(conc, rate).rsample((n,))
    gc, gr = tidal.autograd.grad(samples.mean(0).sum(), [conc, rate])
    np.testing.assert_allclose(gc.numpy(), 1 / rate.detach().numpy(), rtol=0.05)  # d(a/r)/da
    np.testing.assert_allclose(gr.numpy(), -(conc / rate ** 2).detach().numpy(), rtol=0.05)

    a = tidal.tensor([2.0, 0.7], dtype=tidal.float64, requires_grad=True)
    b = tidal.tensor([3.0, 0.4], dtype=tidal.float64, requires_grad=True)
    ga, gb = tidal.autograd.grad(D.Beta(a, b).rsample((n,)).mean(0).sum(), [a, b])
    a_, b_ = a.detach().numpy(), b.detach().numpy()
    np.testing.assert_allclose(ga.numpy(), b_ / (a_ + b_) ** 2, rtol=0.1)
    np.testing.assert_allclose(gb.numpy(), -a_ / (a_ + b_) ** 2, rtol=0.1)

    c = tidal.tensor([1.0, 2.0, 3.0], dtype=tidal.float64, requires_grad=True)
    (gd,) = tidal.autograd.grad(D.Dirichlet(c).rsample((n,)).mean(0)[0], [c])  # d(c0 / sum c)
    np.testing.assert_allclose(gd.numpy(), [5 / 36, -1 / 36, -1 / 36], rtol=0.15, atol=4e-3)


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
CASES["Uniform_wide"] = (lambda M, p: M.Uniform(p["low"], p["high"]), {"low": -_pos(*B) - 3, "high": _pos(*B) + 3},
                         None, ())
CASES["MultivariateNormal_4"] = (lambda M, p: M.MultivariateNormal(p["loc"], covariance_matrix=p["cov"]),
                                 {"loc": rng.normal(size=(2, 4)), "cov": _spd(4, 2)}, None, ())
CASES["Uniform_unit"] = (lambda M, p: M.Uniform(p["low"], p["high"]), {"low": np.zeros(B), "high": np.ones(B)},
                         None, ())


def _second(fw, case, flip: int):
    """Another instance of a case's family, with freshly drawn parameters, for the q side of a KL."""
    make, params, _, _ = CASES[case]
    shifted = _shifted_params(case, params, flip)
    leaves = {k: fw.tensor(v, dtype=fw.float64, requires_grad=True) for k, v in shifted.items()}
    return make(fw.distributions, leaves), list(leaves.values())


_SHIFTED: dict = {}


def _shifted_params(case, params, flip):
    """New parameter values for a case (drawn once, so torch and tidal see the same)."""
    if (case, flip) in _SHIFTED:
        return _SHIFTED[case, flip]
    other = np.random.default_rng(flip)
    shifted = _SHIFTED[case, flip] = {}
    for k, v in params.items():
        if k in ("low", "high"):
            shifted[k] = v
        elif k == "n":
            shifted[k] = v
        elif k in ("probs", "conc", "w") and case not in ("Bernoulli", "Geometric", "Binomial"):
            shifted[k] = _simplex(*v.shape) if k != "conc" else _pos(*v.shape)
        elif k in ("probs",):
            shifted[k] = other.uniform(0.1, 0.9, v.shape)
        elif k in ("scale", "rate", "concentration", "c1", "c0", "d", "df", "alpha"):
            shifted[k] = other.uniform(0.5, 2.5, v.shape)
        elif k in ("L",):
            shifted[k] = _tril(v.shape[-1], *v.shape[:-2])
        elif k in ("cov",):
            shifted[k] = _spd(v.shape[-1], *v.shape[:-2])
        else:
            shifted[k] = other.normal(size=v.shape)
    return shifted


@pytest.mark.parametrize("p_case,q_case", KL_PAIRS)
def test_kl_divergence_follows_torch(p_case, q_case):
    results = []
    for fw in (torch, tidal):
        p, p_leaves = _build(fw, p_case)
        q, q_leaves = _second(fw, q_case, 5)
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


TRANSFORMS = {
    "exp": (lambda T: T.ExpTransform(), rng.normal(size=(3, 2))),
    "affine": (lambda T: T.AffineTransform(0.5, -2.0), rng.normal(size=(3, 2))),
    "affine event": (lambda T: T.AffineTransform(0.5, 3.0, event_dim=1), rng.normal(size=(3, 2))),
    "sigmoid": (lambda T: T.SigmoidTransform(), rng.normal(size=(3, 2))),
    "tanh": (lambda T: T.TanhTransform(), rng.normal(size=(3, 2))),
    "softplus": (lambda T: T.SoftplusTransform(), rng.normal(size=(3, 2))),
    "power": (lambda T: T.PowerTransform(2.5), _pos(3, 2)),
    "abs": (lambda T: T.AbsTransform(), rng.normal(size=(3, 2))),
    "softmax": (lambda T: T.SoftmaxTransform(), rng.normal(size=(3, 4))),
    "stickbreaking": (lambda T: T.StickBreakingTransform(), rng.normal(size=(3, 4))),
    "lower cholesky": (lambda T: T.LowerCholeskyTransform(), rng.normal(size=(2, 3, 3))),
    "compose": (lambda T: T.ComposeTransform([T.AffineTransform(1.0, 2.0), T.ExpTransform(),
                                              T.PowerTransform(0.5)]), rng.normal(size=(3, 2))),
    "compose inverse": (lambda T: T.ComposeTransform([T.ExpTransform(), T.AffineTransform(1.0, 2.0)]).inv,
                        _pos(3, 2)),
    "independent": (lambda T: T.IndependentTransform(T.SigmoidTransform(), 1), rng.normal(size=(3, 2))),
    "reshape": (lambda T: T.ReshapeTransform((2,), (2, 1)), rng.normal(size=(3, 2))),
    "cat": (lambda T: T.CatTransform([T.ExpTransform(), T.AffineTransform(1.0, 3.0)], dim=1, lengths=[1, 2]),
            rng.normal(size=(2, 3))),
    "cat event": (lambda T: T.CatTransform([T.IndependentTransform(T.SigmoidTransform(), 1),
                                            T.IndependentTransform(T.ExpTransform(), 1)], dim=-1, lengths=[3, 2]),
                  rng.normal(size=(2, 5))),
    "stack": (lambda T: T.StackTransform([T.ExpTransform(), T.TanhTransform(), T.SigmoidTransform()], dim=1),
              rng.normal(size=(2, 3))),
    "positive definite": (lambda T: T.PositiveDefiniteTransform(), rng.normal(size=(2, 3, 3))),
    "corr cholesky": (lambda T: T.CorrCholeskyTransform(), rng.normal(size=(2, 6))),
}


@pytest.mark.parametrize("case", list(TRANSFORMS))
def test_transforms_follow_torch(case):
    make, x = TRANSFORMS[case]
    outs = []
    for fw in (torch, tidal):
        t = make(fw.distributions.transforms)
        xt = fw.tensor(x, dtype=fw.float64, requires_grad=True)
        y = t(xt)
        row = [y, t.inv(y)]
        if t.bijective or case == "abs":
            try:
                row.append(t.log_abs_det_jacobian(xt, y))
            except NotImplementedError:
                pass
        grads = fw.autograd.grad(sum(r.sum() for r in row), [xt])
        outs.append(([r.detach().numpy() for r in row], grads[0].numpy(), t))
    (theirs, their_grad, tt), (ours, our_grad, ot) = outs
    assert len(ours) == len(theirs)
    for mine, ref in zip(ours, theirs):
        np.testing.assert_allclose(mine, ref, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(our_grad, their_grad, rtol=1e-6, atol=1e-9)
    assert ot.bijective == tt.bijective
    assert ot.domain.event_dim == tt.domain.event_dim and ot.codomain.event_dim == tt.codomain.event_dim
    assert tuple(ot.forward_shape((5,) + x.shape)) == tuple(tt.forward_shape((5,) + x.shape))


def test_cdf_transform_and_tril_helpers():
    """CumulativeDistributionTransform is the base's cdf with its density as the Jacobian; the tril helpers
    round-trip as torch's."""
    from torch.distributions.utils import tril_matrix_to_vec, vec_to_tril_matrix
    x = rng.normal(size=(4, 3))
    outs = []
    for fw in (torch, tidal):
        t = fw.distributions.transforms.CumulativeDistributionTransform(
            fw.distributions.Normal(fw.tensor([0.0, 1.0, -1.0], dtype=fw.float64), 2.0))
        xt = fw.tensor(x)
        y = t(xt)
        outs.append([y.numpy(), t.inv(y).numpy(), t.log_abs_det_jacobian(xt, y).numpy()])
    for mine, ref in zip(outs[1], outs[0]):
        np.testing.assert_allclose(mine, ref, rtol=1e-6)
    m = rng.normal(size=(2, 4, 4))
    for diag in (0, -1, -2):
        vec = tril_matrix_to_vec(torch.tensor(m), diag)
        np.testing.assert_array_equal(D.utils.tril_matrix_to_vec(tidal.tensor(m), diag).numpy(), vec.numpy())
        np.testing.assert_array_equal(D.utils.vec_to_tril_matrix(tidal.tensor(vec.numpy()), diag).numpy(),
                                      vec_to_tril_matrix(vec, diag).numpy())
    check = D.constraints.MixtureSameFamilyConstraint(D.constraints.positive)
    torch_check = torch.distributions.constraints.MixtureSameFamilyConstraint(torch.distributions.constraints.positive)
    value = rng.normal(size=(3, 2))
    np.testing.assert_array_equal(check.check(tidal.tensor(value)).numpy(), torch_check.check(torch.tensor(value)))
    assert repr(check) == repr(torch_check)


def test_transform_caching_inverse_and_registry():
    t = D.transforms.ExpTransform(cache_size=1)
    x = tidal.tensor([0.5, 1.0])
    y = t(x)
    assert t(x) is y and t.inv(y) is x and t.inv.inv is t
    assert D.transforms.ExpTransform() == D.transforms.ExpTransform()
    with pytest.raises(ValueError, match="cache_size must be 0 or 1"):
        D.transforms.ExpTransform(cache_size=2)
    for name in ("real", "positive", "unit_interval", "simplex", "lower_cholesky", "real_vector", "corr_cholesky",
                 "positive_definite"):
        constraint = getattr(D.constraints, name)
        torch_constraint = getattr(torch.distributions.constraints, name)
        for registry in ("biject_to", "transform_to"):
            if name in ("lower_cholesky", "positive_definite") and registry == "biject_to":
                continue
            ours = getattr(D, registry)(constraint)
            theirs = getattr(torch.distributions, registry)(torch_constraint)
            assert type(ours).__name__ == type(theirs).__name__
            z = np.random.default_rng(2).normal(size=(2, 3, 3) if name in ("lower_cholesky", "positive_definite")
                                                else (2, 3))
            np.testing.assert_allclose(ours(tidal.tensor(z)).numpy(), theirs(torch.tensor(z)).numpy(), rtol=1e-6)
            assert bool(constraint.check(ours(tidal.tensor(z))).all())


def test_every_torch_distributions_module_path():
    """`from torch.distributions.<module> import <name>` finds tidal's class for every module torch has."""
    import importlib
    import pkgutil
    for info in pkgutil.iter_modules(torch.distributions.__path__):
        theirs = importlib.import_module(f"torch.distributions.{info.name}")
        ours = importlib.import_module(f"tidal.distributions.{info.name}")
        for name in getattr(theirs, "__all__", ()):
            assert hasattr(ours, name), f"{info.name}.{name}"
    assert importlib.import_module("tidal.distributions.normal").Normal is D.Normal


def test_vae_script_with_distributions_follows_torch(tmp_path):
    """tests/scripts/vae_distributions.py (Normal rsample, Bernoulli log_prob, kl_divergence) runs unmodified under
    `python -m tidal.compat` and follows real torch's losses."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from test_scripts_e2e import check_losses, run_both
    theirs, ours = run_both("vae_distributions", tmp_path)
    check_losses(theirs, ours)
    for key in ("kl", "sample_mean", "rsample_grad"):
        np.testing.assert_allclose(ours[key], theirs[key], rtol=1e-3, atol=1e-4, err_msg=key)
    # rsample draws come from each framework's own RNG: compare their statistics, loosely
    np.testing.assert_allclose(ours["standardized"], [0.0, 1.0], atol=0.05)
    np.testing.assert_allclose(theirs["standardized"], [0.0, 1.0], atol=0.05)

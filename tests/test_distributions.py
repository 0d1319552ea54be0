"""tidal.distributions against torch.distributions: log_prob, entropy, moments, cdf/icdf values and their gradients
in the parameters (distribution_db's records); sample shapes, dtypes and moments; rsample gradients."""
import numpy as np
import pytest
import torch
from distribution_db import B, CASES, FLOAT32_CASES, build, dtype_of, pos

import tidal
import tidal.distributions as D


def _evaluate(fw, case, method):
    """The method's value (as NumPy) and the gradients of its sum in every parameter."""
    dist, leaves = build(fw, case)
    value = CASES[case][2]
    if method in ("log_prob", "cdf"):
        out = getattr(dist, method)(fw.tensor(value, dtype=dtype_of(fw, case)))
    elif method == "icdf":
        out = dist.icdf(fw.tensor(np.linspace(0.05, 0.95, 4)[:, None, None] * np.ones(B), dtype=dtype_of(fw, case)))
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


@pytest.mark.parametrize("case", [c for c, rec in CASES.items() if rec[2] is not None])
def test_shapes_and_expand_follow_torch(case):
    theirs, ours = build(torch, case)[0], build(tidal, case)[0]
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
            expanded.log_prob(tidal.tensor(value[:1], dtype=dtype_of(tidal, case))).detach().numpy(),
            expanded_t.log_prob(torch.tensor(value[:1], dtype=dtype_of(torch, case))).detach().numpy(), rtol=1e-5)


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
    conc, rate, value = pos(3, 4, low=0.1, high=30), pos(3, 4), pos(2, 3, 4, low=0.01, high=20)
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

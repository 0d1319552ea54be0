"""Distribution records shared by the distribution tests: each builds the same distribution in torch and in tidal
from NumPy parameters (float64 unless torch needs float32), with values to evaluate and the methods to compare."""
import numpy as np

rng = np.random.default_rng(0)
B = (3, 2)  # the batch shape most records use


def pos(*shape, low=0.5, high=2.5):
    return rng.uniform(low, high, shape)


def simplex(*shape):
    x = rng.uniform(0.2, 1.0, shape)
    return x / x.sum(-1, keepdims=True)


def spd(n, *batch):
    a = rng.normal(size=batch + (n, n))
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


def corr_cholesky(*batch, n):
    """Cholesky factors of random n x n correlation matrices."""
    x = rng.normal(size=batch + (n, 2 * n))
    cov = x @ np.swapaxes(x, -1, -2)
    d = np.sqrt(np.diagonal(cov, axis1=-2, axis2=-1))
    return np.linalg.cholesky(cov / d[..., :, None] / d[..., None, :])


def tril(n, *batch):
    a = np.tril(rng.normal(size=batch + (n, n)) * 0.3, -1)
    return a + np.eye(n) * rng.uniform(0.5, 1.5, batch + (n,))[..., None]


# name -> (factory(distributions module, params), params, values for log_prob, methods to compare)
MOMENTS = ("log_prob", "entropy", "mean", "variance", "stddev")
CASES = {
    "Normal": (lambda M, p: M.Normal(p["loc"], p["scale"]), {"loc": rng.normal(size=B), "scale": pos(*B)},
               rng.normal(size=(4,) + B), MOMENTS + ("cdf", "icdf", "mode")),
    "Uniform": (lambda M, p: M.Uniform(p["low"], p["high"]), {"low": -pos(*B), "high": pos(*B)},
                rng.uniform(-0.4, 0.4, (4,) + B), MOMENTS + ("cdf", "icdf")),
    "Exponential": (lambda M, p: M.Exponential(p["rate"]), {"rate": pos(*B)}, pos(4, *B),
                    MOMENTS + ("cdf", "icdf", "mode")),
    "Laplace": (lambda M, p: M.Laplace(p["loc"], p["scale"]), {"loc": rng.normal(size=B), "scale": pos(*B)},
                rng.normal(size=(4,) + B), MOMENTS + ("cdf", "icdf")),
    "Cauchy": (lambda M, p: M.Cauchy(p["loc"], p["scale"]), {"loc": rng.normal(size=B), "scale": pos(*B)},
               rng.normal(size=(4,) + B), ("log_prob", "entropy", "cdf", "icdf", "mean", "variance")),
    "Gamma": (lambda M, p: M.Gamma(p["concentration"], p["rate"]),
              {"concentration": pos(*B), "rate": pos(*B)}, pos(4, *B), MOMENTS + ("mode",)),
    "Chi2": (lambda M, p: M.Chi2(p["df"]), {"df": pos(*B, low=1, high=4)}, pos(4, *B), MOMENTS),
    "Beta": (lambda M, p: M.Beta(p["c1"], p["c0"]), {"c1": pos(*B), "c0": pos(*B)},
             rng.uniform(0.05, 0.95, (4,) + B), MOMENTS + ("mode",)),
    "StudentT": (lambda M, p: M.StudentT(p["df"], p["loc"], p["scale"]),
                 {"df": pos(*B, low=2.5, high=6), "loc": rng.normal(size=B), "scale": pos(*B)},
                 rng.normal(size=(4,) + B), MOMENTS),
    "LogNormal": (lambda M, p: M.LogNormal(p["loc"], p["scale"]), {"loc": rng.normal(size=B), "scale": pos(*B)},
                  pos(4, *B), MOMENTS + ("cdf", "icdf", "mode")),
    "HalfNormal": (lambda M, p: M.HalfNormal(p["scale"]), {"scale": pos(*B)}, pos(4, *B),
                   MOMENTS + ("cdf", "icdf")),
    "Gumbel": (lambda M, p: M.Gumbel(p["loc"], p["scale"]), {"loc": rng.normal(size=B), "scale": pos(*B)},
               rng.normal(size=(4,) + B), MOMENTS + ("cdf",)),
    "Bernoulli": (lambda M, p: M.Bernoulli(probs=p["probs"]), {"probs": rng.uniform(0.1, 0.9, B)},
                  rng.integers(0, 2, (4,) + B).astype(float), MOMENTS),
    "Bernoulli_logits": (lambda M, p: M.Bernoulli(logits=p["logits"]), {"logits": rng.normal(size=B)},
                         rng.integers(0, 2, (4,) + B).astype(float), MOMENTS),
    "Geometric": (lambda M, p: M.Geometric(probs=p["probs"]), {"probs": rng.uniform(0.1, 0.9, B)},
                  rng.integers(0, 6, (4,) + B).astype(float), MOMENTS),
    "Poisson": (lambda M, p: M.Poisson(p["rate"]), {"rate": pos(*B)}, rng.integers(0, 6, (4,) + B).astype(float),
                MOMENTS[:1] + ("mean", "variance", "mode")),
    "Binomial": (lambda M, p: M.Binomial(5, probs=p["probs"]), {"probs": rng.uniform(0.1, 0.9, B)},
                 rng.integers(0, 6, (4,) + B).astype(float), MOMENTS + ("mode",)),
    "Binomial_logits": (lambda M, p: M.Binomial(p["n"], logits=p["logits"]),
                        {"n": np.full(B, 7.0), "logits": rng.normal(size=B)},
                        rng.integers(0, 8, (4,) + B).astype(float), ("log_prob", "mean", "variance")),
    "Categorical": (lambda M, p: M.Categorical(probs=p["probs"]), {"probs": simplex(3, 4)},
                    rng.integers(0, 4, (5, 3)).astype(float), ("log_prob", "entropy", "mode")),
    "Categorical_logits": (lambda M, p: M.Categorical(logits=p["logits"]), {"logits": rng.normal(size=(3, 4))},
                           rng.integers(0, 4, (5, 3)).astype(float), ("log_prob", "entropy")),
    "OneHotCategorical": (lambda M, p: M.OneHotCategorical(probs=p["probs"]), {"probs": simplex(3, 4)},
                          np.eye(4)[rng.integers(0, 4, (5, 3))], MOMENTS + ("mode",)),
    "Multinomial": (lambda M, p: M.Multinomial(6, probs=p["probs"]), {"probs": simplex(2, 3)},
                    np.array([[[1, 2, 3], [6, 0, 0]], [[0, 0, 6], [2, 2, 2]]], float), MOMENTS),
    "Dirichlet": (lambda M, p: M.Dirichlet(p["conc"]), {"conc": pos(3, 4)}, simplex(5, 3, 4), MOMENTS + ("mode",)),
    "MultivariateNormal_tril": (lambda M, p: M.MultivariateNormal(p["loc"], scale_tril=p["L"]),
                                {"loc": rng.normal(size=(2, 3)), "L": tril(3, 2)}, rng.normal(size=(4, 2, 3)),
                                MOMENTS),
    "MultivariateNormal_cov": (lambda M, p: M.MultivariateNormal(p["loc"], covariance_matrix=p["cov"]),
                               {"loc": rng.normal(size=(2, 3)), "cov": spd(3, 2)}, rng.normal(size=(4, 2, 3)),
                               MOMENTS + ("precision_matrix", "scale_tril")),
    "MultivariateNormal_prec": (lambda M, p: M.MultivariateNormal(p["loc"], precision_matrix=p["prec"]),
                                {"loc": rng.normal(size=(3,)), "prec": spd(3)}, rng.normal(size=(4, 3)),
                                MOMENTS + ("covariance_matrix",)),
    "LowRankMultivariateNormal": (lambda M, p: M.LowRankMultivariateNormal(p["loc"], p["W"], p["d"]),
                                  {"loc": rng.normal(size=(2, 4)), "W": rng.normal(size=(2, 4, 2)),
                                   "d": pos(2, 4)}, rng.normal(size=(3, 2, 4)),
                                  MOMENTS + ("covariance_matrix", "precision_matrix", "scale_tril")),
    "Independent": (lambda M, p: M.Independent(M.Normal(p["loc"], p["scale"]), 1),
                    {"loc": rng.normal(size=B), "scale": pos(*B)}, rng.normal(size=(4,) + B), MOMENTS),
    "MixtureSameFamily": (lambda M, p: M.MixtureSameFamily(M.Categorical(logits=p["w"]),
                                                           M.Normal(p["loc"], p["scale"])),
                          {"w": rng.normal(size=(2, 3)), "loc": rng.normal(size=(2, 3)), "scale": pos(2, 3)},
                          rng.normal(size=(4, 2)), ("log_prob", "mean", "variance", "cdf")),
    "MixtureSameFamily_mvn": (lambda M, p: M.MixtureSameFamily(
        M.Categorical(probs=p["w"]), M.Independent(M.Normal(p["loc"], p["scale"]), 1)),
        {"w": simplex(3), "loc": rng.normal(size=(3, 2)), "scale": pos(3, 2)}, rng.normal(size=(4, 2)),
        ("log_prob", "mean", "variance")),
    "RelaxedBernoulli": (lambda M, p: M.RelaxedBernoulli(p["t"], probs=p["probs"]),
                         {"t": np.array(0.7), "probs": rng.uniform(0.1, 0.9, B)}, rng.uniform(0.05, 0.95, (4,) + B),
                         ("log_prob",)),
    "RelaxedOneHotCategorical": (lambda M, p: M.RelaxedOneHotCategorical(p["t"], logits=p["logits"]),
                                 {"t": np.array(0.5), "logits": rng.normal(size=(3, 4))}, simplex(5, 3, 4),
                                 ("log_prob",)),
    "TransformedDistribution": (lambda M, p: M.TransformedDistribution(
        M.Normal(p["loc"], p["scale"]), [M.transforms.AffineTransform(p["a"], p["b"]),
                                         M.transforms.SigmoidTransform()]),
        {"loc": rng.normal(size=B), "scale": pos(*B), "a": rng.normal(size=B), "b": pos(*B)},
        rng.uniform(0.05, 0.95, (4,) + B), ("log_prob", "cdf", "icdf")),
    "TransformedDistribution_stickbreaking": (lambda M, p: M.TransformedDistribution(
        M.Normal(p["loc"], p["scale"]), M.transforms.StickBreakingTransform()),
        {"loc": rng.normal(size=(2, 3)), "scale": pos(2, 3)}, simplex(4, 2, 4), ("log_prob",)),
    "TransformedDistribution_tanh": (lambda M, p: M.TransformedDistribution(
        M.Normal(p["loc"], p["scale"]), [M.transforms.TanhTransform(), M.transforms.AffineTransform(0.0, 2.0)]),
        {"loc": rng.normal(size=B), "scale": pos(*B)}, rng.uniform(-1.8, 1.8, (4,) + B), ("log_prob", "cdf")),
    "FisherSnedecor": (lambda M, p: M.FisherSnedecor(p["df1"], p["df2"]),
                       {"df1": pos(*B, low=2.5, high=6), "df2": pos(*B, low=4.5, high=9)}, pos(4, *B),
                       ("log_prob", "mean", "variance", "mode")),
    "NegativeBinomial": (lambda M, p: M.NegativeBinomial(p["n"], probs=p["probs"]),
                         {"n": pos(*B, low=1, high=5), "probs": rng.uniform(0.1, 0.9, B)},
                         rng.integers(0, 6, (4,) + B).astype(float), ("log_prob", "mean", "variance", "mode")),
    "HalfCauchy": (lambda M, p: M.HalfCauchy(p["scale"]), {"scale": pos(*B)}, pos(4, *B),
                   ("log_prob", "entropy", "cdf", "icdf", "mean")),
    "Pareto": (lambda M, p: M.Pareto(p["scale"], p["alpha"]), {"scale": pos(*B, low=0.2, high=0.5),
                                                               "alpha": pos(*B, low=2.5, high=4)},
               pos(4, *B, low=0.6, high=3), MOMENTS + ("cdf", "icdf", "mode")),
    "Weibull": (lambda M, p: M.Weibull(p["scale"], p["concentration"]),
                {"scale": pos(*B), "concentration": pos(*B, low=1.2, high=3)}, pos(4, *B),
                MOMENTS + ("cdf", "icdf", "mode")),
    "InverseGamma": (lambda M, p: M.InverseGamma(p["concentration"], p["rate"]),
                     {"concentration": pos(*B, low=2.5, high=4), "rate": pos(*B)}, pos(4, *B), MOMENTS + ("mode",)),
    "Kumaraswamy": (lambda M, p: M.Kumaraswamy(p["c1"], p["c0"]), {"c1": pos(*B, low=1.2), "c0": pos(*B, low=1.2)},
                    rng.uniform(0.05, 0.95, (4,) + B), MOMENTS + ("cdf", "mode")),
    "LogisticNormal": (lambda M, p: M.LogisticNormal(p["loc"], p["scale"]),
                       {"loc": rng.normal(size=(2, 3)), "scale": pos(2, 3)}, simplex(4, 2, 4), ("log_prob",)),
    "ContinuousBernoulli": (lambda M, p: M.ContinuousBernoulli(probs=p["probs"]),
                            {"probs": np.array([[0.2, 0.4995], [0.7, 0.5003], [0.95, 0.3]])},
                            rng.uniform(0.05, 0.95, (4,) + B), MOMENTS + ("cdf", "icdf")),
    "ContinuousBernoulli_logits": (lambda M, p: M.ContinuousBernoulli(logits=p["logits"]),
                                   {"logits": rng.normal(size=B)}, rng.uniform(0.05, 0.95, (4,) + B),
                                   MOMENTS + ("cdf",)),
    "GeneralizedPareto": (lambda M, p: M.GeneralizedPareto(p["loc"], p["scale"], p["c"]),
                          {"loc": rng.normal(size=B), "scale": pos(*B), "c": np.array([[0.2, -0.2], [0.0, 0.3],
                                                                                        [0.1, 0.4]])},
                          pos(4, *B, low=3, high=3.5), ("log_prob", "entropy", "mean", "variance", "cdf", "icdf")),
    "VonMises": (lambda M, p: M.VonMises(p["loc"], p["k"]), {"loc": rng.uniform(-3, 3, B),
                                                            "k": np.array([[0.3, 2.0], [3.7, 3.8], [10.0, 50.0]])},
                 rng.uniform(-3, 3, (4,) + B), ("log_prob", "mean", "variance", "mode")),
    "LKJCholesky": (lambda M, p: M.LKJCholesky(4, p["c"]), {"c": np.array([0.5, 1.0, 3.0])},
                    corr_cholesky(5, 3, n=4), ("log_prob",)),
    "Wishart_tril": (lambda M, p: M.Wishart(p["df"], scale_tril=p["L"]), {"df": np.array([4.0, 6.5]),
                                                                           "L": tril(3, 2)},
                     spd(3, 4, 2), MOMENTS + ("mode",)),
    "Wishart_cov": (lambda M, p: M.Wishart(p["df"], covariance_matrix=p["cov"]), {"df": np.array(5.0),
                                                                                  "cov": spd(3)},
                    spd(3, 4), ("log_prob", "entropy", "mean", "variance")),
    "Wishart_prec": (lambda M, p: M.Wishart(p["df"], precision_matrix=p["prec"]), {"df": np.array([3.5, 4.0]),
                                                                                  "prec": spd(3, 2)},
                     spd(3, 4, 2), ("log_prob", "entropy", "mean")),
}


FLOAT32_CASES = {"GeneralizedPareto"}  # torch's own log_prob and cdf fail in float64 (a float32 zero inside)


def dtype_of(fw, case):
    """The dtype a case is compared in."""
    return fw.float32 if case in FLOAT32_CASES else fw.float64


def build(fw, case):
    """(distribution, parameter leaves) in torch or tidal, in float64 (float32 where torch needs it)."""
    make, params, _, _ = CASES[case]
    leaves = {k: fw.tensor(v, dtype=dtype_of(fw, case), requires_grad=True) for k, v in params.items()}
    return make(fw.distributions, leaves), list(leaves.values())


CASES["Uniform_wide"] = (lambda M, p: M.Uniform(p["low"], p["high"]), {"low": -pos(*B) - 3, "high": pos(*B) + 3},
                         None, ())
CASES["MultivariateNormal_4"] = (lambda M, p: M.MultivariateNormal(p["loc"], covariance_matrix=p["cov"]),
                                 {"loc": rng.normal(size=(2, 4)), "cov": spd(4, 2)}, None, ())
CASES["Uniform_unit"] = (lambda M, p: M.Uniform(p["low"], p["high"]), {"low": np.zeros(B), "high": np.ones(B)},
                         None, ())


def second(fw, case, flip: int):
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
            shifted[k] = simplex(*v.shape) if k != "conc" else pos(*v.shape)
        elif k in ("probs",):
            shifted[k] = other.uniform(0.1, 0.9, v.shape)
        elif k in ("scale", "rate", "concentration", "c1", "c0", "d", "df", "alpha"):
            shifted[k] = other.uniform(0.5, 2.5, v.shape)
        elif k in ("L",):
            shifted[k] = tril(v.shape[-1], *v.shape[:-2])
        elif k in ("cov",):
            shifted[k] = spd(v.shape[-1], *v.shape[:-2])
        else:
            shifted[k] = other.normal(size=v.shape)
    return shifted

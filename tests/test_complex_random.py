"""Random sampling into complex dtypes (torch's conventions: randn's parts each of variance 1/2, rand's parts
each uniform), the samplers that refuse complex with torch's errors, and complex casting rules."""
import numpy as np
import pytest
import torch

import tidal
from complex_helpers import raises_like

N = 100_000


def _parts(z):
    a = z.numpy() if isinstance(z, tidal.Tensor) else z.numpy()
    return a.real.astype(np.float64), a.imag.astype(np.float64)


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_randn_variance_convention(dtype):
    tidal.manual_seed(1)
    z = tidal.randn(N, dtype=getattr(tidal, dtype))
    assert z.dtype.name == str(torch.randn(1, dtype=getattr(torch, dtype)).dtype).split(".")[-1]
    re, im = _parts(z)
    tol = 5 / np.sqrt(N)  # several standard errors of a variance estimate
    assert abs(re.var() - 0.5) < tol and abs(im.var() - 0.5) < tol
    assert abs(re.mean()) < tol and abs(im.mean()) < tol
    assert abs(np.corrcoef(re, im)[0, 1]) < tol
    assert abs(float(z.var()) - 1.0) < 2 * tol  # E|z|^2 = 1, as torch's randn
    assert tidal.randn_like(z).dtype is z.dtype


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_rand_parts_uniform(dtype):
    tidal.manual_seed(2)
    z = tidal.rand(N, dtype=getattr(tidal, dtype))
    re, im = _parts(z)
    for part in (re, im):
        assert part.min() >= 0 and part.max() < 1
        counts = np.histogram(part, bins=10, range=(0, 1))[0]
        assert np.all(np.abs(counts - N / 10) < 5 * np.sqrt(N / 10))
    u = tidal.empty(N, dtype=getattr(tidal, dtype)).uniform_(-2, -1)
    re, im = _parts(u)
    assert re.min() >= -2 and re.max() < -1 and im.min() >= -2 and im.max() < -1


def test_normal_forms():
    tidal.manual_seed(3)
    tol = 5 / np.sqrt(N)
    x = tidal.empty(N, dtype=tidal.complex64).normal_(1.0, 2.0)  # each part: mean 1, variance 2
    re, im = _parts(x)
    assert abs(re.mean() - 1) < 3 * tol and abs(im.mean() - 1) < 3 * tol
    assert abs(re.var() - 2) < 10 * tol and abs(im.var() - 2) < 10 * tol
    n = tidal.normal(tidal.full((N,), 1 + 2j, dtype=tidal.complex64), 2.0)  # a complex mean tensor
    re, im = _parts(n)
    assert n.dtype is tidal.complex64
    assert abs(re.mean() - 1) < 3 * tol and abs(im.mean() - 2) < 3 * tol and abs(re.var() - 2) < 10 * tol
    assert tidal.normal(0.0, 1.0, (3,), dtype=tidal.complex128).dtype is tidal.complex128


REFUSED = {
    "exponential_": lambda m, x: x.exponential_(),
    "random_range": lambda m, x: x.random_(3),
    "random_": lambda m, x: x.random_(),
    "bernoulli_": lambda m, x: x.bernoulli_(),
    "bernoulli_tensor": lambda m, x: x.bernoulli_(m.full((3,), 0.5)),
    "cauchy_": lambda m, x: x.cauchy_(),
    "log_normal_": lambda m, x: x.log_normal_(),
    "geometric_": lambda m, x: x.geometric_(0.5),
    "randint": lambda m, x: m.randint(3, (2,), dtype=x.dtype),
    "randint_like": lambda m, x: m.randint_like(x, 3),
    "bernoulli": lambda m, x: m.bernoulli(x),
    "poisson": lambda m, x: m.poisson(x),
    "multinomial": lambda m, x: m.multinomial(x, 1),
    "normal_complex_std": lambda m, x: m.normal(x, m.ones(3, dtype=x.dtype)),
}


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("case", sorted(REFUSED))
def test_refusals_like_torch(case, dtype):
    fn = REFUSED[case]
    raises_like(lambda: fn(tidal, tidal.zeros(3, dtype=getattr(tidal, dtype))),
                lambda: fn(torch, torch.zeros(3, dtype=getattr(torch, dtype))))


KINDS = ["bool", "uint8", "int64", "float16", "float32", "float64", "complex64", "complex128"]


@pytest.mark.parametrize("a", KINDS)
@pytest.mark.parametrize("b", KINDS)
def test_can_cast(a, b):
    assert tidal.can_cast(getattr(tidal, a), getattr(tidal, b)) == torch.can_cast(getattr(torch, a), getattr(torch, b))

"""Statistics on complex input against torch: cov/corrcoef (conjugated products, each part of the correlation
clipped) with gradients; quantile and isin refuse complex, with torch's errors."""
import numpy as np
import pytest
import torch

import tidal
import tidal.compat as tc
from complex_helpers import raises_like, to_numpy

RNG = np.random.default_rng(21)


def _c(shape):
    return RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)


@pytest.mark.parametrize("op", ["cov", "corrcoef"])
@pytest.mark.parametrize("shape", [(3, 6), (6,)])
def test_cov_corrcoef(op, shape):
    data = _c(shape)
    w = _c((3, 3) if len(shape) == 2 else ())
    x, t = tc.tensor(data, requires_grad=True), torch.tensor(data, requires_grad=True)
    got, want = getattr(tc, op)(x), getattr(torch, op)(t)
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-10, atol=1e-12)
    (got * tc.tensor(w)).real.sum().backward()
    (want * torch.tensor(w)).real.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-8, atol=1e-10)


def test_cov_weights():
    data, fw, aw = _c((2, 5)), np.array([1, 2, 1, 3, 1]), RNG.random(5)
    got = tc.cov(tc.tensor(data), fweights=tc.tensor(fw), aweights=tc.tensor(aw), correction=0)
    want = torch.cov(torch.tensor(data), fweights=torch.tensor(fw), aweights=torch.tensor(aw), correction=0)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-10)


ERRORS = {
    "quantile": lambda m, x: m.quantile(x, 0.5),
    "nanquantile": lambda m, x: m.nanquantile(x, 0.5),
    "nanquantile_int": lambda m, x: m.nanquantile(x.real.to(m.int64), 0.5),
    "nanquantile_q_range": lambda m, x: m.nanquantile(x.real, 1.5),
    "quantile_interpolation": lambda m, x: m.quantile(x.real, 0.5, interpolation="cubic"),
    "isin": lambda m, x: m.isin(x, x[:1]),
    "isin_promoted": lambda m, x: m.isin(x.real, x[:1]),
    "isin_scalar": lambda m, x: m.isin(x, 1.0),
}


@pytest.mark.parametrize("case", sorted(ERRORS))
def test_errors_like_torch(case):
    data = _c(4).astype(np.complex64)
    raises_like(lambda: ERRORS[case](tidal, tidal.tensor(data)), lambda: ERRORS[case](torch, torch.tensor(data)))


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_logcumsumexp_complex(dtype, dim):
    data = _c((3, 5))
    data[0, 1] = -np.inf + 0j  # an exp of 0 on the way
    data[1, :2] = -np.inf + 1j  # leading terms of 0
    w = _c((3, 5))
    w[2, 3] = 0  # a zero gradient: log(0) in torch's formula
    results = []
    for m in (tc, torch):
        x = m.tensor(data, dtype=getattr(m, dtype), requires_grad=True)
        y = m.logcumsumexp(x, dim)
        (y * m.tensor(w, dtype=y.dtype)).real.sum().backward()
        results.append((str(y.dtype).split(".")[-1], to_numpy(y), to_numpy(x.grad)))
    got, want = results
    tol = dict(rtol=1e-4, atol=1e-5) if dtype == "complex64" else dict(rtol=1e-10, atol=1e-12)
    assert got[0] == want[0]
    np.testing.assert_allclose(got[1], want[1], **tol)
    np.testing.assert_allclose(got[2], want[2], **tol)

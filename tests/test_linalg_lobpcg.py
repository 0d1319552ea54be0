"""torch.lobpcg against torch: the k extreme eigenpairs (eigenvectors up to sign, to torch's iteration
tolerance), generalized problems with B, batches, gradients without B, and torch's errors."""
import numpy as np
import pytest
import torch

import tidal.compat as tc
from complex_helpers import raises_like

RNG = np.random.default_rng(1616)


def _spd(*shape, shift=1.0):
    m = RNG.standard_normal(shape)
    return m @ np.swapaxes(m, -1, -2) + shift * np.eye(shape[-1])


def _args(lib, kwargs):
    return {k: (lib.tensor(v) if isinstance(v, np.ndarray) else v) for k, v in kwargs.items()}


@pytest.mark.parametrize("kwargs", [
    {"k": 2}, {"k": 2, "largest": False}, {"k": 3, "B": "B"}, {"k": 2, "B": "B", "largest": False},
    {"X": "X"}, {"k": 1, "n": 2}, {},
], ids=["k2", "smallest", "generalized", "generalized_smallest", "start_X", "n", "defaults"])
@pytest.mark.parametrize("batch", [(), (2,)])
def test_values(kwargs, batch):
    A = _spd(*batch, 10, 10)
    extra = {"B": _spd(*batch, 10, 10, shift=10.0), "X": RNG.standard_normal((*batch, 10, 2))}
    kwargs = {k: extra[v] if isinstance(v, str) else v for k, v in kwargs.items()}
    E, X = tc.lobpcg(tc.tensor(A), **_args(tc, kwargs))
    tE, tX = torch.lobpcg(torch.tensor(A), **_args(torch, kwargs))
    assert tuple(E.shape) == tuple(tE.shape) and tuple(X.shape) == tuple(tX.shape)
    np.testing.assert_allclose(E.numpy(), tE.numpy(), rtol=1e-10)
    np.testing.assert_allclose(np.abs(X.numpy()), np.abs(tX.numpy()), atol=1e-5)  # torch: converged to ~1e-8
    B = kwargs.get("B", np.broadcast_to(np.eye(10), A.shape))
    gram = np.swapaxes(X.numpy(), -1, -2) @ B @ X.numpy()
    np.testing.assert_allclose(gram, np.broadcast_to(np.eye(X.shape[-1]), gram.shape), atol=1e-10)


def test_gradient():
    A = _spd(9, 9)
    weight = RNG.standard_normal(9)
    a, t = tc.tensor(A, requires_grad=True), torch.tensor(A, requires_grad=True)
    for lib, x in ((tc, a), (torch, t)):
        E, X = lib.lobpcg(x, k=2)
        (E.sum() + (X[:, 0] ** 2 * lib.tensor(weight)).sum()).backward()  # sign-free in the eigenvectors
    np.testing.assert_allclose(a.grad.numpy(), t.grad.numpy(), atol=1e-6)
    np.testing.assert_allclose(a.grad.numpy(), a.grad.numpy().T, atol=1e-12)  # symmetric, as torch makes it


def test_generalized_backward_raises_as_torch():
    A, B = _spd(9, 9), _spd(9, 9, shift=9.0)

    def run(lib):
        E, _ = lib.lobpcg(lib.tensor(A, requires_grad=True), k=2, B=lib.tensor(B))
        assert E.requires_grad
        E.sum().backward()

    raises_like(lambda: run(tc), lambda: run(torch))


def test_errors():
    A = _spd(9, 9)
    raises_like(lambda: tc.lobpcg(tc.tensor(A), k=4), lambda: torch.lobpcg(torch.tensor(A), k=4))
    raises_like(lambda: tc.lobpcg(tc.tensor(A[:, :3]), k=1), lambda: torch.lobpcg(torch.tensor(A[:, :3]), k=1))
    raises_like(lambda: tc.lobpcg(tc.tensor(A), B=tc.tensor(A[:3, :3])),
                lambda: torch.lobpcg(torch.tensor(A), B=torch.tensor(A[:3, :3])))

"""Householder and LDL routines on complex input, against torch: ormqr applies H_i = I - tau_i v_i v_i^H (and
Q^H with `transpose`), with gradients; ldl_factor with hermitian=True factors L D L^H; ldl_factor(_ex), ldl_solve and geqrf have no derivative in torch, so
their outputs require grad and a backward through them raises torch's error (complex geqrf refuses at once)."""
import numpy as np
import pytest
import torch

import tidal
import tidal.compat as tc
from complex_helpers import raises_like, to_numpy

RNG = np.random.default_rng(1616)


def _c(*shape):
    return RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)


def _sym(n, complex_, hermitian):
    a = _c(n, n) if complex_ else RNG.standard_normal((n, n))
    return a + (a.conj().T if hermitian else a.T)


@pytest.mark.parametrize("dtype", [np.complex128, np.complex64])
@pytest.mark.parametrize("left,transpose", [(True, False), (True, True), (False, False), (False, True)])
def test_complex_ormqr_values_and_grads(left, transpose, dtype):
    a_np = _c(2, 5, 3).astype(dtype)
    other = (_c(2, 5, 4) if left else _c(2, 4, 5)).astype(dtype)
    qa, qtau = torch.geqrf(torch.from_numpy(a_np))
    weight = _c(*other.shape)
    inputs = (qa.numpy(), qtau.numpy(), other)
    ts = [tidal.tensor(x, requires_grad=True) for x in inputs]
    ws = [torch.tensor(x, requires_grad=True) for x in inputs]
    got, want = tc.ormqr(*ts, left, transpose), torch.ormqr(*ws, left, transpose)
    assert str(got.dtype) == str(want.dtype).replace("torch", "tidal")
    tol = 1e-4 if dtype == np.complex64 else 1e-10
    np.testing.assert_allclose(to_numpy(got), to_numpy(want), rtol=tol, atol=tol)
    (got * tc.tensor(weight, dtype=got.dtype)).real.sum().backward()
    (want * torch.tensor(weight, dtype=want.dtype)).real.sum().backward()
    for t, w in zip(ts, ws):
        np.testing.assert_allclose(to_numpy(t.grad), to_numpy(w.grad), rtol=10 * tol, atol=10 * tol)


@pytest.mark.parametrize("small_diagonal", [False, True], ids=["plain", "2x2_pivots"])
@pytest.mark.parametrize("complex_", [False, True], ids=["float64", "complex128"])
@pytest.mark.parametrize("hermitian", [False, True])
def test_ldl_values(hermitian, complex_, small_diagonal):
    """Bunch-Kaufman (zsytf2 / zhetf2) with LAPACK's |re| + |im| pivot test: torch's LD and pivots exactly."""
    for n in (1, 3, 6):
        A = np.stack([_sym(n, complex_, hermitian) for _ in range(3)])
        if small_diagonal:  # forces 2x2 blocks
            A[:, range(n), range(n)] *= 0.01
        B = _c(3, n, 2) if complex_ else RNG.standard_normal((3, n, 2))
        LD, piv = tc.linalg.ldl_factor(tc.tensor(A), hermitian=hermitian)
        tLD, tpiv = torch.linalg.ldl_factor(torch.from_numpy(A), hermitian=hermitian)
        np.testing.assert_allclose(LD.numpy(), tLD.numpy(), rtol=1e-10, atol=1e-12)
        np.testing.assert_array_equal(piv.numpy(), tpiv.numpy())
        X = tc.linalg.ldl_solve(LD, piv, tc.tensor(B), hermitian=hermitian)
        tX = torch.linalg.ldl_solve(tLD, tpiv, torch.from_numpy(B), hermitian=hermitian)
        np.testing.assert_allclose(X.numpy(), tX.numpy(), rtol=1e-9, atol=1e-10)


NO_DERIVATIVE = {
    "ldl_factor": lambda L, A, B: L.linalg.ldl_factor(A)[:1],
    "ldl_factor_hermitian": lambda L, A, B: L.linalg.ldl_factor(A, hermitian=True)[:1],
    "ldl_factor_ex": lambda L, A, B: L.linalg.ldl_factor_ex(A)[:1],
    "ldl_solve_B": lambda L, A, B: (L.linalg.ldl_solve(*L.linalg.ldl_factor(A.detach()), B),),
    "ldl_solve_LD": lambda L, A, B: (L.linalg.ldl_solve(*L.linalg.ldl_factor(A), B.detach()),),
    "geqrf_a": lambda L, A, B: L.geqrf(A)[:1],
    "geqrf_tau": lambda L, A, B: L.geqrf(A)[1:],
}


@pytest.mark.parametrize("complex_", [False, True], ids=["float64", "complex128"])
@pytest.mark.parametrize("name", list(NO_DERIVATIVE))
def test_backward_raises_as_torch(name, complex_):
    fn = NO_DERIVATIVE[name]
    A, B = _sym(4, complex_, True), (_c(4, 2) if complex_ else RNG.standard_normal((4, 2)))

    def run(lib):
        a, b = lib.tensor(A, requires_grad=True), lib.tensor(B, requires_grad=True)
        (out,) = fn(lib, a, b)
        return out

    try:
        want = run(torch)
    except RuntimeError:  # complex geqrf: torch refuses before computing
        raises_like(lambda: run(tc), lambda: run(torch))
        return
    got = run(tc)
    assert got.requires_grad and want.requires_grad
    assert type(got.grad_fn).__name__ == type(want.grad_fn).__name__
    raises_like(lambda: got.abs().sum().backward(), lambda: want.abs().sum().backward())


def test_no_grad_and_integer_outputs():
    A = _sym(3, True, True)
    a = tc.tensor(A, requires_grad=True)
    ta = torch.tensor(A, requires_grad=True)
    with tc.no_grad():
        assert not tc.geqrf(a)[0].requires_grad  # no refusal either: nothing is recorded
    with torch.no_grad():
        assert not torch.geqrf(ta)[0].requires_grad
    got, want = tc.linalg.ldl_factor_ex(a), torch.linalg.ldl_factor_ex(ta)
    assert [t.requires_grad for t in got] == [t.requires_grad for t in want] == [True, False, False]

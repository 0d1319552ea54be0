"""The linalg and product records (issue 12) keep torch's autograd behaviour: node classes, which tensors a node
saves (a product saves an operand only for the other's gradient), in-place writes checked at backward, the
nodes that raise, and the instruction names the profiler counts."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import tidal


def _pair(shape, requires_grad=True, dtype=np.float64, seed=0):
    a = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    return (tidal.tensor(a, requires_grad=requires_grad), torch.tensor(a, requires_grad=requires_grad))


PRODUCTS = {
    "mm": lambda L, a, b, c: L.mm(a, b),
    "matmul_2d": lambda L, a, b, c: a @ b,
    "matmul_mv": lambda L, a, b, c: a @ b[:, 0],
    "matmul_dot": lambda L, a, b, c: a[0] @ b[:, 0],
    "matmul_batched": lambda L, a, b, c: a.unsqueeze(0).expand(2, 3, 4) @ b,
    "bmm": lambda L, a, b, c: L.bmm(a.unsqueeze(0), b.unsqueeze(0)),
    "addmm": lambda L, a, b, c: L.addmm(c, a, b, beta=0.5, alpha=2.0),
    "addmv": lambda L, a, b, c: L.addmv(c[:, 0], a, b[:, 0]),
    "baddbmm": lambda L, a, b, c: L.baddbmm(c.unsqueeze(0), a.unsqueeze(0), b.unsqueeze(0)),
    "addbmm": lambda L, a, b, c: L.addbmm(c, a.unsqueeze(0), b.unsqueeze(0)),
    "linear": lambda L, a, b, c: L.nn.functional.linear(a, b.t(), c[0]),
    "cross": lambda L, a, b, c: L.linalg.cross(a[:, :3], a[:, 1:] * c[:, :1]),
    "trace": lambda L, a, b, c: L.trace(a) * b.sum(),
}


@pytest.mark.parametrize("name", sorted(PRODUCTS))
def test_product_nodes_values_and_gradients_as_torch(name):
    (a, ta), (b, tb), (c, tc) = _pair((3, 4)), _pair((4, 2), seed=1), _pair((3, 2), seed=2)
    y, ty = PRODUCTS[name](tidal, a, b, c), PRODUCTS[name](torch, ta, tb, tc)
    assert type(y.grad_fn).__name__ == type(ty.grad_fn).__name__
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-12, atol=1e-12)
    y.sum().backward()
    ty.sum().backward()
    for t, w in ((a, ta), (b, tb), (c, tc)):
        assert (t.grad is None) == (w.grad is None)
        if w.grad is not None:
            np.testing.assert_allclose(t.grad.numpy(), w.grad.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("lib", [tidal, torch], ids=["tidal", "torch"])
def test_a_product_saves_an_operand_only_for_the_others_gradient(lib):
    """A frozen weight changed in place between forward and backward is no error (nothing saved it); an
    operand the other's gradient reads is checked."""
    x, w = lib.ones(3, 4, dtype=lib.float64), lib.ones(4, 2, dtype=lib.float64, requires_grad=True)
    y = x @ w
    with lib.no_grad():
        w.add_(1)  # no gradient reads w (x needs none)
    y.sum().backward()
    assert w.grad.sum().item() == 24.0
    x, w = lib.ones(3, 4, dtype=lib.float64, requires_grad=True), lib.ones(4, 2, dtype=lib.float64)
    y = x @ w
    w.add_(1)  # x's gradient reads w
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


@pytest.mark.parametrize("lib", [tidal, torch], ids=["tidal", "torch"])
def test_in_place_addmm_with_its_own_target_as_operand_is_caught_at_backward(lib):
    w = lib.ones(4, 4, dtype=lib.float64, requires_grad=True)
    x = lib.ones(4, 4, dtype=lib.float64) * 2
    x.addmm_(x, w)  # x (saved for w's gradient) is the target: the saved copy is outdated
    assert type(x.grad_fn).__name__ == "AddmmBackward0"
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        x.sum().backward()


def test_out_argument_of_a_product_refuses_grad_naming_the_public_op():
    a, b = _pair((3, 4))[0], _pair((4, 2))[0]
    with pytest.raises(RuntimeError, match=r"^matmul\(\): functions with out=\.\.\. arguments"):
        tidal.matmul(a, b, out=tidal.empty(3, 2, dtype=tidal.float64))
    out = tidal.empty(0, dtype=tidal.float64)
    tidal.mm(a.detach(), b.detach(), out=out)
    np.testing.assert_allclose(out.numpy(), a.detach().numpy() @ b.detach().numpy())


def test_products_run_as_matmul_instructions():
    """Every product (whatever node it records) is one "matmul" instruction, as the profiler counts it."""
    a, b = tidal.randn(4, 4, requires_grad=True), tidal.randn(4, 4)
    with tidal.profiler.profile() as prof:
        (tidal.addmm(b, a, b) @ b).sum().backward()
        tidal.sync()
    assert prof.key_averages()["matmul"]["kernels"] == 4  # two forward; backward: the addmm's, then a's gradient


DECOMPOSITIONS = {
    "inv": lambda L, A: L.linalg.inv(A),
    "det": lambda L, A: L.linalg.det(A),
    "slogdet": lambda L, A: L.linalg.slogdet(A)[1],
    "solve": lambda L, A: L.linalg.solve(A, A[:, :2]),
    "cholesky": lambda L, A: L.linalg.cholesky(A @ A.mT + L.eye(3, dtype=A.dtype)),
    "cholesky_upper": lambda L, A: L.linalg.cholesky(A @ A.mT + L.eye(3, dtype=A.dtype), upper=True),
    "cholesky_ex_upper": lambda L, A: L.linalg.cholesky_ex(A @ A.mT + L.eye(3, dtype=A.dtype), upper=True)[0],
    "qr": lambda L, A: L.linalg.qr(A)[1],
    "svd": lambda L, A: L.linalg.svd(A)[1],
    "svdvals": lambda L, A: L.linalg.svdvals(A),
    "eigh": lambda L, A: L.linalg.eigh(A + A.mT)[0],
    "eigvalsh": lambda L, A: L.linalg.eigvalsh(A + A.mT),
    "pinv": lambda L, A: L.linalg.pinv(A),
    "matrix_exp": lambda L, A: L.linalg.matrix_exp(A),
    "lu_L": lambda L, A: L.linalg.lu(A)[1],
    "lu_U": lambda L, A: L.linalg.lu(A)[2],
    "solve_triangular": lambda L, A: L.linalg.solve_triangular(A.triu() + 3 * L.eye(3, dtype=A.dtype), A,
                                                                upper=True),
}


@pytest.mark.parametrize("name", sorted(DECOMPOSITIONS))
def test_decomposition_nodes_values_and_gradients_as_torch(name):
    A, tA = _pair((3, 3), seed=3)
    y, ty = DECOMPOSITIONS[name](tidal, A), DECOMPOSITIONS[name](torch, tA)
    assert type(y.grad_fn).__name__ == type(ty.grad_fn).__name__
    assert y.grad_fn is not None
    if name != "svdvals":  # (tidal's svdvals node puts S first, torch's keeps (U, S, Vh): a known difference)
        assert getattr(y, "_output_nr", 0) == ty.output_nr
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-10, atol=1e-10)
    y.sum().backward()
    ty.sum().backward()
    np.testing.assert_allclose(A.grad.numpy(), tA.grad.numpy(), rtol=1e-8, atol=1e-8)


def test_ops_without_a_derivative_raise_at_backward_as_torch():
    A = tidal.randn(4, 3, dtype=tidal.float64, requires_grad=True)
    a, tau = tidal.geqrf(A)
    assert type(a.grad_fn).__name__ == "GeqrfBackward0" and tau.grad_fn is a.grad_fn
    with pytest.raises(NotImplementedError, match="the derivative for 'geqrf' is not implemented"):
        a.sum().backward()
    S = tidal.randn(3, 3, dtype=tidal.float64)
    LD, pivots, info = tidal.linalg.ldl_factor_ex((S @ S.mT).requires_grad_())
    assert type(LD.grad_fn).__name__ == "NotImplemented" and pivots.grad_fn is None
    with pytest.raises(RuntimeError, match="derivative for aten::linalg_ldl_factor_ex is not implemented"):
        LD.sum().backward()

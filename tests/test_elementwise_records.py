"""The elementwise composites', complex numbers' and samplers' nodes and kernels as primitive records (issue 12):
what they must keep, against torch - node classes, gradients (at the seams where torch's own formula differs from
the composite's pieces), double gradients, and which records carry a kernel."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import tidal
import tidal.compat as ttorch
from tidal.distributions import _sampling
from tidal.ops.dispatch.primitive import PRIMITIVES

_POINTS = [-3.0, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0, 3.0, 6.0, 7.0]  # the bounds and seams of the formulas


def _x(lib, dtype="float64", values=_POINTS):
    return lib.tensor(values, dtype=getattr(lib, dtype), requires_grad=True)


def _node(t) -> str | None:
    return None if t.grad_fn is None else type(t.grad_fn).__name__


def _same(got, want, rtol=1e-6, atol=1e-7) -> None:
    np.testing.assert_allclose(got.detach().to(ttorch.float64).numpy(), want.detach().double().numpy(),
                               rtol=rtol, atol=atol)


ACTIVATIONS = {
    "hardtanh": lambda L, x: L.nn.functional.hardtanh(x, -1.0, 2.0),
    "relu6": lambda L, x: L.nn.functional.relu6(x),
    "hardtanh_inplace": lambda L, x: L.nn.functional.hardtanh(x * 1, -1.0, 1.0, inplace=True),
    "elu": lambda L, x: L.nn.functional.elu(x, 0.7),
    "selu": lambda L, x: L.nn.functional.selu(x),
    "celu": lambda L, x: L.nn.functional.celu(x, 1.5),
    "softplus": lambda L, x: L.nn.functional.softplus(x, 2.0, 4.0),
    "softshrink": lambda L, x: L.nn.functional.softshrink(x, 1.0),
    "hardsigmoid": lambda L, x: L.nn.functional.hardsigmoid(x),
    "hardswish": lambda L, x: L.nn.functional.hardswish(x),
}


@pytest.mark.parametrize("dtype", ["float64", "float32", "bfloat16"])
@pytest.mark.parametrize("name", list(ACTIVATIONS))
def test_activation_nodes_and_gradients_match_torch(name, dtype):
    fn = ACTIVATIONS[name]
    x, tx = _x(ttorch, dtype), _x(torch, dtype)
    y, ty = fn(ttorch, x), fn(torch, tx)
    assert _node(y) == _node(ty)
    tol = 1e-2 if dtype == "bfloat16" else 1e-6
    _same(y, ty, rtol=tol, atol=tol)
    g = ttorch.linspace(-1, 1, len(_POINTS), dtype=getattr(ttorch, dtype))
    (gx,), (tgx,) = ttorch.autograd.grad(y, x, g), torch.autograd.grad(ty, tx, torch.tensor(g.float().numpy())
                                                                        .to(getattr(torch, dtype)))
    assert gx.dtype is x.dtype
    _same(gx, tgx, rtol=tol, atol=tol)


@pytest.mark.parametrize("name", sorted(set(ACTIVATIONS) - {"hardsigmoid"}))  # (torch has no hardsigmoid double)
def test_activation_double_gradients_match_torch(name):
    """Through the records' backward formulas, at the bounds and seams too (softplus at beta * x == threshold)."""
    fn = ACTIVATIONS[name]
    grads = []
    for lib in (ttorch, torch):
        x = _x(lib)
        (g,) = lib.autograd.grad((fn(lib, x) * x).sum(), x, create_graph=True)
        (gg,) = lib.autograd.grad((g * g).sum(), x)
        grads.append((g, gg))
    _same(grads[0][0], grads[1][0])
    _same(grads[0][1], grads[1][1])


NODES = {
    "round_decimals": lambda L, x: L.round(x, decimals=1),
    "to": lambda L, x: x.to(L.float32),
    "clone": lambda L, x: x.clone(),
    "contiguous": lambda L, x: x.reshape(2, 5).t().contiguous(),
    "copy_": lambda L, x: (x * 1).copy_(x.flip(0) * 2),
    "fill_": lambda L, x: (x * 1).fill_(2.0),
    "zero_": lambda L, x: (x * 1).zero_(),
    "frexp": lambda L, x: L.frexp(x).mantissa,
    "igamma": lambda L, x: L.igamma(L.full((10,), 1.5, dtype=L.float64), x.abs() + 0.1),
    "igammac": lambda L, x: L.igammac(L.full((10,), 1.5, dtype=L.float64), x.abs() + 0.1),
    "zeta": lambda L, x: L.special.zeta(L.full((10,), 2.0, dtype=L.float64), x.abs() + 1),
    "erfcx": lambda L, x: L.special.erfcx(x),
    "log_ndtr": lambda L, x: L.special.log_ndtr(x),
    "ndtri": lambda L, x: L.special.ndtri(x.sigmoid()),
    "entr": lambda L, x: L.special.entr(x.abs()),
    "xlog1py": lambda L, x: L.special.xlog1py(x, x.abs()),
    "i0e": lambda L, x: L.special.i0e(x),
    "i1e": lambda L, x: L.special.i1e(x),
    "angle": lambda L, x: L.angle(L.complex(x, x.flip(0))),
    "complex": lambda L, x: L.view_as_real(L.complex(x, x * 3)),
    "view_as_complex": lambda L, x: L.view_as_real(L.view_as_complex(x.reshape(5, 2)) * (1 + 2j)),
}


@pytest.mark.parametrize("name", list(NODES))
def test_composite_nodes_and_gradients_match_torch(name):
    fn = NODES[name]
    x, tx = _x(ttorch), _x(torch)
    y, ty = fn(ttorch, x), fn(torch, tx)
    if name not in ("complex", "view_as_complex"):  # (their node is under view_as_real's)
        assert _node(y) == _node(ty)
    else:
        assert type(y.grad_fn.next_functions[0][0]).__name__ == type(ty.grad_fn.next_functions[0][0]).__name__
    _same(y, ty, rtol=1e-6, atol=1e-9)
    (gx,), (tgx,) = ttorch.autograd.grad(y.sum(), x), torch.autograd.grad(ty.sum(), tx)
    _same(gx, tgx, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("lib_fn,message", [
    (lambda L, a: L.igamma(a, L.ones(2, dtype=L.float64)), "the derivative for 'igamma: input' is not implemented"),
    (lambda L, a: L.special.zeta(a + 1, L.ones(2, dtype=L.float64)), "the derivative for 'zeta' is not implemented"),
])
def test_special_gradients_torch_does_not_implement_are_refused_at_backward(lib_fn, message):
    for lib in (torch, ttorch):
        a = lib.tensor([1.0, 2.0], dtype=lib.float64, requires_grad=True)
        y = lib_fn(lib, a)
        with pytest.raises((NotImplementedError, RuntimeError), match=message):
            y.sum().backward()


SAMPLES = {
    "normal_mean": lambda L, x: L.normal(x, 1.0),
    "normal_std": lambda L, x: L.normal(0.0, x.abs() + 0.1),
    "normal_both": lambda L, x: L.normal(x, x.abs() + 0.1),
    "bernoulli": lambda L, x: L.bernoulli(x.sigmoid()),
    "poisson": lambda L, x: L.poisson(x.abs()),
    "uniform_": lambda L, x: (x * 1).uniform_(),
    "normal_": lambda L, x: (x * 1).normal_(),
    "random_": lambda L, x: (x * 1).random_(),
    "random_to": lambda L, x: (x * 1).random_(5),
    "random_from_to": lambda L, x: (x * 1).random_(1, 5),
    "bernoulli_p": lambda L, x: (x * 1).bernoulli_(0.5),
    "bernoulli_tensor": lambda L, x: (x * 1).bernoulli_(x.sigmoid()),
    "exponential_": lambda L, x: (x * 1).exponential_(),
    "geometric_": lambda L, x: (x * 1).geometric_(0.5),
    "log_normal_": lambda L, x: (x * 1).log_normal_(),
    "cauchy_": lambda L, x: (x * 1).cauchy_(),
}


@pytest.mark.parametrize("name", list(SAMPLES))
def test_sample_nodes_match_torch_and_give_zero_gradients(name):
    fn = SAMPLES[name]
    x, tx = _x(ttorch), _x(torch)
    y, ty = fn(ttorch, x), fn(torch, tx)
    assert _node(y) == _node(ty)
    (gx,), (tgx,) = ttorch.autograd.grad(y.sum(), x), torch.autograd.grad(ty.sum(), tx)
    _same(gx, tgx)
    assert not gx.numpy().any()


def test_standard_gamma_node_and_reparameterized_gradient_match_torch():
    alpha, talpha = _x(ttorch, values=[0.5, 1.0, 2.5, 4.0]), _x(torch, values=[0.5, 1.0, 2.5, 4.0])
    ttorch.manual_seed(5)
    torch.manual_seed(5)
    x, tx = _sampling.standard_gamma(alpha), torch._standard_gamma(talpha)
    assert _node(x) == _node(tx) == "StandardGammaBackward0"
    _same(x, tx, rtol=1e-6)  # (tidal draws torch's CPU stream)
    (g,), (tg,) = ttorch.autograd.grad(x.sum(), alpha), torch.autograd.grad(tx.sum(), talpha)
    _same(g, tg, rtol=1e-3)  # (tidal sums the exact series where torch fits an approximation)
    with ttorch.no_grad():
        assert _sampling.standard_gamma(alpha).grad_fn is None


@pytest.mark.parametrize("name,kernel", [
    ("hardtanh", False), ("elu", False), ("selu", False), ("celu", False), ("softplus", False),
    ("softshrink", False), ("hardsigmoid", False), ("hardswish", False), ("round_decimals", False),
    ("copy_", False), ("fill", False), ("angle", False), ("real", False), ("imag", False), ("view_as_real", False),
    ("view_as_complex", False), ("special_erfcx", False), ("sampled", False), ("sampled_inplace", False),
    ("standard_gamma", False), ("gcd", True), ("lcm", True), ("frexp", True), ("complex", True),
    ("special_zeta", True), ("special_igamma", True), ("special_bessel_j0", True), ("uniform_", True),
    ("multinomial", True), ("_standard_gamma", True), ("binomial", True), ("_standard_gamma_grad", True),
])
def test_records_declare_their_kernels_and_nodes(name, kernel):
    record = PRIMITIVES[name]
    assert callable(record.kernels()["cpu"]) is kernel and record.kernels()["cuda"] is None
    assert (record.shapes is not None) is kernel


def test_number_kernels_match_torch():
    a, b = [12, -18, 0, 7, 9], [8, 27, 0, -3, 6]
    for op in ("gcd", "lcm"):
        got = getattr(ttorch, op)(ttorch.tensor(a, dtype=ttorch.int16), ttorch.tensor(b))
        want = getattr(torch, op)(torch.tensor(a, dtype=torch.int16), torch.tensor(b))
        assert got.dtype is ttorch.int64 and got.tolist() == want.tolist()
    m, e = ttorch.frexp(ttorch.tensor(_POINTS))
    tm, te = torch.frexp(torch.tensor(_POINTS))
    assert m.tolist() == tm.tolist() and e.tolist() == te.tolist() and e.dtype is ttorch.int32
    with pytest.raises(RuntimeError, match=r"torch.frexp\(\) only supports floating-point dtypes"):
        ttorch.frexp(ttorch.arange(3))

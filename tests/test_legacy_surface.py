"""Old and rarely-spelled torch names, against torch: the linear-algebra functions removed in 1.9 and
Tensor.reinforce (torch's errors), Tensor.volatile (torch's warnings), float_power_, Tensor.prelu,
as_subclass, torch.binomial."""
import warnings

import numpy as np
import pytest
import torch

import tidal.compat as tc
from complex_helpers import raises_like

A = np.array([[2.0, 1.0], [1.0, 3.0]])


@pytest.mark.parametrize("call", [
    lambda L, a: L.eig(a), lambda L, a: a.eig(), lambda L, a: L.eig(a, eigenvectors=True),
    lambda L, a: L.lstsq(a, a), lambda L, a: a.lstsq(a), lambda L, a: L.solve(a, a), lambda L, a: a.solve(a),
    lambda L, a: L.symeig(a), lambda L, a: a.symeig(True), lambda L, a: L.matrix_rank(a),
    lambda L, a: a.reinforce(1.0),
], ids=["eig", "Tensor.eig", "eig_vectors", "lstsq", "Tensor.lstsq", "solve", "Tensor.solve", "symeig",
        "Tensor.symeig", "matrix_rank", "reinforce"])
def test_removed_functions_raise_as_torch(call):
    raises_like(lambda: call(tc, tc.tensor(A)), lambda: call(torch, torch.tensor(A)))


def test_volatile():
    for lib in (tc, torch):
        x = lib.ones(2)
        with pytest.warns(UserWarning, match=r"volatile was removed \(Variable.volatile is always False\)"):
            assert x.volatile is False
        with pytest.warns(UserWarning, match="volatile was removed and now has no effect"):
            x.volatile = True
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert x.volatile is False


@pytest.mark.parametrize("base,exponent", [
    ("float64", "tensor"), ("float64", 2.5), ("complex128", 2), ("complex128", "tensor"), ("float32", 2),
    ("int64", 2), ("float64", 2j), ("float64", "complex_tensor"),
])
def test_float_power_(base, exponent):
    rng = np.random.default_rng(7)
    data = np.abs(rng.standard_normal(4)) + 0.5
    exp_data = rng.standard_normal(4)

    def run(lib):
        x = lib.tensor(data).to(getattr(lib, base))
        e = {"tensor": lib.tensor(exp_data), "complex_tensor": lib.tensor(exp_data + 1j)}.get(exponent, exponent)
        return x.float_power_(e) if not isinstance(e, str) else None

    try:
        want = run(torch)
    except RuntimeError:
        raises_like(lambda: run(tc), lambda: run(torch))
        return
    got = run(tc)
    assert str(got.dtype)[6:] == str(want.dtype)[6:]
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)


def test_float_power_grad():
    data = np.array([0.5, 1.5, 2.0])
    a, b = tc.tensor(data, requires_grad=True), torch.tensor(data, requires_grad=True)
    ya, yb = a.clone(), b.clone()
    ya.float_power_(3)
    yb.float_power_(3)
    assert type(ya.grad_fn).__name__ == type(yb.grad_fn).__name__
    ya.sum().backward()
    yb.sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy())


def test_prelu_method():
    data = np.array([[-1.0, 2.0, -3.0], [0.5, -0.25, 4.0]])
    for weight in ([0.25], [0.1, 0.2, 0.3]):
        x, w = tc.tensor(data, requires_grad=True), torch.tensor(data, requires_grad=True)
        wa = tc.tensor(weight, dtype=tc.float64, requires_grad=True)
        wb = torch.tensor(weight, dtype=torch.float64, requires_grad=True)
        got, want = x.prelu(wa), w.prelu(wb)
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy())
        got.sum().backward()
        want.sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), w.grad.numpy())
        np.testing.assert_allclose(wa.grad.numpy(), wb.grad.numpy())


def test_as_subclass():
    class Ours(tc.Tensor):
        pass

    class Theirs(torch.Tensor):
        pass

    x, w = tc.tensor(A, requires_grad=True), torch.tensor(A, requires_grad=True)
    a, b = x.as_subclass(Ours), w.as_subclass(Theirs)
    assert type(a) is Ours and type(b) is Theirs
    assert a.data_ptr() == x.data_ptr() and b.data_ptr() == w.data_ptr()
    assert type(a.grad_fn).__name__ == type(b.grad_fn).__name__ and a.requires_grad and b.requires_grad
    (a * a).sum().backward()
    (b * b).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), w.grad.numpy())
    plain = tc.ones(2).as_subclass(Ours)
    plain[0] = 5.0
    assert not plain.requires_grad and float(plain[0]) == 5.0
    raises_like(lambda: tc.ones(2).as_subclass(int), lambda: torch.ones(2).as_subclass(int))
    raises_like(lambda: tc.ones(2).as_subclass(3), lambda: torch.ones(2).as_subclass(3))


def test_binomial():
    count = np.array([[10.0], [40.0]])
    prob = np.array([0.1, 0.5, 0.9])
    got = tc.binomial(tc.tensor(count).expand(2, 3).contiguous().expand(2000, 2, 3).contiguous(),
                      tc.tensor(prob).expand(2000, 2, 3).contiguous())
    want = torch.binomial(torch.tensor(count).expand(2, 3).contiguous(), torch.tensor(prob).expand(2, 3).contiguous())
    assert str(got.dtype)[6:] == str(want.dtype)[6:] and tuple(got.shape[1:]) == tuple(want.shape)
    draws = got.numpy()
    assert (draws == np.round(draws)).all() and (draws >= 0).all() and (draws <= count).all()
    np.testing.assert_allclose(draws.mean(0), count * prob, rtol=0.05, atol=0.1)  # 2000 draws: a few % error
    np.testing.assert_allclose(draws.var(0), count * prob * (1 - prob), rtol=0.2)
    broadcast = tc.binomial(tc.tensor(count, dtype=tc.float32), tc.tensor(prob, dtype=tc.float32))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch warns that it resized its output to the broadcast shape
        theirs = torch.binomial(torch.tensor(count, dtype=torch.float32), torch.tensor(prob, dtype=torch.float32))
    assert tuple(broadcast.shape) == tuple(theirs.shape)
    g1, g2 = tc.Generator().manual_seed(3), tc.Generator().manual_seed(3)
    c, p = tc.full((50,), 7.0), tc.full((50,), 0.3)
    np.testing.assert_array_equal(tc.binomial(c, p, generator=g1).numpy(), tc.binomial(c, p, g2).numpy())
    for cnt, pr in ((np.array([10, 5]), np.array([0.5, 0.2])), (np.ones(2, np.float32), np.ones(2) * 0.5),
                    (np.ones(2, np.float32), np.ones(3, np.float32))):
        raises_like(lambda: tc.binomial(tc.tensor(cnt), tc.tensor(pr)),
                    lambda: torch.binomial(torch.tensor(cnt), torch.tensor(pr)))


def test_functional_rrelu_():
    data = np.array([-2.0, -0.5, 0.0, 1.5])
    for lib in (tc, torch):
        x = lib.tensor(data)
        assert lib.nn.functional.rrelu_(x) is x  # eval: the mean slope
    got, want = tc.tensor(data), torch.tensor(data)
    tc.nn.functional.rrelu_(got, 0.1, 0.3)
    torch.nn.functional.rrelu_(want, 0.1, 0.3)
    np.testing.assert_allclose(got.numpy(), want.numpy())
    train = tc.tensor(data)
    tc.nn.functional.rrelu_(train, 0.1, 0.3, training=True)
    slopes = train.numpy()[:2] / data[:2]
    assert ((slopes >= 0.1) & (slopes <= 0.3)).all() and (train.numpy()[2:] == data[2:]).all()

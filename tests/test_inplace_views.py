"""In-place writes through views, and views taken before an in-place write, against torch.

Each case builds the same program in tidal and torch from the same leaves (views of views, writes by
setitem, elementwise in-place ops, fills, copies, scatter/index writers), back-propagates the same
random gradient and compares values, every leaf's .grad and the grad_fn names torch gives.
"""
from __future__ import annotations

import numpy as np
import pytest

import tidal

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(7)
X24 = RNG.standard_normal((2, 4))
W24 = RNG.standard_normal((2, 4))


def run(fn, *arrays):
    """fn(lib, *leaves) -> tensor in tidal and torch; compare values, grads of all leaves, grad_fn names."""
    results = []
    for lib in (tidal, torch):
        leaves = [lib.tensor(a, requires_grad=True) for a in arrays]
        out = fn(lib, *leaves)
        g = np.random.default_rng(3).standard_normal(tuple(out.shape))
        name = out.grad_fn.name() if out.grad_fn is not None else None
        value = out.detach().numpy().copy()
        out.backward(lib.tensor(g))
        results.append((value, name, [None if t.grad is None else t.grad.numpy() for t in leaves]))
    (v_t, n_t, g_t), (v_q, n_q, g_q) = results
    np.testing.assert_allclose(v_t, v_q, rtol=1e-12, atol=1e-12)
    assert n_t == n_q
    for a, b in zip(g_t, g_q):
        assert (a is None) == (b is None)
        if b is not None:
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def _y(lib, x):
    return x * 2


# -- writes through views (CopySlices) ------------------------------------------------------------
def select_select(lib, x):
    y = _y(lib, x)
    y[0][1] = 5.0
    return y * y


def held_view(lib, x):
    y = _y(lib, x)
    t = y[0]
    t[1] = 5
    return y * y


def slice_then_select(lib, x, w):
    y = _y(lib, x)
    y[1:][0] = w[0]
    return y * y


def reshaped_view(lib, x):
    y = _y(lib, x)
    y.view(2, 2, 2)[1][0] = 3.0
    return y * y


def three_deep(lib, x, w):
    y = _y(lib, x).reshape(8)
    y.view(2, 4)[1][1:][::2].mul_(w[0, :2])
    return y * y


def transposed_view(lib, x, w):
    y = _y(lib, x)
    y.t()[1].add_(w[:, 0])
    return y * y


def non_contiguous_base(lib, x):
    y = x.t() * 2  # a base in a transposed layout
    y[1:3, 0] = 7.0
    return y.exp()


def elementwise_through_view(lib, x, w):
    y = _y(lib, x)
    y[0].mul_(w[0])
    return y.sin()


def copy_through_view(lib, x, w):
    y = _y(lib, x)
    y[:, 1:3].copy_(w[:, :2] * 3)
    return y * y


def fill_through_view(lib, x):
    y = _y(lib, x)
    y[1].fill_(2.5)
    y[0, 2:].zero_()
    return y * y


def index_put_through_view(lib, x, w):
    y = _y(lib, x)
    y[1][lib.tensor([0, 2])] = w[0, :2]
    return y * y


def scatter_through_view(lib, x, w):
    y = _y(lib, x)
    y[0].scatter_(0, lib.tensor([3, 1]), w[1, :2])
    y[1].index_add_(0, lib.tensor([0, 0]), w[0, :2])
    return y * y


def masked_fill_through_view(lib, x):
    y = _y(lib, x)
    y[:, 1].masked_fill_(lib.tensor([True, False]), 4.0)
    return y * y


def write_into_non_graph_buffer(lib, x):
    buf = lib.zeros(3, 4, dtype=lib.float64)
    buf[1][1:3] = x[0, :2] * 3
    return buf * buf


@pytest.mark.parametrize("case,arrays", [
    (select_select, (X24,)), (held_view, (X24,)), (slice_then_select, (X24, W24)), (reshaped_view, (X24,)),
    (three_deep, (X24, W24)), (transposed_view, (X24, W24)), (non_contiguous_base, (X24,)),
    (elementwise_through_view, (X24, W24)), (copy_through_view, (X24, W24)), (fill_through_view, (X24,)),
    (index_put_through_view, (X24, W24)), (scatter_through_view, (X24, W24)),
    (masked_fill_through_view, (X24,)), (write_into_non_graph_buffer, (X24,)),
], ids=lambda c: getattr(c, "__name__", ""))
def test_write_through_view_matches_torch(case, arrays):
    run(case, *arrays)


def test_issue_example_gradient():
    x = tidal.ones(2, 4, requires_grad=True)
    y = x * 2
    y[0][1] = 5.0
    (y * y).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy()[0], [8, 0, 8, 8])


def test_grad_fn_names_after_a_write_through_a_view():
    for lib in (tidal, torch):
        y = lib.tensor(X24, requires_grad=True) * 2
        t = y[0]
        t[1] = 5.0
        assert type(y.grad_fn).__name__ == "CopySlices"
        assert y.grad_fn.name() == "torch::autograd::CopySlices"
        assert t.grad_fn.name() == "AsStridedBackward0"
        assert y.grad_fn.next_functions[0][0].name() == "MulBackward0"


# -- views taken before an in-place write see the new history -------------------------------------
def view_before_base_mul(lib, x):
    y = _y(lib, x)
    z = y[1:]
    y.mul_(3)
    return z * 1


def view_of_view_before_base_mul(lib, x, w):
    y = _y(lib, x)
    w2 = y[0][1:]
    y.mul_(w)
    return w2 * w2


def view_before_sibling_write(lib, x):
    y = _y(lib, x)
    z = y[0][1:]
    y[0].mul_(3)
    return (z * z).sum() + y.sum()


def view_before_setitem_on_base(lib, x):
    y = _y(lib, x)
    z = y[:, 1]
    y[0, 1] = 9.0
    return z.exp()


def use_before_and_after(lib, x):
    y = _y(lib, x)
    z = y[1]
    before = z * 5  # reads the old values: its gradient goes to the old history
    y.add_(1)
    y[1, 0] = 0.0
    return before + z * z


def view_of_buffer_before_writes(lib, x):
    buf = lib.zeros(3, 4, dtype=lib.float64)  # no history yet when the view is taken
    row = buf[1]
    buf[1] = x[0] * 3
    buf[2] = x[1]
    return row * row


@pytest.mark.parametrize("case,arrays", [
    (view_of_buffer_before_writes, (X24,)), (view_before_base_mul, (X24,)), (view_of_view_before_base_mul, (X24, W24)), (view_before_sibling_write, (X24,)),
    (view_before_setitem_on_base, (X24,)), (use_before_and_after, (X24,)),
], ids=lambda c: getattr(c, "__name__", ""))
def test_view_taken_before_an_inplace_write_matches_torch(case, arrays):
    run(case, *arrays)


def test_issue_example_view_before_mul_():
    x = tidal.ones(3, requires_grad=True)
    y = x * 2
    z = y[1:]
    y.mul_(3)
    assert z.grad_fn.name() == "AsStridedBackward0"
    z.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0, 6, 6])


# -- torch's refusals ---------------------------------------------------------------------------------
@pytest.mark.parametrize("write", [
    lambda v: v.__setitem__(0, 3.0), lambda v: v.mul_(2), lambda v: v.fill_(1.0), lambda v: v.zero_(),
    lambda v: v.copy_(v.detach() * 2), lambda v: v.index_fill_(0, tidal.tensor([1]), 0.0),
    lambda v: v.scatter_(0, tidal.tensor([1]), 0.0),
])
def test_write_into_a_view_of_a_leaf_is_refused(write):
    x = tidal.ones(2, 4, requires_grad=True)
    v = x[0]
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad is being used in an "
                                           "in-place operation."):
        write(v)
    np.testing.assert_array_equal(x.detach().numpy(), 1.0)  # nothing was written
    with tidal.no_grad():
        write(x[0])  # allowed without grad, as in torch


@pytest.mark.parametrize("split", ["unbind", "split"])
def test_write_into_one_of_several_views_is_refused(split):
    messages = []
    for lib in (tidal, torch):
        y = lib.tensor(X24, requires_grad=True) * 2
        a = y.unbind(0)[0] if split == "unbind" else y.split(1)[0]
        with pytest.raises(RuntimeError) as info:
            a.mul_(2)
        messages.append(str(info.value))
    assert messages[0] == messages[1]


def test_inplace_on_a_base_whose_view_is_alive_keeps_its_saved_input():
    run(lambda lib, x, w: _keep_view_and_mul(lib, x, w), X24, W24)


def _keep_view_and_mul(lib, x, w):
    y = _y(lib, x)
    z = y[0]
    y.mul_(w)  # mul saved y for w's gradient: the values before the write
    return y + z


def test_double_backward_through_copy_slices():
    x0 = RNG.standard_normal((2, 4))
    results = []
    for lib in (tidal, torch):
        x = lib.tensor(x0, requires_grad=True)
        y = x * x
        y[0][1:3] = x[1, :2] * 3
        y[1].mul_(x[0])
        (g,) = lib.autograd.grad((y * y).sum(), x, create_graph=True)
        (gg,) = lib.autograd.grad((g * g).sum(), x)
        results.append((g.detach().numpy(), gg.numpy()))
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_writes_without_grad_only_change_values():
    x = tidal.tensor(X24, requires_grad=True)
    y = x * 2
    z = y[0]
    with tidal.no_grad():
        z[1] = 0.0
        y[1].mul_(0.0)
    assert y.grad_fn.name() == "MulBackward0"  # no new history, as in torch
    expected = 2 * X24
    expected[0, 1] = 0.0
    expected[1] = 0.0
    np.testing.assert_allclose(y.detach().numpy(), expected)


# -- custom Functions that modify an input in place (ctx.mark_dirty) ------------------------------------
def _doubler(lib):
    class Doubler(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.mul_(2)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 2
    return Doubler


def dirty_view(lib, x):
    y = _y(lib, x)
    z = y[1]
    _doubler(lib).apply(y[0])
    return y * y + z.sum()


def dirty_base_with_view(lib, x):
    y = _y(lib, x)
    w = y[1:]
    _doubler(lib).apply(y)
    return w * w


@pytest.mark.parametrize("case", [dirty_view, dirty_base_with_view], ids=lambda c: c.__name__)
def test_mark_dirty_rebases_like_torch(case):
    run(case, X24)


def test_mark_dirty_errors():
    class Unreturned(tidal.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.mark_dirty(x)
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return g
    x = tidal.ones(2, 4, requires_grad=True)
    with pytest.raises(RuntimeError, match="Some elements marked as dirty during the forward method were not "):
        Unreturned.apply(x * 1)
    with pytest.raises(RuntimeError, match="^a leaf Variable that requires grad has been used in an in-place"):
        _doubler(tidal).apply(x)
    with pytest.raises(RuntimeError, match="^a view of a leaf Variable that requires grad is being used"):
        _doubler(tidal).apply(x[0])


def test_square_on_bool_in_place_is_refused():
    for lib in (tidal, torch):
        with pytest.raises(RuntimeError, match="result type Long can't be cast to the desired output type Bool"):
            lib.tensor([True, False]).square_()

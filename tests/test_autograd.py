"""The autograd engine: accumulation, graphs kept or freed, double backward, hooks, modes, Function."""
import numpy as np
import pytest
import torch

import tidal


def pair(values, dtype=np.float64):
    """The same leaf in tidal and torch."""
    arr = np.asarray(values, dtype=dtype)
    return tidal.tensor(arr, requires_grad=True), torch.tensor(arr, requires_grad=True)


def f(x, lib):
    return (x * x + lib.exp(x)) * 2 - lib.sin(x) / 3 + lib.tanh(x * 0.5) * lib.sigmoid(x)


def test_gradients_match_torch():
    x, tx = pair([0.5, -1.0, 2.0, 3.0])
    g = np.array([1.0, 2.0, -1.0, 0.5])
    f(x, tidal).backward(tidal.tensor(g))
    f(tx, torch).backward(torch.tensor(g))
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-12)


def test_finite_differences_float64():
    rng = np.random.default_rng(0)
    base = rng.standard_normal(5)
    x = tidal.tensor(base, requires_grad=True)
    f(x, tidal).backward(tidal.ones(5, dtype=tidal.float64))
    eps = 1e-6
    num = np.array([(f(tidal.tensor(base + eps * e), tidal).numpy() - f(tidal.tensor(base - eps * e), tidal).numpy())
                    @ np.ones(5) / (2 * eps) for e in np.eye(5)])
    np.testing.assert_allclose(x.grad.numpy(), num, rtol=1e-6, atol=1e-8)


def test_gradients_accumulate_and_fan_out():
    x, tx = pair([1.0, 2.0])
    for _ in range(2):
        y = x * x + x * 3
        y.backward(tidal.ones(2, dtype=tidal.float64))
        ty = tx * tx + tx * 3
        ty.backward(torch.ones(2, dtype=torch.float64))
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy())


def test_broadcast_gradients_are_summed_to_input_shape():
    a, ta = pair(np.arange(6.0).reshape(2, 3))
    b, tb = pair([1.0, 2.0, 3.0])
    (a * b).backward(tidal.ones(2, 3, dtype=tidal.float64))
    (ta * tb).backward(torch.ones(2, 3, dtype=torch.float64))
    np.testing.assert_allclose(b.grad.numpy(), tb.grad.numpy())
    assert b.grad.shape == (3,)


def test_backward_twice_needs_retain_graph():
    x, _ = pair([1.0, 2.0])
    y = tidal.exp(x)
    y.backward(tidal.ones(2, dtype=tidal.float64), retain_graph=True)
    y.backward(tidal.ones(2, dtype=tidal.float64))
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.exp([1.0, 2.0]))
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        y.backward(tidal.ones(2, dtype=tidal.float64))


def test_non_scalar_backward_needs_gradient():
    x, _ = pair([1.0, 2.0])
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar outputs"):
        (x * 2).backward()


def test_backward_on_tensor_without_grad():
    with pytest.raises(RuntimeError, match="element 0 of tensors does not require grad and does not have a grad_fn"):
        tidal.tensor([1.0]).backward()


def test_double_backward():
    x, tx = pair([0.3, -0.7, 1.1])
    (g,) = tidal.autograd.grad(tidal.sin(x) * x, x, tidal.ones(3, dtype=tidal.float64), create_graph=True)
    (g2,) = tidal.autograd.grad(g, x, tidal.ones(3, dtype=tidal.float64))
    (tg,) = torch.autograd.grad(torch.sin(tx) * tx, tx, torch.ones(3, dtype=torch.float64), create_graph=True)
    (tg2,) = torch.autograd.grad(tg, tx, torch.ones(3, dtype=torch.float64))
    np.testing.assert_allclose(g.detach().numpy(), tg.detach().numpy())
    np.testing.assert_allclose(g2.numpy(), tg2.numpy())
    assert x.grad is None


def test_grad_unused_input():
    x, _ = pair([1.0])
    z, _ = pair([2.0])
    with pytest.raises(RuntimeError, match="appears to not have been used in the graph"):
        tidal.autograd.grad(x * 2, (x, z), tidal.ones(1, dtype=tidal.float64))
    gx, gz = tidal.autograd.grad(x * 2, (x, z), tidal.ones(1, dtype=tidal.float64), allow_unused=True)
    assert gz is None and gx.item() == 2.0


def test_leaf_and_non_leaf_semantics():
    x, _ = pair([1.0, 2.0])
    y = x * 2
    assert x.is_leaf and not y.is_leaf
    assert y.requires_grad and y.grad_fn.name() == "MulBackward0"
    y.retain_grad()
    (y * y).backward(tidal.ones(2, dtype=tidal.float64))
    np.testing.assert_allclose(y.grad.numpy(), [4.0, 8.0])
    np.testing.assert_allclose(x.grad.numpy(), [8.0, 16.0])
    d = y.detach()
    assert not d.requires_grad and d.grad_fn is None


def test_next_functions_expose_the_graph():
    x, _ = pair([1.0])
    y = x * 2 + 1
    add = y.grad_fn
    assert add.name() == "AddBackward0"
    mul = add.next_functions[0][0]
    assert mul.name() == "MulBackward0"
    assert type(mul.next_functions[0][0]).__name__ == "AccumulateGrad"


def test_no_grad_and_friends():
    x, _ = pair([1.0])
    with tidal.no_grad():
        assert not (x * 2).requires_grad
        with tidal.enable_grad():
            assert (x * 2).requires_grad
    assert (x * 2).requires_grad

    @tidal.no_grad()
    def g(t):
        return t * 2
    assert not g(x).requires_grad
    with tidal.set_grad_enabled(False):
        assert not tidal.is_grad_enabled()
    assert tidal.is_grad_enabled()
    with tidal.inference_mode():
        assert not (x * 2).requires_grad


def test_requires_grad_propagation_and_int_tensors():
    x, _ = pair([1.0])
    i = tidal.tensor([1, 2])
    assert not (i * 2).requires_grad
    assert (x * i).requires_grad
    with pytest.raises(RuntimeError, match="only Tensors of floating point dtype can require gradients"):
        i.requires_grad_()


def test_hooks_change_gradients():
    x, tx = pair([1.0, 2.0])
    seen = []
    y = x * 3
    y.register_hook(lambda g: seen.append(g.numpy().copy()) or g * 2)
    handle = x.register_hook(lambda g: g + 1)
    (y * y).backward(tidal.ones(2, dtype=tidal.float64))
    ty = tx * 3
    ty.register_hook(lambda g: g * 2)
    tx.register_hook(lambda g: g + 1)
    (ty * ty).backward(torch.ones(2, dtype=torch.float64))
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy())
    np.testing.assert_allclose(seen[0], [6.0, 12.0])
    handle.remove()


def test_inplace_on_saved_tensor_is_detected():
    x, _ = pair([1.0, 2.0])
    y = x * 1
    z = tidal.exp(y)  # saves its output
    z.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.backward(tidal.ones(2, dtype=tidal.float64))


def test_inplace_on_leaf_requiring_grad_is_refused():
    x, _ = pair([1.0])
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place operation"):
        x.add_(1)
    with tidal.no_grad():
        x.add_(1)
    assert x.item() == 2.0


def test_inplace_on_non_leaf_rebases_history():
    x, tx = pair([1.0, 2.0])
    y = x * 2
    y.mul_(3)
    y.add_(x * x)
    assert y.grad_fn.name() == "AddBackward0"
    y.backward(tidal.ones(2, dtype=tidal.float64))
    ty = tx * 2
    ty.mul_(3)
    ty.add_(tx * tx)
    ty.backward(torch.ones(2, dtype=torch.float64))
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy())


def test_inplace_that_overwrites_its_own_saved_input_is_caught():
    x, _ = pair([1.0, 2.0])
    y = x * 2
    y.mul_(y)  # mul saved y, then overwrote it: as in torch, backward refuses
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward(tidal.ones(2, dtype=tidal.float64))


def test_copy_into_tensor_flows_gradient_to_source():
    x, tx = pair([1.0, 2.0])
    buf = tidal.zeros(2, dtype=tidal.float64)
    buf.copy_(x * 3)
    (buf * buf).backward(tidal.ones(2, dtype=tidal.float64))
    np.testing.assert_allclose(x.grad.numpy(), 18 * np.array([1.0, 2.0]))


class Cube(tidal.autograd.Function):
    @staticmethod
    def forward(ctx, x, scale):
        ctx.save_for_backward(x)
        ctx.scale = scale
        return x * x * x * scale

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 3 * x * x * ctx.scale, None


def test_custom_function():
    x, _ = pair([1.0, -2.0])
    y = Cube.apply(x, 2.0)
    assert type(y.grad_fn).__name__ == "CubeBackward"
    y.backward(tidal.ones(2, dtype=tidal.float64))
    np.testing.assert_allclose(x.grad.numpy(), [6.0, 24.0])
    assert not Cube.apply(tidal.tensor([1.0]), 1.0).requires_grad


def test_grad_dtype_follows_input():
    a = tidal.tensor([1.0, 2.0], dtype=tidal.float32, requires_grad=True)
    b = tidal.tensor([3.0, 4.0], dtype=tidal.float64, requires_grad=True)
    (a * b).backward(tidal.ones(2, dtype=tidal.float64))
    assert a.grad.dtype == tidal.float32 and b.grad.dtype == tidal.float64
    np.testing.assert_allclose(a.grad.numpy(), [3.0, 4.0])


def test_backward_inputs_argument():
    x, _ = pair([1.0])
    z, _ = pair([2.0])
    (x * z).backward(tidal.ones(1, dtype=tidal.float64), inputs=[x])
    assert x.grad.item() == 2.0 and z.grad is None


def _shares_memory(a, b) -> bool:
    return a.untyped_storage_id() == b.untyped_storage_id()


def test_leaf_keeps_an_unshared_gradient_and_copies_a_shared_one():
    a = tidal.tensor([1.0, 2.0], requires_grad=True)
    b = tidal.tensor([3.0, 4.0], requires_grad=True)
    (a + b).backward(tidal.ones(2))  # add hands the same gradient to both leaves
    assert not _shares_memory(a.grad, b.grad)
    a.grad.add_(1.0)
    np.testing.assert_allclose(b.grad.numpy(), [1.0, 1.0])
    upstream = tidal.ones(2)
    a.grad = None
    a.backward(upstream)  # the caller still holds its gradient: the leaf gets a copy
    assert not _shares_memory(a.grad, upstream)
    a.grad.zero_()
    np.testing.assert_allclose(upstream.numpy(), [1.0, 1.0])


def test_linear_weight_gradient_has_the_weight_layout():
    x = tidal.tensor(np.random.default_rng(0).standard_normal((5, 3)).astype(np.float32))
    w = tidal.tensor(np.random.default_rng(1).standard_normal((4, 3)).astype(np.float32), requires_grad=True)
    tidal.nn.functional.linear(x, w).sum().backward()
    assert w.grad.is_contiguous() and w.grad._base is None
    np.testing.assert_allclose(w.grad.numpy(), np.tile(x.numpy().sum(0), (4, 1)), rtol=1e-5)


@pytest.mark.parametrize("op", ["mul_", "div_"])
def test_inplace_op_on_a_graph_tensor_whose_formula_reads_the_old_self(op):
    # torch saves the original self for the other input's gradient (y.mul_(w): dw = g * y_before)
    results = []
    for lib in (torch, tidal):
        x = lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64, requires_grad=True)
        w = lib.tensor([2.0, 0.5, 1.5], dtype=lib.float64, requires_grad=True)
        y = x * 2
        getattr(y, op)(w)
        (y * y).sum().backward()
        results.append((y.detach().numpy(), x.grad.numpy(), w.grad.numpy(), type(y.grad_fn).__name__))
    for mine, ref in zip(results[1], results[0]):
        if isinstance(ref, str):
            assert mine == ref
        else:
            np.testing.assert_allclose(mine, ref, rtol=1e-12)


@pytest.mark.parametrize("fn", [lambda x: x.exp(), lambda x: x.relu(), lambda x: x.sigmoid(), lambda x: x.tanh(),
                                lambda x: x.softmax(1), lambda x: x.sqrt(), lambda x: x.cumprod(1)],
                         ids=["exp", "relu", "sigmoid", "tanh", "softmax", "sqrt", "cumprod"])
def test_dropped_graph_is_freed_without_the_cycle_collector(fn):
    """An op that saves its own output keeps it without its grad_fn (torch's saved-output rule), so a forward
    whose result is dropped frees its tensors at once, by reference counting alone; the saved output still
    comes back with the node as its grad_fn, and double backward through it matches torch."""
    import gc
    import weakref
    x = tidal.tensor([[0.5, 1.5, 2.0]], requires_grad=True)
    gc.disable()
    try:
        y = fn(x * 1.0)
        gone = weakref.ref(y)
        del y
        assert gone() is None
    finally:
        gc.enable()
    y = fn(x)
    assert all(s is not y for s in y.grad_fn.saved_tensors)
    (g,) = tidal.autograd.grad(y.sum(), x, create_graph=True)
    xt = torch.tensor([[0.5, 1.5, 2.0]], dtype=torch.float32, requires_grad=True)
    yt = fn(xt)
    (gt,) = torch.autograd.grad(yt.sum(), xt, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), gt.detach().numpy(), rtol=1e-5, atol=1e-6)
    if g.requires_grad:  # (relu's gradient is piecewise constant: nothing to differentiate again)
        (gg,) = tidal.autograd.grad(g.sum(), x)
        (ggt,) = torch.autograd.grad(gt.sum(), xt)
        np.testing.assert_allclose(gg.numpy(), ggt.numpy(), rtol=1e-5, atol=1e-6)

"""Tensor.register_post_accumulate_grad_hook and the engine's end-of-backward callbacks
(queue_callback), against torch's behaviour."""
import numpy as np
import pytest
import torch

import tidal
from tidal.autograd.engine import queue_callback


def _both(values=(1.0, 2.0, 3.0)):
    return (tidal.tensor(list(values), dtype=tidal.float64, requires_grad=True),
            torch.tensor(list(values), dtype=torch.float64, requires_grad=True))


def test_hook_sees_the_accumulated_grad_like_torch():
    ours, theirs = _both()
    seen_ours, seen_theirs = [], []
    ours.register_post_accumulate_grad_hook(lambda p: seen_ours.append(p.grad.numpy().copy()))
    theirs.register_post_accumulate_grad_hook(lambda p: seen_theirs.append(p.grad.numpy().copy()))
    for _ in range(2):  # the second backward accumulates: the hook sees the sum
        ((ours * ours).sum() + ours.sum()).backward()
        ((theirs * theirs).sum() + theirs.sum()).backward()
    assert len(seen_ours) == len(seen_theirs) == 2  # once per backward, though two paths reach the leaf
    for a, b in zip(seen_ours, seen_theirs):
        np.testing.assert_allclose(a, b)


def test_hook_runs_after_tensor_hooks_and_can_read_the_parameter():
    ours, theirs = _both()
    order_ours, order_theirs = [], []
    for t, order in ((ours, order_ours), (theirs, order_theirs)):
        t.register_post_accumulate_grad_hook(lambda p, order=order: order.append(("post", p.grad.tolist())))
        t.register_hook(lambda g, order=order: order.append(("pre", g.tolist())) or g * 10)
    (ours * 2).sum().backward()
    (theirs * 2).sum().backward()
    assert order_ours == order_theirs == [("pre", [2.0] * 3), ("post", [20.0] * 3)]


def test_which_backwards_run_the_hook():
    """autograd.grad does not accumulate (no hook); backward(inputs=...) does."""
    counts = []
    ours, theirs = _both()
    for lib, t in ((tidal, ours), (torch, theirs)):
        count = [0]
        t.register_post_accumulate_grad_hook(lambda p, count=count: count.__setitem__(0, count[0] + 1))
        lib.autograd.grad((t * 3).sum(), t)
        after_grad = count[0]
        (t * 3).sum().backward(inputs=[t])
        counts.append((after_grad, count[0]))
    assert counts[0] == counts[1] == (0, 1)


def test_remove_handle():
    ours, _ = _both()
    calls = []
    handle = ours.register_post_accumulate_grad_hook(lambda p: calls.append(1))
    ours.sum().backward()
    handle.remove()
    ours.sum().backward()
    assert calls == [1]


def test_registration_errors_like_torch():
    for lib in (tidal, torch):
        leaf = lib.ones(2, requires_grad=True)
        with pytest.raises(RuntimeError, match="post accumulate grad hooks cannot be registered on non-leaf tensors"):
            (leaf * 2).register_post_accumulate_grad_hook(lambda p: None)
        with pytest.raises(RuntimeError, match="cannot register a hook on a tensor that doesn't require gradient"):
            lib.ones(2).register_post_accumulate_grad_hook(lambda p: None)


def test_hook_return_values_like_torch():
    for lib in (tidal, torch):
        t = lib.ones(2, requires_grad=True)
        t.register_post_accumulate_grad_hook(lambda p: p * 2)
        with pytest.raises(RuntimeError, match="Tensor post accumulate grad hooks should return None."):
            t.sum().backward()
        u = lib.ones(2, requires_grad=True)
        u.register_post_accumulate_grad_hook(lambda p: 5)
        with pytest.raises(TypeError, match="expected Variable, but hook returned 'int'"):
            u.sum().backward()


# -- end-of-backward callbacks ----------------------------------------------------------------------------
def test_callback_runs_once_backward_is_done():
    x = tidal.ones(2, requires_grad=True)
    seen = []

    def hook(g):
        queue_callback(lambda: seen.append(x.grad.tolist()))  # .grad is set by then
        return g
    x.register_hook(hook)
    (x * 2).sum().backward()
    assert seen == [[2.0, 2.0]]
    (x * 2).sum().backward()
    assert seen == [[2.0, 2.0], [4.0, 4.0]]


def test_callbacks_may_queue_callbacks_and_run_in_order():
    x = tidal.ones(2, requires_grad=True)
    order = []
    x.register_post_accumulate_grad_hook(
        lambda p: (queue_callback(lambda: (order.append(1), queue_callback(lambda: order.append(3)))),
                   queue_callback(lambda: order.append(2))) and None)
    x.sum().backward()
    assert order == [1, 2, 3]


def test_callback_belongs_to_the_innermost_backward():
    x = tidal.ones(2, requires_grad=True)
    y = tidal.ones(2, requires_grad=True)
    order = []

    def outer_hook(g):
        queue_callback(lambda: order.append("outer"))
        with tidal.enable_grad():  # hooks run in backward's grad mode (off), as torch's
            (y * 3).sum().backward()  # a nested backward runs its own callbacks first
        order.append("nested done")
        return g
    y.register_post_accumulate_grad_hook(lambda p: queue_callback(lambda: order.append("inner")))
    x.register_hook(outer_hook)
    (x * 2).sum().backward()
    assert order == ["inner", "nested done", "outer"]


def test_callback_outside_backward_raises_like_torch():
    with pytest.raises(RuntimeError, match="Final callbacks can only be installed during backward pass."):
        queue_callback(lambda: None)
    with pytest.raises(RuntimeError, match="Final callbacks can only be installed during backward pass."):
        torch.autograd.Variable._execution_engine.queue_callback(lambda: None)


def test_failed_backward_drops_its_callbacks():
    x = tidal.ones(2, requires_grad=True)
    ran = []

    def hook(g):
        queue_callback(lambda: ran.append(1))
        raise ValueError("boom")
    x.register_hook(hook)
    with pytest.raises(ValueError, match="boom"):
        (x * 2).sum().backward()
    with pytest.raises(RuntimeError, match="Final callbacks can only be installed"):
        queue_callback(lambda: None)  # the failed backward left nothing behind
    assert ran == []

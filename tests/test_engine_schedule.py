"""The backward engine's schedule: which nodes start ready, how gradients reach a node from several producers,
and pruning for autograd.grad -- each compared with torch on graphs built to stress them (roots that feed one
another, fan-in and fan-out, roots no input depends on, leaves given as roots)."""
import numpy as np
import pytest
import torch

import tidal.compat as tc


def _graph(lib):
    x = lib.tensor([1.0, -2.0, 3.0], requires_grad=True)
    w = lib.tensor([0.5, 1.5, -1.0], requires_grad=True)
    y = x * w              # fans out to three consumers
    z = (y * 2).sin()
    u = y.exp() + z        # fan-in of two paths from y
    v = (u * y).tanh()
    return x, w, y, z, u, v


def _np(t):
    return None if t is None else t.detach().numpy()


@pytest.mark.parametrize("roots", [("v",), ("v", "u"), ("u", "v", "y"), ("z", "y", "x"), ("x", "w")])
def test_backward_with_roots_that_feed_one_another(roots):
    grads = []
    for lib in (tc, torch):
        x, w, y, z, u, v = _graph(lib)
        named = {"x": x, "w": w, "y": y, "z": z, "u": u, "v": v}
        lib.autograd.backward([named[r].sum() for r in roots])
        grads.append((_np(x.grad), _np(w.grad)))
    for ours, theirs in zip(*grads):
        np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("inputs", [("x",), ("w", "y"), ("u",), ("y", "x")])
def test_grad_pruned_to_inputs_with_an_unrelated_root(inputs):
    results = []
    for lib in (tc, torch):
        x, w, y, z, u, v = _graph(lib)
        other = (w * 3).sum()  # a root only w reaches: pruned away unless w is an input
        named = {"x": x, "w": w, "y": y, "u": u}
        results.append(lib.autograd.grad([v.sum(), other], [named[k] for k in inputs]))
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(_np(ours), _np(theirs), rtol=1e-6, atol=1e-6)


def test_second_backward_and_double_backward_follow_torch():
    results = []
    for lib in (tc, torch):
        x, w, y, z, u, v = _graph(lib)
        v.sum().backward(retain_graph=True)
        first = _np(x.grad).copy()
        v.sum().backward()
        (gx,) = lib.autograd.grad((x * x * w).sum(), [x], create_graph=True)
        (ggx,) = lib.autograd.grad(gx.sum(), [x])
        results.append((first, _np(x.grad), _np(ggx)))
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=1e-6)


def test_freed_graph_refused_as_torch():
    x, w, y, z, u, v = _graph(tc)
    v.sum().backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        v.sum().backward()

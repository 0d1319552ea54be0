"""autograd.grad runs only the nodes from which its inputs can be reached (torch's exec_info): hooks elsewhere
stay silent, formulas skip gradients nobody needs, and nodes it does not run keep their saved tensors."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import tidal
from nn_helpers import assert_close


def leaves(L, seed=0):
    rng = np.random.default_rng(seed)
    return [L.tensor(rng.standard_normal(s), requires_grad=True) for s in ((3, 4), (4, 5), (5, 2))]


def hooks_run(L, wrt: str):
    """Which hooks run for autograd.grad(y, <wrt>) on x -> a = exp(x @ w1) -> y = sum(a @ w2), and the grads."""
    x, w1, w2 = leaves(L)
    h = x @ w1
    a = h.exp()
    y = (a @ w2).sum()
    calls = []
    h.grad_fn.register_hook(lambda gi, go: calls.append("mm node"))
    a.grad_fn.register_prehook(lambda go: calls.append("exp prehook"))
    x.register_hook(lambda g: calls.append("x"))
    w2.register_hook(lambda g: calls.append("w2"))
    h.register_hook(lambda g: calls.append("h"))
    inputs = {"a": [a], "h": [h], "x": [x], "a_and_x": [a, x]}[wrt]
    grads = L.autograd.grad(y, inputs)
    return sorted(calls), grads


@pytest.mark.parametrize("wrt", ["a", "h", "x", "a_and_x"])
def test_only_the_nodes_leading_to_the_inputs_run_as_torch(wrt):
    ours, theirs = hooks_run(tidal, wrt), hooks_run(torch, wrt)
    assert ours[0] == theirs[0]
    for g, tg in zip(ours[1], theirs[1]):
        assert_close(g, tg)


def test_pruned_passes_skip_the_products_nobody_needs():
    x, w1, w2 = leaves(tidal, seed=1)
    tx, tw1, tw2 = leaves(torch, seed=1)
    h = x @ w1
    y = (h.tanh() @ w2).sum()
    with tidal.profiler.profile() as prof:
        (gh,) = tidal.autograd.grad(y, h, retain_graph=True)
        gh.sum().item()
    # one product (the gradient through w2); neither w2's gradient nor anything below h
    assert prof.key_averages()["matmul"]["kernels"] == 1
    th = tx @ tw1
    (tgh,) = torch.autograd.grad((th.tanh() @ tw2).sum(), th)
    assert_close(gh, tgh)
    with tidal.profiler.profile() as prof:  # a plain backward still computes everything
        y.backward()
        w1.grad.sum().item()
    assert prof.key_averages()["matmul"]["kernels"] == 4


def test_nodes_not_run_keep_their_saved_tensors_as_torch():
    for L in (tidal, torch):
        x, w1, _ = leaves(L, seed=2)
        a = (x @ w1).exp()
        y = (a * a).sum()
        L.autograd.grad(y, a)  # retain_graph=False frees only what ran
        a.sum().backward()  # a's own history never ran: still usable
        assert x.grad is not None and w1.grad is not None
        with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
            y.backward()


def test_backward_with_inputs_accumulates_only_those():
    results = []
    for L in (tidal, torch):
        x, w1, w2 = leaves(L, seed=3)
        calls = []
        x.register_hook(lambda g: calls.append("x"))
        y = ((x @ w1).sin() @ w2).sum()
        y.backward(inputs=[w1])
        results.append((calls, x.grad, w2.grad, w1.grad))
    (c, xg, w2g, w1g), (tc, txg, tw2g, tw1g) = results
    assert c == tc == [] and xg is None and txg is None and w2g is None and tw2g is None
    assert_close(w1g, tw1g)

"""torch.autograd.graph against torch: saved-tensor hooks (saved_tensors_hooks, save_on_cpu,
disable_saved_tensors_hooks), the Node API (next_functions, register_hook, register_prehook, name, metadata),
register_multi_grad_hook, get_gradient_edge and increment_version."""
from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest
import torch

import tidal
from tidal.autograd import graph
from nn_helpers import assert_close

GRAPHS = {
    "exp": lambda L, x, w: L.exp(x).sum(),
    "mul": lambda L, x, w: (x * w).sum(),
    "mul_number": lambda L, x, w: (x * 3).sum(),
    "matmul_tanh": lambda L, x, w: L.tanh(x @ w).sum(),
    "sigmoid_div": lambda L, x, w: (L.sigmoid(x) / w).sum(),
    "linear_relu_mse": lambda L, x, w: L.nn.functional.mse_loss(L.relu(L.nn.functional.linear(x, w)), w),
    "softmax_mean": lambda L, x, w: L.softmax(x * w, 1).mean(),
}


def leaves(L, seed=0):
    rng = np.random.default_rng(seed)
    a, b = rng.random((4, 4)) + 0.5, rng.random((4, 4)) + 0.5
    return L.tensor(a, requires_grad=True), L.tensor(b, requires_grad=True)


def counted(L, fn, seed=0):
    """(pack calls during forward, unpack calls during backward, gradients) of fn under counting hooks."""
    x, w = leaves(L, seed)
    log = []
    with L.autograd.graph.saved_tensors_hooks(lambda t: log.append("p") or t, lambda t: log.append("u") or t):
        y = fn(L, x, w)
    packs = len(log)
    y.backward()
    return packs, len(log) - packs, (x.grad, w.grad)


@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_pack_and_unpack_counts_and_grads_as_torch(name):
    p, u, (gx, gw) = counted(tidal, GRAPHS[name])
    tp, tu, (tgx, tgw) = counted(torch, GRAPHS[name])
    assert (p, u) == (tp, tu)
    for g, tg in ((gx, tgx), (gw, tgw)):
        assert (g is None) == (tg is None)
        if g is not None:
            assert_close(g, tg)


def test_pack_sees_the_saved_tensors_themselves_and_retain_graph_unpacks_again():
    for L in (tidal, torch):
        x, w = leaves(L)
        seen, unpacks = [], []
        with L.autograd.graph.saved_tensors_hooks(lambda t: seen.append(t) or t, lambda t: unpacks.append(t) or t):
            y = L.exp(x)
            z = (y * w).sum()
        # exp saves its output; mul saves both of its operands
        assert sum(t is y for t in seen) == 2 and sum(t is w for t in seen) == 1 and len(seen) == 3
        z.backward(retain_graph=True)
        z.backward()
        assert len(unpacks) == 6


def offload(store: dict):
    """Hooks that keep saved tensors as NumPy copies outside the graph (a disk or host offload)."""
    def pack(t):
        key = len(store)
        store[key] = (t.detach().numpy().copy(), t.dtype)
        return key

    def unpack(key):
        arr, dtype = store[key]
        return tidal.tensor(arr, dtype=dtype)
    return pack, unpack


def test_offload_frees_the_saved_intermediates_and_keeps_the_gradients():
    x, w = leaves(tidal, seed=1)
    tx, tw = leaves(torch, seed=1)
    store: dict = {}
    with tidal.autograd.graph.saved_tensors_hooks(*offload(store)):
        h = tidal.tanh(x @ w)
        g = h.exp()
        loss = (g * w).sum()
    refs = [weakref.ref(h), weakref.ref(g)]
    del h, g
    gc.collect()
    # without hooks the graph would hold both (tanh and exp save their outputs); packed, nothing does
    assert [r() for r in refs] == [None, None]
    assert len(store) == 6  # matmul: x, w; tanh: h; exp: g; mul: g, w
    loss.backward()
    (torch.tanh(tx @ tw).exp() * tw).sum().backward()
    assert_close(x.grad, tx.grad)
    assert_close(w.grad, tw.grad)


def test_nested_hooks_use_the_innermost_and_saved_tensors_reads_unpack():
    log = []
    x, w = leaves(tidal)
    outer = tidal.autograd.graph.saved_tensors_hooks(lambda t: log.append("outer") or t, lambda t: t)
    inner = tidal.autograd.graph.saved_tensors_hooks(lambda t: log.append("inner") or t,
                                                      lambda t: log.append("unpack") or t)
    with outer:
        with inner:
            y = x * w
        z = x * w
    assert log == ["inner", "inner", "outer", "outer"]
    saved = [t for t in y.grad_fn.saved_tensors if t is not None]
    assert sorted(map(id, saved)) == sorted([id(x), id(w)])
    assert log[4:] == ["unpack", "unpack"]
    z.sum().backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        z.grad_fn.saved_tensors
    assert not isinstance(z.grad_fn.next_functions, list)


def test_errors_as_torch():
    x, _ = leaves(tidal)
    for L, xx in ((tidal, x), (torch, leaves(torch)[0])):
        G = L.autograd.graph
        with G.saved_tensors_hooks(lambda t: 1, lambda p: p):
            y = L.exp(xx).sum()
        with pytest.raises(TypeError, match="Output of saved tensor unpack_hook expected to be a Tensor but got "
                                            "result of type int"):
            y.backward()
        with G.disable_saved_tensors_hooks("no hooks here"):
            with pytest.raises(RuntimeError, match="no hooks here"):
                with G.saved_tensors_hooks(lambda t: t, lambda t: t):
                    pass
            with G.disable_saved_tensors_hooks("inner"):
                pass
            with pytest.raises(RuntimeError, match="no hooks here"):  # the outer block's message again
                with G.saved_tensors_hooks(lambda t: t, lambda t: t):
                    pass
        with pytest.raises(RuntimeError, match="not while hooks"):
            with G.saved_tensors_hooks(lambda t: t, lambda t: t):
                with G.disable_saved_tensors_hooks("not while hooks"):
                    pass
        with G.saved_tensors_hooks(lambda t: t, lambda t: t):  # usable again afterwards
            L.exp(xx).sum().backward()


def test_in_place_change_after_packing_is_not_checked_as_torch():
    for L in (tidal, torch):
        x, w = leaves(L)
        with L.autograd.graph.saved_tensors_hooks(lambda t: t.detach().clone(), lambda t: t):
            a = x.clone()
            y = a * w
            a.mul_(2)
        y.sum().backward()  # the packed copy is what backward reads: no version error
        assert_close(w.grad, (x * 1).detach())


class Cube(tidal.autograd.Function):
    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return a ** 3

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return 3 * a * a * g


class TorchCube(torch.autograd.Function):
    forward = staticmethod(Cube.forward)
    backward = staticmethod(Cube.backward)


def test_custom_function_save_for_backward_and_double_backward():
    results = []
    for L, F in ((tidal, Cube), (torch, TorchCube)):
        x, _ = leaves(L, seed=2)
        log = []
        with L.autograd.graph.saved_tensors_hooks(lambda t: log.append("p") or t, lambda t: log.append("u") or t):
            y = F.apply(x).sum() + L.sin(x).sum()
            (g,) = L.autograd.grad(y, x, create_graph=True)
            (gg,) = L.autograd.grad(g.sum(), x)
        results.append((log.count("p"), log.count("u"), g.detach(), gg))
    ours, theirs = results
    assert ours[0] >= 2 and ours[1] >= 2 and theirs[0] >= 2
    assert_close(ours[2], theirs[2])
    assert_close(ours[3], theirs[3])


def test_save_on_cpu_gradients_and_pinned():
    for pin in (False, True):
        x, w = leaves(tidal, seed=3)
        tx, tw = leaves(torch, seed=3)
        with tidal.autograd.graph.save_on_cpu(pin_memory=pin):
            loss = (tidal.tanh(x @ w) * w).sum()
        loss.backward()
        with torch.autograd.graph.save_on_cpu(pin_memory=False):
            (torch.tanh(tx @ tw) * tw).sum().backward()
        assert_close(x.grad, tx.grad)
        assert_close(w.grad, tw.grad)
    assert issubclass(tidal.autograd.graph.save_on_cpu, tidal.autograd.graph.saved_tensors_hooks)


def node_api(L):
    x, w = leaves(L, seed=4)
    y = (x * w).sum()
    mul = y.grad_fn.next_functions[0][0]
    acc = mul.next_functions[0][0]
    out = {"names": (y.grad_fn.name(), mul.name(), acc.name()), "acc_next": acc.next_functions,
           "node": isinstance(mul, L.autograd.graph.Node), "metadata": dict(mul.metadata)}
    mul.metadata["k"] = 1
    out["metadata_kept"] = y.grad_fn.next_functions[0][0].metadata
    seen = []
    h1 = y.grad_fn.register_hook(lambda gi, go: seen.append(("post", len(gi), len(go))))
    h2 = y.grad_fn.register_prehook(lambda go: seen.append(("pre", len(go))))
    h3 = acc.register_prehook(lambda go: seen.append(("acc pre", len(go))))
    h4 = acc.register_hook(lambda gi, go: seen.append(("acc post", len(gi), len(go))))
    y.backward(retain_graph=True)
    out["seen"] = list(seen)
    for h in (h1, h2, h3, h4):
        h.remove()
    y.backward(retain_graph=True)
    out["seen_after_remove"] = len(seen)
    h = mul.register_hook(lambda gi, go: (gi[0] * 0, gi[1]))
    x.grad = w.grad = None
    y.backward(retain_graph=True)
    out["zeroed"] = x.grad.detach().clone()
    h.remove()
    mul.register_prehook(lambda go: (go[0] * 10,))
    x.grad = w.grad = None
    y.backward(retain_graph=True)
    out["scaled"] = (x.grad / w).detach()

    def bad(gi, go):
        return 1
    mul.register_hook(bad)
    with pytest.raises(TypeError, match="expected tuple, but hook returned 'int'"):
        y.backward(retain_graph=True)
    return out


def test_node_api_as_torch():
    ours, theirs = node_api(tidal), node_api(torch)
    assert ours["names"] == theirs["names"] == ("SumBackward0", "MulBackward0", "torch::autograd::AccumulateGrad")
    assert ours["acc_next"] == theirs["acc_next"] == ()
    assert ours["node"] and theirs["node"]
    assert ours["metadata"] == theirs["metadata"] == {}
    assert ours["metadata_kept"] == theirs["metadata_kept"] == {"k": 1}
    assert ours["seen"] == theirs["seen"]
    assert ours["seen_after_remove"] == theirs["seen_after_remove"]
    assert_close(ours["zeroed"], theirs["zeroed"])
    assert_close(ours["scaled"], theirs["scaled"])


def test_hook_returning_wrong_count_as_torch():
    for L in (tidal, torch):
        x, w = leaves(L)
        y = (x * w).sum()

        def short(gi, go):
            return (gi[0],)
        y.grad_fn.next_functions[0][0].register_hook(short)
        with pytest.raises(RuntimeError, match=r"hook 'short' has returned an incorrect number of values \(got 1, "
                                               r"but expected 2\)"):
            y.backward()


def test_compat_names_and_no_cost_without_hooks():
    import tidal.compat as ctorch
    for name in ("saved_tensors_hooks", "save_on_cpu", "disable_saved_tensors_hooks", "Node"):
        assert getattr(ctorch.autograd.graph, name) is getattr(graph, name)
    x, w = leaves(tidal)
    y = x * w  # outside any block the node keeps its plain class and slot
    from tidal.autograd import saved_hooks
    assert type(y.grad_fn) is graph.node_class("mul") and not saved_hooks._stacks.hooks
    assert graph.Node.__init__ is saved_hooks._plain_init  # recording outside a block pays nothing


def multi_hook_program(L):
    G = L.autograd.graph
    res = []
    a, b, c = (L.tensor(v, requires_grad=True) for v in ([1., 2., 3.], [1., 1., 2.], [0., 1., 2.]))
    out = []
    h = G.register_multi_grad_hook((a, b, c), lambda gs: out.append([None if g is None else float(g.sum())
                                                                     for g in gs]))
    (a * 2 + b * 3).sum().backward()  # c gets no gradient in this backward: None, and no waiting for it
    (a * 2).sum().backward()
    h.remove()
    (a * 2).sum().backward()
    res.append(out)
    first = []
    G.register_multi_grad_hook((a, b), lambda g: first.append(float(g.sum())), mode="any")
    (a * 2 + b * 3).sum().backward()
    (a * 2 + b * 3).sum().backward()
    res.append(len(first))
    a2, b2 = a * 1, b * 1
    seen = []
    G.register_multi_grad_hook((a2, b2), lambda gs: seen.append([g is not None for g in gs]))
    (a2 * 2).sum().backward(retain_graph=True)
    L.autograd.grad((a2 * 2 + b2).sum(), [a2], retain_graph=True)  # b2's node does not run there
    (a2 + b2).sum().backward()
    res.append(seen)
    edge = G.get_gradient_edge(a * 2)
    res.append((edge.node.name(), edge.output_nr, G.get_gradient_edge(a).node.name()))
    x = L.randn(2)
    v = x._version
    G.increment_version(x)
    G.increment_version([x, x])
    res.append(x._version - v)
    with pytest.raises(ValueError, match="Expects mode to be one of \\('all', 'any'\\) but got x"):
        G.register_multi_grad_hook((a,), print, mode="x")
    with pytest.raises(RuntimeError, match="not possible to get the gradient edge for a Tensor that does not"):
        G.get_gradient_edge(x)
    return res


def test_multi_grad_hook_gradient_edge_and_increment_version_as_torch():
    assert multi_hook_program(tidal) == multi_hook_program(torch)

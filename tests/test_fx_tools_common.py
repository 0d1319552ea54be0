"""tidal.fx.passes.tools_common against torch's: node targets as text, and the graph put back in topological
order (legalize_graph, stable_topological_sort) after an edit broke it, cycles refused alike."""
import pytest
import torch
import torch.fx
from torch.fx.passes import tools_common as T

import tidal.compat as tc
from tidal.fx.passes import tools_common as O
import test_fx as TF
from nn_helpers import load_from_torch


def _pair():
    torch.manual_seed(0)
    ref, ours = TF._cnn(torch), TF._cnn(tc)
    load_from_torch(ours, ref)
    return ref, ours


def _run(lib, mod, model):
    g = lib.fx.symbolic_trace(model)
    mods = dict(g.named_modules())
    targets = [mod.get_node_target(mods, n) for n in g.graph.nodes if n.op in mod.CALLABLE_NODE_OPS]
    calls = [n for n in g.graph.nodes if n.op in mod.CALLABLE_NODE_OPS]
    calls[0].prepend(calls[-1])  # the last two calls moved first: the order is broken
    calls[0].prepend(calls[-2])
    mod.legalize_graph(g)
    g.graph.lint()
    legal = [n.name for n in g.graph.nodes]
    g2 = lib.fx.symbolic_trace(model)
    calls = [n for n in g2.graph.nodes if n.op in mod.CALLABLE_NODE_OPS]
    calls[0].prepend(calls[-1])
    mod.stable_topological_sort(g2)
    stable = [n.name for n in g2.graph.nodes]

    def f(x):
        return (x + 1) * 2 - x.sum()
    g3 = lib.fx.symbolic_trace(f)
    ops = [mod.get_node_target({}, n) for n in g3.graph.nodes if n.op in mod.CALLABLE_NODE_OPS]
    return targets, legal, stable, ops, g.code


def test_targets_and_orders_match_torch():
    ref, ours = _pair()
    want, got = _run(torch, T, ref), _run(tc, O, ours)
    assert got == want
    assert "torch.nn.modules.conv.Conv2d" in got[0] and "_operator.add" in got[3]


def test_cycles_refused_as_torch():
    messages = []
    for lib, mod in ((torch, T), (tc, O)):
        def f(x):
            return (x + 1).relu() * 2
        g = lib.fx.symbolic_trace(f)
        add = next(n for n in g.graph.nodes if n.name == "add")
        relu = next(n for n in g.graph.nodes if n.name == "relu")
        add.args = (relu, 1)  # add <- relu <- add
        with pytest.raises(RuntimeError) as info:
            mod.legalize_graph(g)
        messages.append(str(info.value))
        with pytest.raises(AssertionError, match="Input graph has cycles"):
            mod.stable_topological_sort(g)
        with pytest.raises(AssertionError, match="Expect op types of"):
            mod.get_node_target({}, next(iter(g.graph.nodes)))
    assert messages[0] == messages[1]

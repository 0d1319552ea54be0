"""tidal.fx.experimental.optimization, tidal.fx.passes.infra (PassManager) and the smaller torch.fx names
(Graph.output_node, Tracer.get_fresh_qualname, graph_drawer's refusal) against torch: generated code,
values and errors."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.fx
import torch.fx.experimental.optimization as topt
from torch.fx.passes.graph_drawer import FxGraphDrawer as TorchDrawer
from torch.fx.passes.infra import pass_manager as tpm

import tidal
import tidal.compat as tc
import tidal.fx.experimental.optimization as opt
from tidal.fx.passes.graph_drawer import FxGraphDrawer
from tidal.fx.passes.infra import pass_manager as pm
from nn_helpers import assert_close, load_from_torch, to_tidal


def _net(lib):
    class Net(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = lib.nn.Conv2d(3, 4, 3, padding=1)
            self.bn = lib.nn.BatchNorm2d(4)
            self.conv2 = lib.nn.Conv2d(4, 4, 1)
            self.bn2 = lib.nn.BatchNorm2d(4)  # conv2's output has two readers: not folded
            self.drop = lib.nn.Dropout(0.5)
            self.fc = lib.nn.Linear(4, 5)
            self.bn1d = lib.nn.BatchNorm1d(5)

        def forward(self, x):
            h = self.bn(self.conv(x)).relu()
            c = self.conv2(h)
            h = self.bn2(c) + c
            h = self.drop(h.mean((2, 3)))
            return self.bn1d(self.fc(h))
    return Net()


def _pair():
    torch.manual_seed(0)
    ref, ours = _net(torch), _net(tc)
    with torch.no_grad():  # running statistics away from (0, 1), so folding them shows
        for bn in (ref.bn, ref.bn2, ref.bn1d):
            bn.running_mean.uniform_(-1, 1)
            bn.running_var.uniform_(0.5, 2)
            bn.weight.uniform_(0.5, 1.5)
            bn.bias.uniform_(-0.5, 0.5)
    load_from_torch(ours, ref)
    return ref.eval(), ours.eval()


def test_fuse_folds_batchnorms_as_torch():
    ref, ours = _pair()
    fref, fours = topt.fuse(ref), opt.fuse(ours)
    assert fours.code == fref.code
    assert "self.bn(" not in fours.code and "self.bn1d(" not in fours.code and "self.bn2(" in fours.code
    assert isinstance(fours.conv, tidal.nn.Conv2d) and fours.conv.weight is not ours.conv.weight  # a copy
    x = np.random.default_rng(0).standard_normal((2, 3, 6, 6)).astype(np.float32)
    assert_close(fours(to_tidal(x)), fref(torch.tensor(x)), rtol=1e-4, atol=1e-5)
    assert_close(fours(to_tidal(x)), ours(to_tidal(x)), rtol=1e-4, atol=1e-5)
    inplace, inplace_ref = opt.fuse(ours, inplace=True), topt.fuse(ref, inplace=True)
    assert (inplace.fc is ours.fc) == (inplace_ref.fc is ref.fc)  # (the folded modules are new ones in both)
    assert_close(inplace(to_tidal(x)), fref(torch.tensor(x)), rtol=1e-4, atol=1e-5)


def test_remove_dropout_and_extract_subgraph_match_torch():
    ref, ours = _pair()
    ref.train(), ours.train()
    rref, rours = topt.remove_dropout(ref), opt.remove_dropout(ours)
    assert rours.code == rref.code and "drop" not in rours.code
    x = np.random.default_rng(1).standard_normal((2, 3, 5, 5)).astype(np.float32)
    ref.eval(), ours.eval(), rref.eval(), rours.eval()
    assert_close(rours(to_tidal(x)), rref(torch.tensor(x)), rtol=1e-4, atol=1e-5)

    gref, gm = torch.fx.symbolic_trace(ref), tc.fx.symbolic_trace(ours)
    pick = ("conv", "bn", "relu")

    def cut(lib, g, mod):
        nodes = [n for n in g.graph.nodes if n.name in pick]
        return (topt if lib is torch else opt).extract_subgraph(mod, nodes, [nodes[0].args[0]], [nodes[-1]])
    sref, sours = cut(torch, gref, ref), cut(tc, gm, ours)
    assert sours.code == sref.code
    assert_close(sours(to_tidal(x))[0], sref(torch.tensor(x))[0], rtol=1e-5, atol=1e-6)
    modules = dict(gm.named_modules())
    bn = next(n for n in gm.graph.nodes if n.name == "bn")
    assert opt.matches_module_pattern((tc.nn.Conv2d, tc.nn.BatchNorm2d), bn, modules)
    assert not opt.matches_module_pattern((tc.nn.Linear, tc.nn.BatchNorm2d), bn, modules)


def _passes(lib):
    """Two passes (add -> mul, then drop a `* 1`) and a no-op one, for both libraries' graphs."""
    import operator

    def add_to_mul(gm):
        changed = False
        for n in gm.graph.nodes:
            if n.op == "call_function" and n.target is operator.add:
                n.target = operator.mul
                changed = True
        return (torch.fx.passes.infra.pass_base.PassResult if lib is torch else
                tidal.fx.passes.infra.pass_base.PassResult)(gm, changed)

    def noop(gm):
        return None
    return add_to_mul, noop


def test_pass_manager_runs_orders_and_reports_like_torch():
    def fn(x):
        return (x + 2) + x
    results, modules = [], []
    for lib, mod in ((torch, tpm), (tc, pm)):
        add_to_mul, noop = _passes(lib)
        wrapped = mod.pass_result_wrapper(noop)
        manager = mod.PassManager([wrapped, add_to_mul], [mod.this_before_that_pass_constraint(add_to_mul, wrapped)],
                                  steps=3)
        gm = lib.fx.symbolic_trace(fn)
        res = manager(gm)
        results.append((res.modified, [f.__name__ for f in manager.passes], res.graph_module.code))
        modules.append(res.graph_module)
        with pytest.raises(RuntimeError, match="pass schedule constraint violated"):
            bad = mod.PassManager([wrapped, add_to_mul], [mod.this_before_that_pass_constraint(add_to_mul, wrapped)])
            bad.validate_constraints()
        with pytest.raises(RuntimeError, match="Circular dependency detected"):
            mod.PassManager([wrapped, add_to_mul], [mod.this_before_that_pass_constraint(add_to_mul, wrapped),
                                                    mod.this_before_that_pass_constraint(wrapped, add_to_mul)])(gm)
        with pytest.raises(Exception, match="An error occurred when running the 'bad_pass' pass") as info:
            def bad_pass(gm):
                return 3
            mod.PassManager([bad_pass])(gm)
        assert isinstance(info.value.__cause__, TypeError)
    assert results[0] == results[1]
    assert results[1][0] is True and results[1][1] == ["add_to_mul", "noop"]
    np.testing.assert_allclose(modules[1](tidal.tensor([1.0, 2.0])).numpy(), [2.0, 8.0])  # (x * 2) * x
    assert_close(modules[1](tidal.tensor([1.0, 3.0])), modules[0](torch.tensor([1.0, 3.0])))


def test_output_node_fresh_qualname_and_drawer_refusal():
    gref, gm = torch.fx.symbolic_trace(lambda x: x.relu()), tc.fx.symbolic_trace(lambda x: x.relu())
    assert gm.graph.output_node().op == "output" and gm.graph.output_node().args[0].name == "relu"
    for graph in (torch.fx.Graph(), tidal.fx.Graph()):
        graph.placeholder("x")
        with pytest.raises(AssertionError, match="Expected output node, got op=placeholder"):
            graph.output_node()
    names = []
    for lib in (torch, tc):
        tracer = lib.fx.Tracer()
        tracer.root = lib.nn.Module()
        seq = [tracer.get_fresh_qualname("_c")]
        setattr(tracer.root, "_c0", lib.nn.Module())
        setattr(tracer.root, "_c1", lib.nn.Module())
        seq += [tracer.get_fresh_qualname("_c"), tracer.get_fresh_qualname("_c")]
        names.append(seq)
    assert names[1] == names[0] == ["_c0", "_c2", "_c3"]  # (the counter moves on even when nothing took _c2)
    with pytest.raises(RuntimeError) as want:
        TorchDrawer(gref, "g")
    with pytest.raises(RuntimeError) as got:
        FxGraphDrawer(gm, "g")
    assert str(got.value) == str(want.value) and "pydot" in str(got.value)
    assert tc.fx.experimental.optimization is opt

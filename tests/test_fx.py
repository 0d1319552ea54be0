"""tidal.fx (torch.fx under compat) against torch.fx: the same programs traced with both, compared by their
graphs (ops, names, targets), their generated code and their outputs."""
from __future__ import annotations

import copy
import functools
import math
import operator
import pickle

import numpy as np
import pytest
import torch
import torch.fx
from torch.fx.passes.shape_prop import ShapeProp as TorchShapeProp

import tidal
import tidal.compat as tc
from tidal.fx.passes.shape_prop import ShapeProp
from nn_helpers import assert_close, load_from_torch, to_tidal


def _wrapped_helper(x, k):
    """A module-level function that fx.wrap keeps as one call (both tracers register it below)."""
    return x * k + k


torch.fx.wrap("_wrapped_helper")
tidal.fx.wrap("_wrapped_helper")


def _nodes(gm) -> list:
    """(op, name, target as text) of each node."""
    out = []
    for n in gm.graph.nodes:
        target = n.target if isinstance(n.target, str) else getattr(n.target, "__name__", str(n.target))
        out.append((n.op, n.name, target))
    return out


def _pair(build, *args):
    """The same module built with torch and with tidal.compat, with torch's weights loaded into tidal's."""
    torch.manual_seed(0)
    ref = build(torch, *args)
    ours = build(tc, *args)
    load_from_torch(ours, ref)
    return ref, ours


def _mlp(lib):
    class MLP(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = lib.nn.Linear(12, 8)
            self.act = lib.nn.ReLU()
            self.fc2 = lib.nn.Linear(8, 4)
            self.scale = lib.nn.Parameter(lib.ones(4) * 0.5)
            self.register_buffer("shift", lib.arange(4.0))
            self.body = lib.nn.Sequential(lib.nn.Tanh(), lib.nn.Identity())

        def forward(self, x, y=None):
            x = x.view(x.size(0), -1)
            h = self.body(self.act(self.fc1(x)))
            h = lib.flatten(h, 1)
            out = self.fc2(h) * self.scale + self.shift
            out = lib.add(out, 1.0) - out[:, 0:2].mean() + out.shape[0]
            return lib.cat([out, -out], dim=1), out.T @ out, out.sum(dim=1, keepdim=True)
    return MLP()


def _cnn(lib):
    class CNN(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = lib.nn.Conv2d(2, 4, 3, padding=1)
            self.bn1 = lib.nn.BatchNorm2d(4)
            self.conv2 = lib.nn.Conv2d(4, 4, 3)
            self.bn2 = lib.nn.BatchNorm2d(4)
            self.pool = lib.nn.AdaptiveAvgPool2d(1)
            self.head = lib.nn.Linear(4, 3)

        def forward(self, x):
            x = lib.nn.functional.relu(self.bn1(self.conv1(x)))
            x = self.bn2(self.conv2(x)).relu()
            x = lib.nn.functional.avg_pool2d(x, 2)
            return lib.softmax(self.head(self.pool(x).flatten(1)), dim=-1)
    return CNN()


def test_mlp_trace_matches_torch_code_graph_and_values():
    ref, ours = _pair(_mlp)
    gref, gm = torch.fx.symbolic_trace(ref), tc.fx.symbolic_trace(ours)
    assert isinstance(gm, tidal.fx.GraphModule) and isinstance(gm, tidal.nn.Module)
    assert type(gm).__name__ == type(gref).__name__ == "MLP"
    assert gm.code == gref.code
    assert str(gm.graph) == str(gref.graph)
    assert _nodes(gm) == _nodes(gref)
    assert [n.op for n in gm.graph.nodes][:2] == ["placeholder", "placeholder"]
    assert str(gm) == str(gref)  # the module tree (plain Modules along dotted paths) and the code
    assert list(gm.state_dict()) == list(gref.state_dict()) and gm.fc1.weight is ours.fc1.weight
    x = np.random.default_rng(0).standard_normal((3, 2, 6)).astype(np.float32)
    for got, want, direct in zip(gm(to_tidal(x)), gref(torch.tensor(x)), ours(to_tidal(x))):
        assert_close(got, want, rtol=1e-5, atol=1e-5)
        assert_close(got, direct, rtol=1e-6, atol=1e-6)
    gm(to_tidal(x))[0].square().sum().backward()  # the GraphModule trains the module's own parameters
    gref(torch.tensor(x))[0].square().sum().backward()
    assert_close(ours.fc1.weight.grad, ref.fc1.weight.grad, rtol=1e-4, atol=1e-5)
    assert_close(ours.scale.grad, ref.scale.grad, rtol=1e-4, atol=1e-5)


def test_cnn_trace_function_names_and_outputs():
    ref, ours = _pair(_cnn)
    ref.eval(), ours.eval()
    gref, gm = torch.fx.symbolic_trace(ref), tc.fx.symbolic_trace(ours)
    assert [(op, name) for op, name, _ in _nodes(gm)] == [(op, name) for op, name, _ in _nodes(gref)]
    assert [t for _, _, t in _nodes(gm)] == [t for _, _, t in _nodes(gref)]
    relu = next(n for n in gm.graph.nodes if n.name == "relu")
    assert relu.target is tc.nn.functional.relu and relu.args[0].target == "bn1"
    assert gm.graph.find_nodes(op="call_module", target="head")[0].users.keys() == {gm.graph.find_nodes(
        op="call_function", target=tc.softmax)[0]}
    x = np.random.default_rng(1).standard_normal((2, 2, 8, 8)).astype(np.float32)
    assert_close(gm(to_tidal(x)), gref(torch.tensor(x)), rtol=1e-5, atol=1e-6)


def _add_to_mul(lib, gm):
    for n in gm.graph.nodes:
        if n.op == "call_function" and n.target in (lib.add, operator.add):
            with gm.graph.inserting_after(n):
                new = gm.graph.call_function(lib.mul, n.args, n.kwargs)
            n.replace_all_uses_with(new)
            gm.graph.erase_node(n)
    gm.graph.lint()
    gm.recompile()
    return gm


def test_pass_replacing_add_with_mul_recompiles():
    def f(lib):
        def fn(x, y):
            return lib.add(x, y) + x * 2 + (y + 1).sum()
        return fn
    gref, gm = _add_to_mul(torch, torch.fx.symbolic_trace(f(torch))), _add_to_mul(tc, tc.fx.symbolic_trace(f(tc)))
    assert gm.code == gref.code
    assert "mul_1 = torch.mul(" in gm.code and "add" not in gm.code
    x, y = np.arange(6.0).reshape(2, 3), np.full((2, 3), 3.0)
    assert_close(gm(to_tidal(x), to_tidal(y)), gref(torch.tensor(x), torch.tensor(y)))
    np.testing.assert_allclose(gm(to_tidal(x), to_tidal(y)).numpy(), x * y * (x * 2) * (y * 1).sum())


def _counting(lib):
    class Count(lib.fx.Interpreter):
        def __init__(self, mod):
            super().__init__(mod)
            self.calls: dict = {}

        def call_function(self, target, args, kwargs):
            self.calls[target.__name__] = self.calls.get(target.__name__, 0) + 1
            return super().call_function(target, args, kwargs)

        def call_module(self, target, args, kwargs):
            self.calls[target] = self.calls.get(target, 0) + 1
            return super().call_module(target, args, kwargs)

        def call_method(self, target, args, kwargs):
            self.calls["." + target] = self.calls.get("." + target, 0) + 1
            return super().call_method(target, args, kwargs)
    return Count


def test_interpreter_subclass_counts_and_runs():
    ref, ours = _pair(_mlp)
    gref, gm = torch.fx.symbolic_trace(ref), tc.fx.symbolic_trace(ours)
    x = np.random.default_rng(2).standard_normal((2, 12)).astype(np.float32)
    cref, cours = _counting(torch)(gref), _counting(tc)(gm)
    want, got = cref.run(torch.tensor(x)), cours.run(to_tidal(x))
    assert cours.calls == cref.calls and cours.calls["add"] == 3 and cours.calls["fc1"] == 1
    for g, w in zip(got, want):
        assert_close(g, w, rtol=1e-5, atol=1e-5)
    assert sorted(map(str, cours.env)) == sorted(map(str, cref.env)) == ["output", "y"]  # the rest were dropped
    with pytest.raises(RuntimeError, match="Expected positional argument for parameter x"):
        tc.fx.Interpreter(gm).run()


def _fuse_conv_bn(lib, gm):
    """Fold each BatchNorm that follows a Conv2d into the conv's weights (the classic fx pass)."""
    modules = dict(gm.named_modules())
    for node in list(gm.graph.nodes):
        if node.op != "call_module" or not isinstance(modules[node.target], lib.nn.BatchNorm2d):
            continue
        prev = node.args[0]
        if prev.op != "call_module" or not isinstance(modules[prev.target], lib.nn.Conv2d) or len(prev.users) > 1:
            continue
        conv, bn = modules[prev.target], modules[node.target]
        with lib.no_grad():
            factor = bn.weight / lib.sqrt(bn.running_var + bn.eps)
            conv.weight.copy_(conv.weight * factor.reshape(-1, 1, 1, 1))
            conv.bias.copy_((conv.bias - bn.running_mean) * factor + bn.bias)
        node.replace_all_uses_with(prev)
        gm.graph.erase_node(node)
    gm.graph.lint()
    gm.delete_all_unused_submodules()
    gm.recompile()
    return gm


def test_conv_bn_fusion_by_walking_nodes():
    ref, ours = _pair(_cnn)
    for m in (ref, ours):
        m.eval()
        for bn in (m.bn1, m.bn2):  # statistics that make the fold visible
            bn.running_mean.copy_(tc.linspace(-1, 1, 4) if m is ours else torch.linspace(-1, 1, 4))
            bn.running_var.fill_(2.0)
    x = np.random.default_rng(3).standard_normal((2, 2, 8, 8)).astype(np.float32)
    before = ours(to_tidal(x))
    gref = _fuse_conv_bn(torch, torch.fx.symbolic_trace(ref))
    gm = _fuse_conv_bn(tc, tc.fx.symbolic_trace(ours))
    assert _nodes(gm) == _nodes(gref) and "bn1" not in gm.code
    assert not hasattr(gm, "bn1") and hasattr(gm, "conv1")
    assert_close(gm(to_tidal(x)), gref(torch.tensor(x)), rtol=1e-4, atol=1e-6)
    assert_close(gm(to_tidal(x)), before, rtol=1e-4, atol=1e-6)


def _to_sigmoid(lib):
    class ReluToSigmoid(lib.fx.Transformer):
        def call_function(self, target, args, kwargs):
            if target in (lib.relu, lib.nn.functional.relu):
                return super().call_function(lib.sigmoid, args, {})
            return super().call_function(target, args, kwargs)
    return ReluToSigmoid


def test_transformer_rewrites_graph():
    def f(lib):
        def fn(x):
            return lib.relu(x) * 3 + x.relu().sum()
        return fn
    gref = _to_sigmoid(torch)(torch.fx.symbolic_trace(f(torch))).transform()
    gm = _to_sigmoid(tc)(tc.fx.symbolic_trace(f(tc))).transform()
    assert gm.code == gref.code and type(gm).__name__ == "GraphModule"
    x = np.linspace(-2, 2, 5)
    assert_close(gm(to_tidal(x)), gref(torch.tensor(x)))


def test_concrete_args_specialize_control_flow():
    def f(lib):
        def fn(x, flag):
            if flag:
                return x + 1
            return x * 2
        return fn
    gref = torch.fx.symbolic_trace(f(torch), concrete_args={"flag": True})
    gm = tc.fx.symbolic_trace(f(tc), concrete_args={"flag": True})
    assert [(op, name) for op, name, _ in _nodes(gm)] == [(op, name) for op, name, _ in _nodes(gref)]
    assert gm.code == gref.code  # torch._assert, as torch spells it
    assert_close(gm(tc.ones(2), True), gref(torch.ones(2), True))
    with pytest.raises(AssertionError, match="flag has been specialized to have value True"):
        gm(tc.ones(2), False)
    with pytest.raises(AssertionError, match="flag has been specialized to have value True"):
        gref(torch.ones(2), False)

    def g(x, y):
        return x + y
    gph = tc.fx.symbolic_trace(g, concrete_args={"y": tidal.fx.PH})  # PH: the argument stays an input
    gph_ref = torch.fx.symbolic_trace(g, concrete_args={"y": torch.fx._symbolic_trace.PH})
    assert gph.code == gph_ref.code

    def h(x, flag):  # None specializes through torch.fx._symbolic_trace._assert_is_none
        return x + 1 if flag is None else x
    gnone = tc.fx.symbolic_trace(h, concrete_args={"flag": None})
    gnone_ref = torch.fx.symbolic_trace(h, concrete_args={"flag": None})
    assert gnone.code == gnone_ref.code
    with pytest.raises(AssertionError, match="flag has been specialized to have value None"):
        gnone(tc.ones(2), 3)


@pytest.mark.parametrize("body,error", [("bool", "TraceError"), ("len", "RuntimeError"), ("iter", "TraceError")])
def test_untraceable_programs_raise_as_torch(body, error):
    def f(lib):
        def fn(x):
            if body == "bool":
                return x if x.sum() > 0 else -x
            if body == "len":
                return len(x)
            return [y for y in x]
        return fn
    with pytest.raises(Exception) as want:
        torch.fx.symbolic_trace(f(torch))
    with pytest.raises(Exception) as got:
        tc.fx.symbolic_trace(f(tc))
    assert type(got.value).__name__ == type(want.value).__name__ == error
    assert str(got.value) == str(want.value)


def test_tensor_operands_and_unpacking_and_wrap():
    def build(lib):
        class M(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.register_buffer("b", lib.ones(4))
                self.c = lib.full((4,), 2.0)

            def forward(self, x):
                a, z = x.chunk(2)
                return (self.b + a, self.b > z, self.c * x, lib.ones(4) / x, self.b.add(z), 2 - x,
                        _wrapped_helper(a, 3), self.b[z.long()])
        return M()
    ref, ours = build(torch), build(tc)
    gref, gm = torch.fx.symbolic_trace(ref), tc.fx.symbolic_trace(ours)
    assert gm.code == gref.code
    assert 'wrap("test_fx__wrapped_helper")' in gm.code
    x = np.array([[1.0, 2.0, 0.0, 3.0], [0.0, 1.0, 2.0, 3.0]])
    for got, want in zip(gm(to_tidal(x).float()), gref(torch.tensor(x).float())):
        assert_close(got, want)


def test_custom_tracer_traces_through_library_modules():
    class Deep(tc.fx.Tracer):
        def is_leaf_module(self, m, name):
            return False

    class TorchDeep(torch.fx.Tracer):
        def is_leaf_module(self, m, name):
            return False

    def build(lib):
        return lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.ReLU(), lib.nn.Linear(4, 2))
    ref, ours = _pair(build)
    gref, gm = torch.fx.GraphModule(ref, TorchDeep().trace(ref)), tc.fx.GraphModule(ours, Deep().trace(ours))
    assert [(op, name) for op, name, _ in _nodes(gm)] == [(op, name) for op, name, _ in _nodes(gref)]
    assert [n.target for n in gm.graph.nodes if n.op == "get_attr"] == ["0.weight", "0.bias", "2.weight", "2.bias"]
    x = np.random.default_rng(4).standard_normal((5, 3)).astype(np.float32)
    assert_close(gm(to_tidal(x)), gref(torch.tensor(x)), rtol=1e-5, atol=1e-6)


def _hand_graph(lib):
    graph = lib.fx.Graph()
    a = graph.placeholder("a")
    b = graph.placeholder("b", default_value=2.0)
    s = graph.call_function(lib.add, (a, b))
    t = graph.call_method("sum", (s,), {"dim": 0})
    dead = graph.call_function(operator.neg, (a,))
    graph.output((t, s))
    return graph, (a, b, s, t, dead)


def test_hand_built_graph_edit_lint_and_dce():
    gref, nref = _hand_graph(torch)
    g, (a, b, s, t, dead) = _hand_graph(tc)
    assert str(g) == str(gref)
    assert list(a.users) == [s, dead] and s.all_input_nodes == [a, b] and s.prev is b and s.next is t
    assert g.eliminate_dead_code() is gref.eliminate_dead_code() is True
    assert str(g) == str(gref) and len(g.nodes) == 5
    with pytest.raises(RuntimeError) as got:
        g.erase_node(s)
    with pytest.raises(RuntimeError) as want:
        gref.erase_node(nref[2])
    assert str(got.value) == str(want.value)
    with g.inserting_before(s):
        m = g.call_function(operator.mul, (a, a))
    s.replace_input_with(a, m)
    assert s.args == (m, b) and a.users.keys() == {m}
    gm = tc.fx.GraphModule(tc.nn.Module(), g)
    assert gm.code.splitlines()[4:6] == ["    mul = a * a;  a = None", "    add = torch.add(mul, b);  mul = b = None"]
    total, sums = gm(tc.tensor([[1.0, 2.0]]))
    np.testing.assert_allclose(sums.numpy(), [[3.0, 6.0]])
    np.testing.assert_allclose(total.numpy(), [3.0, 6.0])
    s.prepend(t)  # t now comes before the value it reads
    with pytest.raises(RuntimeError, match="used before it has been defined"):
        g.lint()


def test_shape_prop_records_shapes_and_dtypes():
    ref, ours = _pair(_cnn)
    gref, gm = torch.fx.symbolic_trace(ref), tc.fx.symbolic_trace(ours)
    x = np.zeros((2, 2, 8, 8), np.float32)
    TorchShapeProp(gref).propagate(torch.tensor(x))
    ShapeProp(gm).propagate(to_tidal(x))
    meta = [(n.name, tuple(n.meta["tensor_meta"].shape), str(n.meta["tensor_meta"].dtype).split(".")[-1])
            for n in gm.graph.nodes]
    want = [(n.name, tuple(n.meta["tensor_meta"].shape), str(n.meta["tensor_meta"].dtype).split(".")[-1])
            for n in gref.graph.nodes]
    assert meta == want
    assert gm.graph.find_nodes(op="call_module", target="conv1")[0].meta["tensor_meta"].stride == (256, 64, 8, 1)


def test_copy_pickle_readable_and_print_tabular(capsys):
    _, ours = _pair(_mlp)
    gm = tc.fx.symbolic_trace(ours)
    x = tc.randn(2, 12)
    for other in (copy.deepcopy(gm), pickle.loads(pickle.dumps(gm))):
        assert other.code == gm.code and other.fc1 is not gm.fc1
        for got, want in zip(other(x), gm(x)):
            assert_close(got, want)
    gref = torch.fx.symbolic_trace(_mlp(torch))
    assert gm.print_readable(print_output=False) == gref.print_readable(print_output=False)
    assert gm.print_readable(print_output=False).startswith("class MLP(torch.nn.Module):\n    def forward(self, x")
    import importlib.util
    import sys
    if importlib.util.find_spec("tabulate") is None:  # torch's message and error when it is missing
        with pytest.raises(ModuleNotFoundError):
            gm.graph.print_tabular()
        assert "relies on the library `tabulate`" in capsys.readouterr().out
    calls: list = []  # and what it hands tabulate when present (a stand-in module records the table)
    fake = type(sys)("tabulate")
    fake.tabulate = lambda rows, headers: calls.append((headers, [[str(c) for c in row] for row in rows])) or ""
    saved = sys.modules.get("tabulate")
    sys.modules["tabulate"] = fake
    try:
        gm.graph.print_tabular()
        gref.graph.print_tabular()
    finally:
        if saved is None:
            del sys.modules["tabulate"]
        else:
            sys.modules["tabulate"] = saved
    ours_table, torch_table = calls
    assert ours_table[0] == torch_table[0] == ["opcode", "name", "target", "args", "kwargs"]
    assert [row[:2] for row in ours_table[1]] == [row[:2] for row in torch_table[1]]
    assert [row[3:] for row in ours_table[1]] == [row[3:] for row in torch_table[1]]


def test_import_torch_fx_under_install():
    import sys
    import subprocess
    code = ("import sys, tidal.compat; tidal.compat.install()\n"
            "print('tidal.fx' in sys.modules)\n"  # not loaded until torch.fx is asked for
            "import torch, torch.fx\nfrom torch.fx import symbolic_trace, GraphModule\n"
            "from torch.fx.passes.shape_prop import ShapeProp\n"
            "gm = symbolic_trace(torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.ReLU()))\n"
            "print(type(gm).__mro__[1] is GraphModule, gm(torch.ones(1, 2)).shape)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:2] == ["False", "True torch.Size([1, 2])"]


def test_subgraph_rewriter_replace_pattern():
    def build(lib):
        class M(lib.nn.Module):
            def forward(self, x, w1, w2):
                m1 = lib.cat([w1, w2]).sum()
                m2 = lib.cat([w1, w2]).sum()
                return x + lib.max(m1) + lib.max(m2)
        return M()

    def rewrite(lib, gm):
        return lib.fx.replace_pattern(gm, lambda w1, w2: lib.cat([w1, w2]).sum(),
                                      lambda w1, w2: lib.stack([w1, w2]))
    gref, gm = torch.fx.symbolic_trace(build(torch)), tc.fx.symbolic_trace(build(tc))
    mref, ms = rewrite(torch, gref), rewrite(tc, gm)
    assert gm.code == gref.code and len(ms) == len(mref) == 2
    assert [sorted((k.name, v.name) for k, v in m.nodes_map.items()) for m in ms] == \
        [sorted((k.name, v.name) for k, v in m.nodes_map.items()) for m in mref]
    args = [np.arange(3.0), np.array([1.0, 5.0, 2.0]), np.array([4.0, 0.0, 1.0])]
    assert_close(gm(*map(to_tidal, args)), gref(*map(torch.tensor, args)))

    def chained(lib):  # the second match takes the first one's result, which the rewrite replaced
        def fn(x, y):
            a = lib.relu(x + y)
            return a * 2 + lib.relu(a + x)
        return fn
    gref, gm = torch.fx.symbolic_trace(chained(torch)), tc.fx.symbolic_trace(chained(tc))
    torch.fx.replace_pattern(gref, lambda a, b: torch.relu(a + b), lambda a, b: torch.sigmoid(b - a))
    tc.fx.replace_pattern(gm, lambda a, b: tc.relu(a + b), lambda a, b: tc.sigmoid(b - a))
    assert gm.code == gref.code
    assert_close(gm(tc.ones(2), tc.zeros(2)), gref(torch.ones(2), torch.zeros(2)))


def test_annotations_varargs_and_retrace():
    src = ("class M(lib.nn.Module):\n"
           "    def __init__(self):\n        super().__init__()\n        self.l = lib.nn.Linear(2, 2)\n"
           "    def forward(self, x: lib.Tensor, k: int = 3, *args) -> lib.Tensor:\n"
           "        return self.l(x) * k\n")
    mods = {}
    for name, lib in (("torch", torch), ("tidal", tc)):
        scope = {"lib": lib}
        exec(compile(src, "<fx-test>", "exec", dont_inherit=True), scope)  # real annotations, not strings
        mods[name] = scope["M"]()
    load_from_torch(mods["tidal"], mods["torch"])
    gref, gm = torch.fx.symbolic_trace(mods["torch"]), tc.fx.symbolic_trace(mods["tidal"])
    assert gm.code == gref.code and str(gm.graph) == str(gref.graph)
    assert "def forward(self, x : torch.Tensor, k : int = 3, *args):" in gm.code
    again, again_ref = tc.fx.symbolic_trace(gm), torch.fx.symbolic_trace(gref)
    assert again.code == again_ref.code
    assert_close(again(tc.ones(1, 2), 2), gref(torch.ones(1, 2), 2), rtol=1e-6, atol=1e-6)


def _attention(lib):
    import math
    F = lib.nn.functional

    class Attn(lib.nn.Module):
        def __init__(self, d=8, h=2):
            super().__init__()
            self.h = h
            self.qkv = lib.nn.Linear(d, 3 * d)
            self.proj = lib.nn.Linear(d, d)
            self.ln = lib.nn.LayerNorm(d)
            self.pos = lib.nn.Parameter(lib.linspace(0, 1, 32).reshape(1, 4, 8))

        def forward(self, x):
            B, T, C = x.shape
            x = x + self.pos[:, :T]
            q, k, v = self.qkv(self.ln(x)).split(C, dim=2)
            q = q.view(B, T, self.h, C // self.h).transpose(1, 2)
            k = k.view(B, T, self.h, C // self.h).transpose(1, 2)
            v = v.view(B, T, self.h, C // self.h).transpose(1, 2)
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = att.masked_fill(~lib.tril(lib.ones_like(att)).bool(), float("-inf"))
            y = (F.softmax(att, dim=-1) @ v).transpose(1, 2).contiguous().view(B, T, C)
            y = F.dropout(y, p=0.1, training=self.training)
            return x + self.proj(y).to(lib.float32)
    return Attn().eval()


def test_attention_block_traces_as_torch():
    ref, ours = _pair(_attention)
    gref, gm = torch.fx.symbolic_trace(ref), tc.fx.symbolic_trace(ours)
    assert _nodes(gm) == _nodes(gref)
    assert 'torch.fx._symbolic_trace.wrap("math_sqrt")' in gm.code and "masked_fill(invert, -inf)" in gm.code
    x = np.random.default_rng(5).standard_normal((2, 4, 8)).astype(np.float32)
    assert_close(gm(to_tidal(x)), gref(torch.tensor(x)), rtol=1e-5, atol=1e-5)


def _neg_sigmoid_swap(lib):
    """torch.fx's documented Transformer example: sigmoid and neg trade places."""
    class Swap(lib.fx.Transformer):
        def call_function(self, target, args, kwargs):
            if target == lib.sigmoid:
                return lib.neg(*args, **kwargs)
            return super().call_function(target, args, kwargs)

        def call_method(self, target, args, kwargs):
            if target == "neg":
                call_self, *args_tail = args
                return call_self.sigmoid(*args_tail, **kwargs)
            return super().call_method(target, args, kwargs)
    return Swap


def test_documented_transformer_and_operator_spellings():
    def f(lib):
        def fn(x, y):
            x = x.clone()
            x += y
            z = lib.sigmoid(x).neg() + abs(y)
            return z, lib.dropout(x, 0.0, False), lib.zeros(x.shape[0], dtype=x.dtype), y.to(lib.float64)
        return fn
    gref, gm = torch.fx.symbolic_trace(f(torch)), tc.fx.symbolic_trace(f(tc))
    assert gm.code == gref.code and "_operator_abs(y)" in gm.code
    sref, sw = _neg_sigmoid_swap(torch)(gref).transform(), _neg_sigmoid_swap(tc)(gm).transform()
    assert sw.code == sref.code and "neg = torch.neg(add)" in sw.code
    x, y = np.array([-1.0, 0.5, 2.0]), np.array([0.25, -3.0, 1.0])
    for got, want in zip(sw(to_tidal(x), to_tidal(y)), sref(torch.tensor(x), torch.tensor(y))):
        assert_close(got, want)


def test_node_arguments_are_read_only():
    gref = torch.fx.symbolic_trace(lambda x: torch.cat([x, x], dim=0))
    gm = tc.fx.symbolic_trace(lambda x: tc.cat([x, x], dim=0))
    cat, cat_ref = list(gm.graph.nodes)[1], list(gref.graph.nodes)[1]
    for mutate in (lambda n: n.args[0].append(n), lambda n: n.kwargs.update(dim=1)):
        with pytest.raises(TypeError) as got:
            mutate(cat)
        with pytest.raises(TypeError) as want:
            mutate(cat_ref)
        assert str(got.value) == str(want.value)
    cat.kwargs = {"dim": 1}  # assigning a changed copy is the way
    cat.args = ([cat.args[0][0]] * 3,)
    gm.recompile()
    assert "torch.cat([x, x, x], dim = 1)" in gm.code and tuple(gm(tc.ones(2, 2)).shape) == (2, 6)
    assert copy.deepcopy(gm).code == gm.code


def test_keyword_only_and_variadic_parameters():
    def fn(x, *args, scale=2.0, **kw):
        return x * scale + args[0], kw

    def build(lib):
        class M(lib.nn.Module):
            def forward(self, x, *, bias):
                return x + bias
        return M()
    for traced in (fn, build):
        gref = torch.fx.symbolic_trace(traced if traced is fn else build(torch))
        gm = tc.fx.symbolic_trace(traced if traced is fn else build(tc))
        assert gm.code == gref.code and str(gm.graph) == str(gref.graph)
    assert_close(gm(tc.ones(2), tc.full((2,), 3.0)), gref(torch.ones(2), torch.full((2,), 3.0)))


def _calls(lib):
    """Common torch functions applied to a traced value: each must become the node torch records."""
    F = lib.nn.functional
    return {
        "einsum": lambda x: lib.einsum("ij,jk->ik", x, x), "stack": lambda x: lib.stack([x, x]),
        "split": lambda x: lib.split(x, 1), "where": lambda x: lib.where(x > 0, x, lib.zeros_like(x)),
        "max": lambda x: lib.max(x, dim=0), "clamp": lambda x: lib.clamp(x, min=0),
        "log_softmax": lambda x: F.log_softmax(x, dim=-1), "normalize": lambda x: F.normalize(x, dim=-1),
        "mse": lambda x: F.mse_loss(x, x), "ce": lambda x: F.cross_entropy(x, lib.tensor([0, 1])),
        "interpolate": lambda x: F.interpolate(x[None, None], scale_factor=2),
        "sdpa": lambda x: F.scaled_dot_product_attention(x[None], x[None], x[None]),
        "topk": lambda x: lib.topk(x, 1), "unbind": lambda x: lib.unbind(x), "arange": lambda x: lib.arange(x.size(0)),
        "linalg": lambda x: lib.linalg.norm(x), "fft": lambda x: lib.fft.fft(x).real,
        "aten_spelling": lambda x: lib.layer_norm(x, (2,)) + lib.dropout(x, 0.0, False),
    }


def test_common_functions_record_torchs_nodes():
    data = np.array([[1.0, -2.0], [0.5, 3.0]], np.float32)
    for (name, ours), theirs in zip(_calls(tc).items(), _calls(torch).values()):
        gm, gref = tc.fx.symbolic_trace(ours), torch.fx.symbolic_trace(theirs)
        assert [(n.op, n.name) for n in gm.graph.nodes] == [(n.op, n.name) for n in gref.graph.nodes], name
        got, want = gm(to_tidal(data)), gref(torch.tensor(data))
        for g, w in zip(got if isinstance(got, tuple) else [got], want if isinstance(want, tuple) else [want]):
            assert_close(g, w, rtol=1e-5, atol=1e-5)


def test_tracer_subclass_makes_user_module_a_leaf():
    def build(lib):
        class Block(lib.nn.Module):
            def forward(self, x):
                return x.relu() * 2

        class Outer(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.block = Block()

            def forward(self, x):
                return self.block(x) + 1
        return Outer()

    def leafy(lib):
        class Leafy(lib.fx.Tracer):
            def is_leaf_module(self, m, name):
                return type(m).__name__ == "Block" or super().is_leaf_module(m, name)
        return Leafy()
    ref, ours = build(torch), build(tc)
    gref, g = leafy(torch).trace(ref), leafy(tc).trace(ours)
    assert str(g) == str(gref) and [n.op for n in g.nodes] == ["placeholder", "call_module", "call_function", "output"]
    gm = tc.fx.GraphModule(ours, g)
    assert type(gm.block).__name__ == "Block"
    assert_close(gm(tc.tensor([-1.0, 2.0])), torch.fx.GraphModule(ref, gref)(torch.tensor([-1.0, 2.0])))


def test_record_stack_traces_names_the_forward_line():
    class M(tc.nn.Module):
        def forward(self, x):
            y = x.sin()
            return y * 2

    tracer = tc.fx.Tracer()
    tracer.record_stack_traces = True
    graph = tracer.trace(M())
    gm = tc.fx.GraphModule(tracer.root, graph)
    sin = next(n for n in gm.graph.nodes if n.name == "sin")
    assert sin.stack_trace.splitlines()[-1].strip() == "y = x.sin()" and "in forward" in sin.stack_trace
    text = gm.print_readable(print_output=False)
    assert f"# File: {__file__}:" in text and "in forward, code: return y * 2" in text
    untraced = tc.fx.symbolic_trace(M())
    assert all(n.stack_trace is None for n in untraced.graph.nodes)
    assert "# No stacktrace found for following nodes" in untraced.print_readable(print_output=False)


def _insert_observers(lib, gm):
    class Observer(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("maxabs", lib.zeros(()))

        def forward(self, x):
            self.maxabs = lib.maximum(self.maxabs, x.detach().abs().max())
            return x
    for node in list(gm.graph.nodes):
        if node.op == "call_module" and isinstance(gm.get_submodule(node.target), lib.nn.Linear):
            name = f"obs_{node.name}"
            assert gm.add_submodule(name, Observer())
            with gm.graph.inserting_after(node):
                obs = gm.graph.call_module(name, (node,))
            node.replace_all_uses_with(obs, delete_user_cb=lambda user: user is not obs)
    gm.graph.lint()
    gm.recompile()
    return gm


def test_pass_inserting_observer_modules():
    def build(lib):
        return lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.ReLU(), lib.nn.Linear(4, 2))
    ref, ours = _pair(build)
    gref, gm = _insert_observers(torch, torch.fx.symbolic_trace(ref)), _insert_observers(tc, tc.fx.symbolic_trace(ours))
    assert gm.code == gref.code and str(gm) == str(gref)
    x = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    assert_close(gm(to_tidal(x)), gref(torch.tensor(x)), rtol=1e-5, atol=1e-5)
    assert list(gm.state_dict()) == list(gref.state_dict())
    assert_close(gm.obs__2.maxabs, gref.obs__2.maxabs, rtol=1e-5, atol=1e-6)
    assert gm.delete_submodule("obs__0") and not hasattr(gm, "obs__0") and not gm.delete_submodule("obs__0")


def test_graph_written_with_proxies():
    def build(lib):
        graph = lib.fx.Graph()
        x = lib.fx.Proxy(graph.placeholder("x"))
        graph.output((lib.relu(x) + x.sum() * 2).node)
        return lib.fx.GraphModule(lib.nn.Module(), graph)
    gm, gref = build(tc), build(torch)
    assert gm.code == gref.code
    assert_close(gm(tc.tensor([-1.0, 2.0])), gref(torch.tensor([-1.0, 2.0])))


def test_random_draws_on_the_worker_during_a_trace():
    # a trace patches math's functions (torch's autowrap); the VM's worker draws normal samples meanwhile
    def f(x):
        return x * math.log1p(2.0)
    sample = tidal.randn(4096)  # (queued: drawn on the worker, maybe while the trace below runs)
    traced = tidal.fx.symbolic_trace(f)
    np.testing.assert_allclose(traced(tidal.ones(2)).numpy(), np.full(2, math.log1p(2.0), np.float32), rtol=1e-6)
    values = sample.numpy()
    assert np.isfinite(values).all() and abs(values.std() - 1) < 0.1
    from tidal.ops.random import transforms as random_transforms
    wrapped = functools.wraps(math.log1p)(lambda x: math.log1p(x))  # what the patched math module holds
    np.testing.assert_array_equal(random_transforms.libm(wrapped, np.array([0.5, 1.0])),
                                  random_transforms.libm(math.log1p, np.array([0.5, 1.0])))

"""tidal.fx.passes.split_module against torch.fx.passes.split_module: the same module traced and split with
the same partition callback by both, compared by the generated code of the outer module and of every
`submod_N`, the qualname map, and the values (and gradients) the split module computes."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.fx
from torch.fx.passes.split_module import split_module as torch_split

import tidal
import tidal.compat as tc
from tidal.fx.passes.split_module import Partition, split_module
from nn_helpers import assert_close, load_from_torch, to_tidal


def _pair(build):
    torch.manual_seed(0)
    ref, ours = build(torch), build(tc)
    load_from_torch(ours, ref)
    return ref, ours


def _example(lib):
    """torch's docstring example: a parameter, a shared Linear, clamps."""
    class MyModule(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.param = lib.nn.Parameter(lib.rand(3, 4))
            self.linear = lib.nn.Linear(4, 5)

        def forward(self, x, y):
            z = self.linear(x + self.param).clamp(min=0.0, max=1.0)
            w = self.linear(y).clamp(min=0.0, max=1.0)
            return z + w
    return MyModule()


def _nested(lib):
    """Dotted submodule paths, a buffer, a default argument, a method call, several outputs."""
    class Block(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = lib.nn.Linear(6, 6)
            self.register_buffer("shift", lib.arange(6.0) / 10)

        def forward(self, x):
            return lib.tanh(self.fc(x)) + self.shift

    class Net(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = lib.nn.Sequential(Block(), Block())
            self.head = lib.nn.Linear(6, 2)

        def forward(self, x, scale: float = 2.0):
            h = self.layers(x) * scale
            g = h.relu().sum(dim=1, keepdim=True)
            return self.head(h - g), g
    return Net()


def _counter(n):
    """torch's docstring callback: node i goes to partition i % n."""
    state = [0]

    def callback(node):
        p = state[0] % n
        state[0] += 1
        return p
    return callback


def _by_name(assign: dict, default: int):
    return lambda node: assign.get(node.name, default)


def _split_both(build, make_callback, **kwargs):
    ref, ours = _pair(build)
    gref, gm = torch.fx.symbolic_trace(ref), tc.fx.symbolic_trace(ours)
    qref, qours = {}, {}
    sref = torch_split(gref, ref, make_callback(), qualname_map=qref, **kwargs)
    sours = split_module(gm, ours, make_callback(), qualname_map=qours, **kwargs)
    return sref, sours, qref, qours


def _assert_same_split(sref, sours, qref, qours):
    assert sours.code == sref.code
    assert str(sours.graph) == str(sref.graph)
    assert qours == qref
    ref_subs = {name: m.code for name, m in sref.named_modules() if isinstance(m, torch.fx.GraphModule) and name}
    our_subs = {name: m.code for name, m in sours.named_modules() if isinstance(m, tidal.fx.GraphModule) and name}
    assert our_subs == ref_subs and ref_subs
    assert [n for n, _ in sours.named_parameters()] == [n for n, _ in sref.named_parameters()]
    assert sours.meta["partition_names"] == sref.meta["partition_names"]


def test_docstring_example_round_robin_code_and_values():
    sref, sours, qref, qours = _split_both(_example, lambda: _counter(3))
    _assert_same_split(sref, sours, qref, qours)
    assert "submod_1 = self.submod_1(getitem, getitem_1)" in sours.code
    assert isinstance(sours.submod_0, tidal.fx.GraphModule) and type(sours).__name__ == "GraphModule"
    x, y = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32)
    assert_close(sours(to_tidal(x), to_tidal(y)), sref(torch.tensor(x), torch.tensor(y)), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kwargs", [{}, {"keep_original_order": True}, {"keep_original_node_name": True},
                                    {"keep_original_input_name": False}, {"partition_affix": "pp"},
                                    {"tuple_return": True}])
def test_nested_module_options_match_torch(kwargs):
    # partitions first seen as 1, 0, 2: the outer graph orders them by their dependencies
    sref, sours, qref, qours = _split_both(_nested, lambda: _by_name(
        {"layers_0_fc": 1, "tanh": 1, "layers_1_fc": 0, "tanh_1": 0, "add_1": 0, "head": 2}, 0), **kwargs)
    _assert_same_split(sref, sours, qref, qours)
    x = np.random.default_rng(1).standard_normal((4, 6)).astype(np.float32)
    for got, want in zip(sours(to_tidal(x)), sref(torch.tensor(x))):
        assert_close(got, want, rtol=1e-5, atol=1e-6)
    for got, want in zip(sours(to_tidal(x), 0.5), sref(torch.tensor(x), 0.5)):
        assert_close(got, want, rtol=1e-5, atol=1e-6)


def test_split_module_trains_the_original_parameters():
    ref, ours = _pair(_nested)
    callback = _by_name({"head": 1, "relu": 1, "sum_1": 1, "sub": 1}, 0)
    sref = torch_split(torch.fx.symbolic_trace(ref), ref, callback)
    sours = split_module(tc.fx.symbolic_trace(ours), ours, callback)
    assert sours.submod_0.layers_1_fc.weight is ours.layers[1].fc.weight  # the modules are shared, not copied
    x = np.random.default_rng(2).standard_normal((3, 6)).astype(np.float32)
    out, g = sours(to_tidal(x))
    (out.square().sum() + g.sum()).backward()
    out_r, g_r = sref(torch.tensor(x))
    (out_r.square().sum() + g_r.sum()).backward()
    assert_close(ours.layers[1].fc.weight.grad, ref.layers[1].fc.weight.grad, rtol=1e-4, atol=1e-5)
    assert_close(ours.head.bias.grad, ref.head.bias.grad, rtol=1e-4, atol=1e-5)


def test_function_with_single_partition_and_passthrough_output():
    def f(lib):
        def fn(x, y):
            return (x * 2).sin() + y, y
        return fn
    gref, gm = torch.fx.symbolic_trace(f(torch)), tc.fx.symbolic_trace(f(tc))
    sref, sours = torch_split(gref, gref, lambda n: 0), split_module(gm, gm, lambda n: 0)
    assert sours.code == sref.code and sours.submod_0.code == sref.submod_0.code
    x = np.arange(6.0).reshape(2, 3)
    for got, want in zip(sours(to_tidal(x), to_tidal(x)), sref(torch.tensor(x), torch.tensor(x))):
        assert_close(got, want)


def test_cycle_between_partitions_raises():
    def fn(x):
        a = x + 1  # partition 0
        b = a * 2  # partition 1
        return b - a  # partition 0 again: reads b, while 1 reads a
    gref, gm = torch.fx.symbolic_trace(fn), tc.fx.symbolic_trace(fn)
    callback = _by_name({"mul": 1}, 0)
    with pytest.raises(RuntimeError, match="cycle exists between partitions!") as want:
        torch_split(gref, gref, callback)
    with pytest.raises(RuntimeError, match="cycle exists between partitions!") as got:
        split_module(gm, gm, callback)
    assert type(got.value) is type(want.value)


def test_partition_record_and_compat_import_path():
    p = Partition("3")
    assert p.submod_name == "submod_3" and repr(p) == repr(torch.fx.passes.split_module.Partition("3"))
    assert tc.fx.passes.split_module.split_module is split_module
    sub = tidal.fx.symbolic_trace(lambda x: x.relu() + 1)
    assert tidal.fx.GraphModule(tidal.nn.Module(), sub.graph).meta == {}

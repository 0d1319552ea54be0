"""How a traced program's torch.nn.functional calls are recorded, against torch.fx: torch's wrappers record
their own argument lists (`dropout(x, p = 0.1, training = True, inplace = False)`), its C functions read
`torch._C._nn.gelu`, F.sigmoid becomes `x.sigmoid()`, and F.relu / torch.relu keep their spellings. Compared
by generated code, graph text, node arguments and values."""
import numpy as np
import pytest
import torch
import torch.fx
import torch.nn.functional as TF
from torch.nn.functional import relu as torch_bare_relu

import tidal
import tidal.compat as tc
from nn_helpers import assert_close, load_from_torch, to_tidal

OF = tc.nn.functional
ours_bare_relu = OF.relu


def _program(lib, F, bare_relu):
    def f(x, w):
        a = F.relu(x)
        b = F.gelu(a)
        c = F.softmax(F.silu(b), dim=-1)
        d = F.dropout(c, 0.1, training=False)
        e = F.layer_norm(F.linear(d, w), (3,))
        g = F.normalize(F.log_softmax(F.leaky_relu(e), 1))
        h = F.max_pool1d(F.avg_pool1d(g.unsqueeze(0), 1), 1)
        i = F.interpolate(F.pad(h, (1, 1), value=0.5), scale_factor=2.0)
        j = F.hardtanh(F.elu(F.tanh(F.sigmoid(i))))
        k = F.mse_loss(F.softplus(j), j) + F.cross_entropy(x, x.argmax(1), label_smoothing=0.1)
        m = lib.relu(x) + lib.sigmoid(x) + lib.nn.functional.relu(x) + bare_relu(x) + lib.tanh(x)
        n = F.embedding(x.long().abs(), w).sum() + F.conv1d(g.unsqueeze(0), w.unsqueeze(-1)).sum()
        o = F.batch_norm(x, None, None, training=True).sum() + F.one_hot(x.long().abs(), 4).sum()
        return k + m.sum() + n + o + F.scaled_dot_product_attention(x[None], x[None], x[None]).sum()
    return f


def _traced():
    return (torch.fx.symbolic_trace(_program(torch, TF, torch_bare_relu)),
            tc.fx.symbolic_trace(_program(tc, OF, ours_bare_relu)))


def test_code_and_graph_text_match_torch():
    gref, gm = _traced()
    assert gm.code == gref.code
    assert str(gm.graph) == str(gref.graph)
    assert "torch._C._nn.gelu(relu)" in gm.code and "sigmoid = interpolate.sigmoid()" in gm.code
    assert "relu_1 = torch.relu(x)" in gm.code and "torch.nn.functional.relu(x, inplace = False)" in gm.code
    x = np.linspace(0.1, 0.9, 9, dtype=np.float32).reshape(3, 3)
    w = np.linspace(-0.5, 0.5, 9, dtype=np.float32).reshape(3, 3)
    assert_close(gm(to_tidal(x), to_tidal(w)), gref(torch.tensor(x), torch.tensor(w)), rtol=1e-4, atol=1e-5)


def test_node_arguments_are_torch_s():
    gref, gm = _traced()
    for ref_node, node in zip(gref.graph.nodes, gm.graph.nodes):
        assert (node.op, node.name) == (ref_node.op, ref_node.name)
        if node.op == "call_function" and node.target.__module__ != "_operator":
            assert len(node.args) == len(ref_node.args), node.name
            assert list(node.kwargs) == list(ref_node.kwargs), node.name
    dropout = next(n for n in gm.graph.nodes if n.name == "dropout")
    assert dropout.target is OF.dropout and dropout.kwargs == {"p": 0.1, "training": False, "inplace": False}
    relu = next(n for n in gm.graph.nodes if n.name == "relu")
    assert relu.target is OF.relu and relu.kwargs == {"inplace": False}


def test_module_with_functional_calls_splits_as_torch():
    from torch.fx.passes.split_module import split_module as torch_split

    from tidal.fx.passes.split_module import split_module

    def build(lib):
        F = lib.nn.functional

        class Net(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = lib.nn.Conv2d(2, 3, 3)
                self.fc = lib.nn.Linear(3, 2)

            def forward(self, x):
                x = F.max_pool2d(F.relu(self.conv(x)), 2)
                x = F.adaptive_avg_pool2d(x, 1).flatten(1)
                return F.log_softmax(F.dropout(self.fc(x), p=0.2, training=self.training), dim=1)
        return Net()
    torch.manual_seed(0)
    ref, ours = build(torch), build(tc)
    load_from_torch(ours, ref)
    ref.eval(), ours.eval()
    gref, gm = torch.fx.symbolic_trace(ref), tc.fx.symbolic_trace(ours)
    assert gm.code == gref.code

    def callback(node):
        return 0 if node.name in ("conv", "relu", "max_pool2d") else 1
    sref, sours = torch_split(gref, ref, callback), split_module(gm, ours, callback)
    assert [sours.submod_0.code, sours.submod_1.code] == [sref.submod_0.code, sref.submod_1.code]
    x = np.random.default_rng(0).standard_normal((2, 2, 8, 8)).astype(np.float32)
    assert_close(sours(to_tidal(x)), sref(torch.tensor(x)), rtol=1e-5, atol=1e-6)


def test_a_call_torch_would_refuse_is_recorded_as_made():
    def f(x):
        return tc.nn.functional.relu(x, True, "extra")  # too many arguments
    gm = tc.fx.symbolic_trace(f)
    node = next(n for n in gm.graph.nodes if n.op == "call_function")
    assert node.args[1:] == (True, "extra")
    with pytest.raises(TypeError):
        gm(tidal.ones(2))

"""tidal.fx.passes.graph_manipulation against torch's: node sizes in bytes from ShapeProp's metadata (with a
called submodule's parameters), the missing-metadata error, and replacing the target of matching nodes."""
import operator

import numpy as np
import pytest
import torch
import torch.fx
from torch.fx.passes import graph_manipulation as T

import tidal
import tidal.compat as tc
from tidal.fx.passes import graph_manipulation as O
import test_fx as TF
from nn_helpers import load_from_torch


def test_sizes_match_torch():
    torch.manual_seed(0)
    ref, ours = TF._cnn(torch), TF._cnn(tc)
    load_from_torch(ours, ref)
    ref.eval(), ours.eval()
    gref, gm = torch.fx.symbolic_trace(ref), tc.fx.symbolic_trace(ours)
    x = np.random.default_rng(0).standard_normal((2, 2, 8, 8)).astype(np.float32)
    T.get_size_of_all_nodes(gref, [torch.tensor(x)])
    O.get_size_of_all_nodes(gm, [tidal.tensor(x)])
    want = [(n.name, tuple(n.size_bytes)) for n in gref.graph.nodes if n.op != "output"]
    got = [(n.name, tuple(n.size_bytes)) for n in gm.graph.nodes if n.op != "output"]
    assert got == want and dict(got)["conv1"][1] > dict(got)["conv1"][0]
    bare = tc.fx.symbolic_trace(lambda a: a + 1)
    node = next(iter(bare.graph.nodes))
    with pytest.raises(RuntimeError, match="has no tensor metadata associated with it"):
        O.get_size_of_node(bare, node)


def test_replace_target_nodes_with_matches_torch():
    def f(lib):
        def fn(a, b):
            return (a + b) * (a + 1)
        return fn
    gref, gm = torch.fx.symbolic_trace(f(torch)), tc.fx.symbolic_trace(f(tc))
    T.replace_target_nodes_with(gref, "call_function", operator.add, "call_function", operator.sub)
    O.replace_target_nodes_with(gm, "call_function", operator.add, "call_function", operator.sub)
    assert gm.code == gref.code and "a - b" in gm.code
    assert gm(tidal.tensor([3.0]), tidal.tensor([1.0])).item() == 4.0

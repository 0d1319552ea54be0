"""tidal.fx.experimental.const_fold against torch's: the attribute-only part of a traced module folded into
`_FX_CONST_FOLDED_ATTRS` on the first call; compared by the folded and constant modules' code and by values."""
import numpy as np
import torch
import torch.fx
from torch.fx.experimental.const_fold import split_const_subgraphs as torch_fold

import tidal
import tidal.compat as tc
from tidal.fx.experimental.const_fold import FoldedGraphModule, get_unique_attr_name_in_module, split_const_subgraphs
from nn_helpers import assert_close, load_from_torch


def _build(lib):
    class M(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = lib.nn.Parameter(lib.randn(3, 3))
            self.b = lib.nn.Parameter(lib.randn(3))
            self.register_buffer("s", lib.tensor([2.0, 3.0, 4.0]))
            self.lin = lib.nn.Linear(3, 3)

        def forward(self, x):
            wt = self.w.t() * self.s  # these three only read attributes: folded
            bias = self.b + self.s.sum()
            y = self.lin(x @ wt + bias)
            return y.relu() + wt.sum()
    return M()


def _single(lib):
    class S(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = lib.nn.Parameter(lib.ones(2) * 3)

        def forward(self, x):
            return x * self.w.exp()
    return S()


def test_folding_matches_torch():
    torch.manual_seed(0)
    ref, ours = _build(torch), _build(tc)
    load_from_torch(ours, ref)
    fref, fours = torch_fold(ref), split_const_subgraphs(ours)
    assert isinstance(fours, FoldedGraphModule)
    assert fours.code == fref.code and "self._FX_CONST_FOLDED_ATTRS" in fours.code
    assert fours.const_subgraph_module.code == fref.const_subgraph_module.code
    x = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)
    assert not fours.has_folding_been_run
    assert_close(fours(tidal.tensor(x)), fref(torch.tensor(x)), rtol=1e-5, atol=1e-6)
    assert fours.has_folding_been_run and len(fours._FX_CONST_FOLDED_ATTRS) == 3
    assert_close(fours(tidal.tensor(x)), ours(tidal.tensor(x)), rtol=1e-5, atol=1e-6)


def test_single_output_skip_and_nothing_to_fold():
    torch.manual_seed(0)
    ref, ours = _single(torch), _single(tc)
    load_from_torch(ours, ref)
    fref, fours = torch_fold(ref), split_const_subgraphs(ours)
    assert fours.code == fref.code
    fours.run_folding()
    assert isinstance(fours._FX_CONST_FOLDED_ATTRS, tidal.nn.Parameter)
    assert_close(fours(tidal.ones(2)), fref(torch.ones(2)), rtol=1e-6, atol=1e-6)
    kept_ref = torch_fold(ref, skip_folding_node_fn=lambda n: n.name == "exp")
    kept = split_const_subgraphs(ours, skip_folding_node_fn=lambda n: n.name == "exp")
    assert kept.code == kept_ref.code and kept.const_subgraph_module is None

    class Plain(tc.nn.Module):
        def forward(self, x):
            return x * 2
    plain = split_const_subgraphs(Plain())
    assert isinstance(plain, FoldedGraphModule) and plain.const_subgraph_module is None
    assert get_unique_attr_name_in_module(plain, "1 attr") == "_1_attr"
    plain._1_attr = 1
    assert get_unique_attr_name_in_module(plain, "1 attr") == "_1_attr_1"

"""tidal.fx.passes.split_utils.split_by_tags against torch's: the same traced module, nodes tagged alike,
compared by the code of the split module and of each component, the fqn mapping, values, and the errors."""
import numpy as np
import pytest
import torch
import torch.fx
from torch.fx.passes.split_utils import split_by_tags as torch_split

import tidal
import tidal.compat as tc
from tidal.fx.passes.split_utils import getattr_recursive, split_by_tags
from nn_helpers import assert_close, load_from_torch


def _module(lib):
    class SimpleModule(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.linear1 = lib.nn.Linear(3, 4)
            self.linear2 = lib.nn.Linear(3, 4)
            self.blocks = lib.nn.ModuleList([lib.nn.Linear(4, 4)])
            self.scale = lib.nn.Parameter(lib.ones(4) * 2)

        def forward(self, in1, in2):
            r1 = self.linear1(in1)
            r2 = self.linear2(in2)
            r3 = lib.cat([r1, r2])
            return self.blocks[0](r3) * self.scale, r1
    return SimpleModule()


def _tagged(lib, model):
    gm = lib.fx.symbolic_trace(model)
    for n in gm.graph.nodes:
        if n.op not in ("placeholder", "output", "get_attr"):
            n.tag = "ro" if n.name == "linear1" else "main"
    return gm


@pytest.mark.parametrize("return_tuple", [False, True])
def test_split_matches_torch(return_tuple):
    torch.manual_seed(0)
    ref, ours = _module(torch), _module(tc)
    load_from_torch(ours, ref)
    sref, mref = torch_split(_tagged(torch, ref), ["ro", "main"], return_fqn_mapping=True, return_tuple=return_tuple)
    sours, mours = split_by_tags(_tagged(tc, ours), ["ro", "main"], return_fqn_mapping=True,
                                 return_tuple=return_tuple)
    assert sours.code == sref.code
    assert sours.ro.code == sref.ro.code and sours.main.code == sref.main.code
    assert mours == mref
    x, y = np.random.default_rng(0).standard_normal((2, 2, 3)).astype(np.float32)
    for got, want in zip(sours(tidal.tensor(x), tidal.tensor(y)), sref(torch.tensor(x), torch.tensor(y))):
        assert_close(got, want, rtol=1e-5, atol=1e-6)
    assert getattr_recursive(ours, "blocks.0.weight") is ours.blocks[0].weight
    assert getattr_recursive(ours, "blocks.5") is None


def test_errors_match_torch():
    messages = []
    for lib, split in ((torch, torch_split), (tc, split_by_tags)):
        gm = _tagged(lib, _module(lib))
        for n in gm.graph.nodes:
            if n.name == "linear1":
                del n.tag
        with pytest.raises(AssertionError) as info:
            split(gm, ["ro", "main"])
        messages.append(str(info.value))
        gm = _tagged(lib, _module(lib))
        with pytest.raises(AssertionError) as info:
            split(gm, ["main", "ro"])  # linear1 (ro) feeds main, which comes first
        messages.append(str(info.value))
    assert messages[:2] == messages[2:]

"""torch.fx.annotate against torch's: a traced value's type shows in the graph text and the generated code;
annotating twice raises torch's error; outside a trace the value passes through."""
import pytest
import torch
import torch.fx
from torch.fx.annotate import annotate as torch_annotate

import tidal
import tidal.compat as tc
from tidal.fx.annotate import annotate


def _program(lib, annotate_fn):
    def f(x):
        y = annotate_fn(x + 1, lib.Tensor)
        z = annotate_fn(y.sum(), float)
        return z
    return f


def test_annotations_match_torch():
    gref = torch.fx.symbolic_trace(_program(torch, torch_annotate))
    gm = tc.fx.symbolic_trace(_program(tc, annotate))
    assert gm.code == gref.code and "add : torch.Tensor = x + 1" in gm.code
    assert str(gm.graph) == str(gref.graph)
    assert gm(tidal.ones(2)).item() == 4.0
    assert annotate(3, int) == 3
    for lib, fn in ((torch, torch_annotate), (tc, annotate)):
        with pytest.raises(RuntimeError, match="Tried to annotate a value that already had a type on it"):
            lib.fx.symbolic_trace(lambda x: fn(fn(x + 1, int), int))

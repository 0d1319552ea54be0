"""torch.fx.passes.pass_manager (the older PassManager and its decorators) and annotate_getitem_nodes against
torch's: pass order, loops, constraint errors; getitem node types from typed container annotations."""
import typing
from typing import List, NamedTuple, Tuple

import pytest
import torch
import torch.fx
from torch.fx.passes import pass_manager as tpm
from torch.fx.passes.annotate_getitem_nodes import annotate_getitem_nodes as torch_annotate

import tidal.compat as tc
from tidal.fx.passes import pass_manager as opm
from tidal.fx.passes.annotate_getitem_nodes import annotate_getitem_nodes


def _run(mod):
    log = []

    def double(x):
        log.append("double")
        return x * 2

    def inc(x):
        log.append("inc")
        return x + 1

    @mod.inplace_wrapper
    def note(x):
        log.append(("note", x))

    looped = mod.loop_pass(inc, n_iter=3)
    until = mod.loop_pass(double, predicate=lambda v: v < 100)
    pm = mod.PassManager.build_from_passlist([double, looped, note])
    pm.add_pass(until)
    pm.add_constraint(mod.this_before_that_pass_constraint(double, note))
    out = [pm(1), list(log)]
    pm.replace_pass(double, inc)
    pm.remove_pass(["note"])
    out.append([p.__name__ for p in pm.passes])
    bad = mod.PassManager([note, double], [mod.these_before_those_pass_constraint(double, note.__wrapped__)])
    with pytest.raises(RuntimeError) as info:
        bad(1)
    out.append(str(info.value).replace(hex(id(note)), "X").replace(hex(id(double)), "Y").split(" at 0x")[0])
    with pytest.raises(AssertionError, match="Exactly one of `n_iter`or `predicate` must be specified."):
        mod.loop_pass(inc)
    return out


def test_old_pass_manager_matches_torch():
    assert _run(opm) == _run(tpm)


def _typed(lib):
    class Point(NamedTuple):
        x: lib.Tensor
        n: int

    def f(a: Tuple[lib.Tensor, int], b: List[lib.Tensor], c: tuple[int, ...], d: Point):
        return a[0] + b[1] + c[2] + d[0] + a[1] + d[1]
    return f


def _types(lib, annotate):
    gm = lib.fx.symbolic_trace(_typed(lib))
    annotate(gm.graph)
    return [(n.name, getattr(n.type, "__name__", n.type)) for n in gm.graph.nodes if n.op == "call_function"
            and n.target.__name__ == "getitem"]


def test_annotate_getitem_nodes_matches_torch():
    got, want = _types(tc, annotate_getitem_nodes), _types(torch, torch_annotate)
    assert got == want and ("getitem", "Tensor") in got and ("getitem_4", "int") in got

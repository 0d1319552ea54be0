"""torch.fx.traceback against torch's: a Transformer keeps each node's stack trace (and torch's copied meta
fields) on the nodes it makes from it; outside preserve_node_meta nothing is copied."""
import torch
import torch.fx
import torch.fx.traceback as TT

import tidal.compat as tc
import tidal.fx.traceback as OT


def _module(lib):
    class M(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = lib.nn.Linear(2, 2)

        def forward(self, x):
            return self.lin(x).relu() * 2
    return M()


def _run(lib, tb):
    tracer = lib.fx.Tracer()
    tracer.record_stack_traces = True
    model = _module(lib)
    graph = tracer.trace(model)
    for n in graph.nodes:
        n.meta["custom"] = {"tag": n.name}
    gm = lib.fx.GraphModule(model, graph)

    class Swap(lib.fx.Transformer):
        def call_method(self, target, args, kwargs):
            if target == "relu":
                return self.tracer.create_proxy("call_method", "sigmoid", args, kwargs)
            return super().call_method(target, args, kwargs)
    out = Swap(gm).transform()
    kept = [(n.name, "return self.lin(x).relu() * 2" in (n.meta.get("stack_trace") or ""), n.meta.get("custom"))
            for n in out.graph.nodes if n.op not in ("placeholder", "output")]
    with tb.preserve_node_meta():
        on = tb.has_preserved_node_meta()
        tb.set_stack_trace(["line 1\n", "line 2\n"])
        current = tb.format_stack()
    return kept, on, tb.has_preserved_node_meta(), current


def test_transformer_keeps_meta_as_torch():
    want, got = _run(torch, TT), _run(tc, OT)
    assert got == want
    assert got[0][1] == ("sigmoid", True, {"tag": "relu"})  # the new node carries the relu node's meta
    assert got[1:] == (True, False, ["line 1\nline 2\n"])

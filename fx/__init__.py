"""tidal.fx: symbolic tracing, graphs and graph modules (torch.fx).

`symbolic_trace(module_or_fn)` runs the program on Proxies and records a Graph of Nodes (placeholder,
get_attr, call_function, call_method, call_module, output); `GraphModule` runs a graph through generated
Python (`gm.code`, written as torch writes it), `Interpreter` node by node, `Transformer` rebuilds one;
`replace_pattern` rewrites subgraphs, `passes.shape_prop.ShapeProp` notes shapes, `passes.split_module` cuts
a graph into submodules, `experimental.optimization` folds BatchNorms into convolutions. Loaded on first use
(compat's `torch.fx`), never at `import tidal`.

Files: node.py (Node, map_arg), graph.py (Graph and its edits), codegen.py (Python from a graph), proxy.py
(Proxy, TracerBase), tracer.py (Tracer), _symbolic_trace.py (symbolic_trace), _patch.py (what a trace patches,
wrap), _functional_calls.py (torch's argument lists for torch.nn.functional calls), graph_module.py,
interpreter.py (Interpreter, Transformer), subgraph_rewriter.py, traceback.py (node meta carried by passes),
annotate.py, passes/ (shape_prop, split_module, tools_common, graph_manipulation, infra's PassManager,
utils.matcher_utils, graph_drawer's refusal), experimental/ (optimization, const_fold); torch.export's
export.py, _export_trace.py, _aten.py (torch.ops.aten), graph_signature.py, exported_program.py, decompositions.py.
"""
from __future__ import annotations

from .graph import Graph
from .graph_module import GraphModule
from .interpreter import Interpreter, Transformer
from .node import Node, map_arg
from .proxy import Attribute, Proxy, TraceError  # noqa: F401 - Attribute, TraceError: torch.fx.proxy's names
from . import _symbolic_trace  # noqa: F401 - torch's module name, which generated code calls wrap() on
from .node import _SIDE_EFFECTS
from .subgraph_rewriter import replace_pattern
from ._symbolic_trace import symbolic_trace
from .tracer import PH, ProxyableClassMeta, Tracer, wrap

__all__ = ["Graph", "GraphModule", "Interpreter", "Node", "Proxy", "ProxyableClassMeta", "Tracer", "Transformer",
           "map_arg", "symbolic_trace", "wrap", "replace_pattern", "has_side_effect"]


def has_side_effect(fn):
    """Mark `fn` as having side effects: dead-code elimination keeps its calls."""
    _SIDE_EFFECTS.add(fn)
    return fn


def __getattr__(name: str):
    if name in ("passes", "subgraph_rewriter", "experimental"):
        import importlib
        return importlib.import_module(f".{name}", __name__)
    if name == "replace_pattern":
        return replace_pattern
    raise AttributeError(f"module 'tidal.fx' has no attribute '{name}'")

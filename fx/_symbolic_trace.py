"""torch.fx._symbolic_trace: the module path torch's generated code and some scripts import the tracer from."""
from __future__ import annotations

import sys

from ..nn.module import Module
from . import _names
from .graph_module import GraphModule
from .tracer import (PH, PHBase, ProxyableClassMeta, Tracer, TracerBase, _assert_is_none,  # noqa: F401
                     is_fx_tracing, wrap)

__all__ = ["PH", "PHBase", "ProxyableClassMeta", "Tracer", "TracerBase", "is_fx_tracing", "symbolic_trace",
           "wrap"]


def symbolic_trace(root, concrete_args: dict | None = None):
    """Trace `root` (a Module or a function) and return a GraphModule running the graph recorded."""
    tracer = Tracer()
    graph = tracer.trace(root, concrete_args)
    name = type(root).__name__ if isinstance(root, Module) else root.__name__
    return GraphModule(tracer.root, graph, name)


_names.register_space("torch.fx._symbolic_trace", sys.modules[__name__])  # torch's spelling of its names

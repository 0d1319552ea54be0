"""torch.fx.annotate: give a traced value a type, shown in the graph and the generated code."""
from __future__ import annotations

from typing import Any

from .proxy import Proxy

__all__ = ["annotate"]


def annotate(val: Any, type: Any) -> Any:
    """`val` unchanged; while tracing, its node's type becomes `type` (once: a typed value refuses another)."""
    if isinstance(val, Proxy):
        if val.node.type:
            raise RuntimeError(f"Tried to annotate a value that already had a type on it! Existing type is "
                               f"{val.node.type} and new type is {type}. This could happen if you tried to annotate "
                               "a function parameter value (in which case you should use the type slot on the "
                               "function signature) or you called annotate on the same value twice")
        val.node.type = type
    return val

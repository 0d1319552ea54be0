"""The ops autograd itself issues, registered here by tidal.ops when it loads.

ops record their nodes into autograd, so autograd sits below ops and never imports it. The engine still
makes a few tensors of its own (zero and one gradients, a Jacobian's stacked rows, the copies of the rule for
in-place writes on views); tidal.ops hands it those ops at import, before any tensor exists.
"""
from __future__ import annotations

from typing import Any

NAMES = frozenset({
    "zeros", "zeros_like", "ones_like", "empty", "tensor", "stack",         # the engine's own gradients
    "clone", "fill_", "ne", "where", "convert",                              # the rule for writes on views
    "parts_node", "strided_node", "as_parts", "from_parts", "transfer",      # ... and its view nodes
    "non_overlapping_and_dense", "laid_out",                                 # leaf gradients' layout
    "elementwise_backward", "elementwise_reads",                             # saved names of elementwise nodes
    "autocast_dtype", "default_generator",                                   # what a replayed backward checks
})


def register(**ops: Any) -> None:
    """Hand autograd the ops it issues (tidal.ops calls this once, at import)."""
    unknown = set(ops) - NAMES
    if unknown:
        raise TypeError(f"autograd.hooks.register: unknown names {sorted(unknown)}")
    globals().update(ops)


def __getattr__(name: str):
    if name in NAMES:
        raise RuntimeError(f"autograd.hooks.{name} is not registered yet: tidal.ops registers it when it loads")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

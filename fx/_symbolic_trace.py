"""torch.fx._symbolic_trace: the module path torch's generated code and some scripts import the tracer from."""
from __future__ import annotations

from .tracer import PH, PHBase, Tracer, TracerBase, _assert_is_none, symbolic_trace, wrap  # noqa: F401

__all__ = ["PH", "PHBase", "Tracer", "TracerBase", "symbolic_trace", "wrap"]

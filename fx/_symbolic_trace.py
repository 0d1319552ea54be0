"""torch.fx._symbolic_trace: the module path torch's generated code and some scripts import the tracer from."""
from __future__ import annotations

from .tracer import (PH, PHBase, ProxyableClassMeta, Tracer, TracerBase, _assert_is_none,  # noqa: F401
                     is_fx_tracing, symbolic_trace, wrap)

__all__ = ["PH", "PHBase", "ProxyableClassMeta", "Tracer", "TracerBase", "is_fx_tracing", "symbolic_trace",
           "wrap"]

"""tidal.fx.experimental: torch.fx.experimental's graph optimizations (`optimization`: conv/linear-BN fusion,
dropout removal, subgraph extraction; `const_fold`: attribute-only computations run once). Dynamic-shape
machinery (symbolic_shapes, proxy_tensor) is not here: tidal traces with Proxies only."""
from __future__ import annotations

__all__ = ["optimization", "const_fold"]


def __getattr__(name: str):
    if name in ("optimization", "const_fold"):
        import importlib
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'tidal.fx.experimental' has no attribute '{name}'")

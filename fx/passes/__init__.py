"""tidal.fx.passes: analyses over traced graphs (torch.fx.passes)."""
from __future__ import annotations

from . import shape_prop

__all__ = ["shape_prop"]

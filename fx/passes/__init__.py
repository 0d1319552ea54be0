"""tidal.fx.passes: analyses and transformations over traced graphs (torch.fx.passes)."""
from __future__ import annotations

from . import shape_prop, split_module

__all__ = ["shape_prop", "split_module"]

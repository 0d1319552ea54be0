"""tidal.fx.passes: analyses and transformations over traced graphs (torch.fx.passes)."""
from __future__ import annotations

from . import graph_drawer, graph_manipulation, infra, shape_prop, split_module, split_utils, tools_common, utils

__all__ = ["graph_drawer", "graph_manipulation", "infra", "shape_prop", "split_module", "split_utils",
           "tools_common", "utils"]

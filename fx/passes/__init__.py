"""tidal.fx.passes: analyses and transformations over traced graphs (torch.fx.passes)."""
from __future__ import annotations

from . import (annotate_getitem_nodes, graph_drawer, graph_manipulation, infra, pass_manager, shape_prop,
               split_module, split_utils, tools_common, utils)

__all__ = ["annotate_getitem_nodes", "graph_drawer", "graph_manipulation", "infra", "pass_manager", "shape_prop",
           "split_module", "split_utils", "tools_common", "utils"]

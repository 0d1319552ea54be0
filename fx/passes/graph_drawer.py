"""FxGraphDrawer (torch.fx.passes.graph_drawer): torch draws graphs through pydot (Graphviz). tidal does not
carry that drawer; without pydot it refuses as torch does, and with pydot it says that tidal lacks it."""
from __future__ import annotations

from typing import Any

__all__ = ["FxGraphDrawer"]


class FxGraphDrawer:
    """Refuses: drawing needs pydot, and tidal has no drawer (print `gm.graph` or `gm.code` instead)."""

    def __init__(self, graph_module: Any, name: str, ignore_getattr: bool = False,
                 ignore_parameters_and_buffers: bool = False, skip_node_names_in_args: bool = True,
                 parse_stack_trace: bool = False, dot_graph_shape: str | None = None,
                 normalize_args: bool = False) -> None:
        try:
            import pydot  # noqa: F401
        except ModuleNotFoundError:
            raise RuntimeError("FXGraphDrawer requires the pydot package to be installed. Please install "
                               "pydot through your favorite Python package manager.") from None
        raise NotImplementedError("tidal.fx has no graph drawer (torch.fx.passes.graph_drawer.FxGraphDrawer); "
                                  "print gm.graph or gm.code, or gm.graph.print_tabular(), instead")

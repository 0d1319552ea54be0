"""Helpers partitioners share (torch.fx.passes.utils.common): a plain Module holding given submodules, and a
subgraph lifted into a GraphModule with the modules and attributes it reads."""
from __future__ import annotations

from ....nn.module import Module
from ...graph import Graph
from ...graph_module import GraphModule

__all__ = ["HolderModule", "lift_subgraph_as_module"]


class HolderModule(Module):
    """A Module whose children are the given modules."""

    def __init__(self, d: dict) -> None:
        super().__init__()
        for k, v in d.items():
            self.add_module(k, v)


def lift_subgraph_as_module(gm: GraphModule, subgraph: Graph, comp_name: str = "",
                            class_name: str = "GraphModule") -> tuple:
    """A GraphModule running `subgraph` with the submodules and attributes of `gm` it names (dotted paths
    rebuilt with HolderModules), and the map from their paths in gm to `<comp_name>.<path>`."""
    holder = HolderModule({})
    mapping: dict = {}
    for n in subgraph.nodes:
        if n.op not in ("call_module", "get_attr"):
            continue
        *path, leaf = n.target.split(".")
        here, source = holder, gm
        for part in path:
            if not hasattr(here, part):
                here.add_module(part, HolderModule({}))
            here, source = getattr(here, part), getattr(source, part)
        mapping[n.target] = f"{comp_name}.{n.target}"
        setattr(here, leaf, getattr(source, leaf))
    return GraphModule(holder, subgraph, class_name), mapping

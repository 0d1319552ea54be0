"""InternalMatch (torch.fx.passes.utils.matcher_utils): one occurrence of a pattern in a graph, as
`replace_pattern_with_filters` gives it to match filters and replacement callbacks. (torch's SubgraphMatcher,
which finds them, is tidal.fx.subgraph_rewriter's own matcher here.)"""
from __future__ import annotations

from dataclasses import dataclass, field


__all__ = ["InternalMatch"]


@dataclass
class InternalMatch:
    """anchors: the pattern's returned nodes; nodes_map: pattern node -> graph node; placeholder_nodes: what
    the pattern's inputs matched, in order; returning_nodes: the graph nodes the pattern's outputs matched."""
    anchors: list
    nodes_map: dict = field(default_factory=dict)
    placeholder_nodes: list = field(default_factory=list)
    returning_nodes: list = field(default_factory=list)
    name_node_map: dict = field(default_factory=dict)

    def __copy__(self) -> "InternalMatch":
        return InternalMatch(anchors=self.anchors, nodes_map=self.nodes_map.copy(),
                             placeholder_nodes=self.placeholder_nodes.copy(),
                             returning_nodes=self.returning_nodes.copy())


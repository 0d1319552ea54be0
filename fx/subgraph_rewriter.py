"""replace_pattern: find a traced pattern in a GraphModule's graph and put a replacement in its place
(torch.fx.subgraph_rewriter); replace_pattern_with_filters also takes match filters, a replacement callback,
`ignore_literals` and `node_name_match`, and reports what replaced each match.

The pattern and the replacement are functions (or GraphModules, or Graphs) with the same inputs. A match is found
from the node that produces the pattern's result, walking its arguments backwards: nodes agree in op, target and
constant arguments (any constants with `ignore_literals`), a pattern input matches any value. A match is kept
when it shares no node with an earlier one and none of its inner nodes is used outside it; the replacement's
nodes are then inserted before the matched result, its uses redirected, and the matched nodes erased.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, NamedTuple

from .graph import Graph
from .graph_module import GraphModule
from .node import Node
from .node import map_arg
from .passes.utils.matcher_utils import InternalMatch
from ._symbolic_trace import symbolic_trace

__all__ = ["Match", "ReplacedPatterns", "replace_pattern", "replace_pattern_with_filters"]


class Match(NamedTuple):
    """One replaced occurrence: the pattern's node producing its result, and pattern node -> graph node."""
    anchor: Node
    nodes_map: dict


@dataclass
class ReplacedPatterns:
    """One replaced occurrence (replace_pattern_with_filters): the pattern's anchor, pattern node -> graph node,
    and the nodes the replacement put into the graph."""
    anchor: Node
    nodes_map: dict
    replacements: list


def _graph_of(fn: Callable | Any) -> Graph:
    if isinstance(fn, Graph):
        return fn
    return fn.graph if isinstance(fn, GraphModule) else symbolic_trace(fn).graph


class _Matcher:
    """Pattern-to-graph matching state: the options, and the pattern node -> graph value map being built."""

    def __init__(self, ignore_literals: bool, node_name_match: str) -> None:
        self.ignore_literals, self.node_name_match = ignore_literals, node_name_match

    def arg(self, p: Any, g: Any, mapping: dict) -> bool:
        if isinstance(p, Node) and p.op == "placeholder" and not isinstance(g, Node):
            if p in mapping:
                return mapping[p] is g or mapping[p] == g
            mapping[p] = g  # a pattern input matches a constant argument too (torch's matcher)
            return True
        if isinstance(p, Node):
            return isinstance(g, Node) and self.node(p, g, mapping)
        if isinstance(p, (list, tuple)) and isinstance(g, (list, tuple)):
            return len(p) == len(g) and all(self.arg(a, b, mapping) for a, b in zip(p, g))
        if isinstance(p, dict):
            return isinstance(g, dict) and p.keys() == g.keys() and all(self.arg(p[k], g[k], mapping) for k in p)
        if self.ignore_literals:
            return True  # (torch: any two non-nodes agree when literals are ignored)
        return not isinstance(g, Node) and type(p) is type(g) and p == g

    def node(self, p: Node, g: Node, mapping: dict) -> bool:
        if p in mapping:
            return mapping[p] is g
        if any(v is g for v in mapping.values()):
            return False
        if p.op == "placeholder":
            mapping[p] = g
            return True
        named = bool(self.node_name_match) and self.node_name_match in g.name
        if not named and (p.op != g.op or not (p.target is g.target or isinstance(p.target, str)
                                               and p.target == g.target)):
            return False
        if len(p.args) != len(g.args) or list(p.kwargs) != list(g.kwargs):
            return False
        mapping[p] = g
        saved = dict(mapping)
        if self.arg(p.args, g.args, mapping) and self.arg(p.kwargs, g.kwargs, mapping):
            return True
        mapping.clear()
        mapping.update(saved)
        del mapping[p]
        return False


def _find(pattern: Graph, graph: Graph, ignore_literals: bool = False, node_name_match: str = "") -> list:
    """The InternalMatches of `pattern` in `graph`: non-overlapping, inner values unused elsewhere."""
    output = next(n for n in pattern.nodes if n.op == "output")
    result = output.args[0]
    if not isinstance(result, Node):
        raise NotImplementedError("replace_pattern: the pattern must return one traced value")
    placeholders = [n for n in pattern.nodes if n.op == "placeholder"]
    matcher = _Matcher(ignore_literals, node_name_match)
    taken: set = set()
    matches = []
    for anchor in graph.nodes:
        mapping: dict = {}
        if not matcher.node(result, anchor, mapping):
            continue
        inner = {g for p, g in mapping.items() if p.op != "placeholder"}
        if inner & taken:
            continue
        if any(user not in inner for g in inner if g is not anchor for user in g.users):
            continue  # an inner value is still needed elsewhere: the pattern cannot be cut out
        taken |= inner
        matches.append(InternalMatch(anchors=[result], nodes_map=mapping,
                                     placeholder_nodes=[mapping.get(p) for p in placeholders],
                                     returning_nodes=[anchor]))
    return matches


def replace_pattern(gm, pattern: Callable | Any, replacement: Callable | Any) -> list:
    """Replace each non-overlapping occurrence of `pattern` in gm's graph by `replacement`; recompiles gm and
    returns the Matches."""
    done = _replace(gm, pattern, replacement)
    return [Match(r.anchor, r.nodes_map) for r in done]


def replace_pattern_with_filters(gm, pattern: Callable | Any, replacement: Callable | Any = None,
                                 match_filters: list | None = None, ignore_literals: bool = False,
                                 replacement_callback: Callable | None = None, node_name_match: str = "") -> list:
    """replace_pattern, keeping only the matches every filter(match, original_graph, pattern_graph) accepts;
    `replacement_callback(match, original_graph, pattern_graph)` may give each match its own replacement graph;
    returns ReplacedPatterns (with the nodes each replacement added)."""
    return _replace(gm, pattern, replacement, match_filters or [], ignore_literals, replacement_callback,
                    node_name_match)


def _replace(gm, pattern, replacement, match_filters: list = (), ignore_literals: bool = False,
             replacement_callback: Callable | None = None, node_name_match: str = "") -> list:
    graph = gm.graph
    pattern_graph = _graph_of(pattern)
    common = None
    if replacement is not None:
        common = _graph_of(replacement)
    elif replacement_callback is None:
        raise AssertionError("Must provide either a replacement GraphModule or a replacement callback")
    p_inputs = [n for n in pattern_graph.nodes if n.op == "placeholder"]
    if common is not None:
        r_count = len([n for n in common.nodes if n.op == "placeholder"])
        if len(p_inputs) != r_count:
            raise ValueError(f"replace_pattern: the pattern takes {len(p_inputs)} inputs, the replacement {r_count}")
    matches = [m for m in _find(pattern_graph, graph, ignore_literals, node_name_match)
               if all(f(m, graph, pattern_graph) for f in match_filters)]
    changed: dict = {}  # a replaced graph node -> what replaced it (a later match may take it as input)
    done = []
    for match in matches:
        replacement_graph = replacement_callback(match, graph, pattern_graph) if replacement_callback else common
        r_inputs = [n for n in replacement_graph.nodes if n.op == "placeholder"]
        if len(r_inputs) != len(match.placeholder_nodes):
            raise AssertionError(f"Placeholder count mismatch: {len(match.placeholder_nodes)} vs {len(r_inputs)}")
        for i, p in enumerate(p_inputs):
            g = match.nodes_map.get(p)
            while isinstance(g, Node) and g in changed:
                g = changed[g]
            match.nodes_map[p] = g
            match.placeholder_nodes[i] = g
        env = {r: match.nodes_map.get(p) for p, r in zip(p_inputs, r_inputs)}
        returning = match.returning_nodes[0]
        new_result = None
        added = []
        with graph.inserting_before(_insert_point(graph, returning)):
            for node in replacement_graph.nodes:
                if node.op == "placeholder":
                    continue
                if node.op == "output":
                    new_result = _lookup(node.args[0], env)
                    continue
                env[node] = graph.node_copy(node, lambda n: env[n])
                added.append(env[node])
        returning.replace_all_uses_with(new_result)
        changed[returning] = new_result
        for p in reversed(list(pattern_graph.nodes)):
            g = match.nodes_map.get(p)
            if isinstance(g, Node) and p.op not in ("placeholder", "output") and not g.users:
                graph.erase_node(g)
        done.append(ReplacedPatterns(match.anchors[0], match.nodes_map, added))
    gm.recompile()
    return done


def _insert_point(graph: Graph, returning: Node) -> Node:
    """Where the replacement goes: before the first user of the matched result (else the node after it)."""
    if returning.users:
        return next(n for n in graph.nodes if n in returning.users)
    return returning.next


def _lookup(value: Any, env: dict) -> Any:
    return map_arg(value, lambda n: env[n])

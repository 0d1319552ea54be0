"""replace_pattern: find a traced pattern in a GraphModule's graph and put a replacement in its place
(torch.fx.subgraph_rewriter).

The pattern and the replacement are functions (or GraphModules) with the same inputs. A match is found from
the node that produces the pattern's result, walking its arguments backwards: nodes agree in op, target and
constant arguments, a pattern input matches any value. A match is kept when it shares no node with an earlier
one and none of its inner nodes is used outside it; the replacement's nodes are then inserted before the
matched result, its uses redirected, and the matched nodes erased.
"""
from __future__ import annotations

from typing import Any, Callable, NamedTuple

from .graph import Graph
from .node import Node

__all__ = ["Match", "replace_pattern"]


class Match(NamedTuple):
    """One replaced occurrence: the pattern's node producing its result, and pattern node -> graph node."""
    anchor: Node
    nodes_map: dict


def _graph_of(fn: Callable | Any) -> Graph:
    from .graph_module import GraphModule
    from .tracer import symbolic_trace
    return fn.graph if isinstance(fn, GraphModule) else symbolic_trace(fn).graph


def _match_arg(p: Any, g: Any, mapping: dict) -> bool:
    if isinstance(p, Node):
        return isinstance(g, Node) and _match_node(p, g, mapping)
    if isinstance(p, (list, tuple)):
        return type(p) is type(g) and len(p) == len(g) and all(_match_arg(a, b, mapping) for a, b in zip(p, g))
    if isinstance(p, dict):
        return isinstance(g, dict) and p.keys() == g.keys() and all(_match_arg(p[k], g[k], mapping) for k in p)
    return not isinstance(g, Node) and type(p) is type(g) and p == g


def _match_node(p: Node, g: Node, mapping: dict) -> bool:
    if p in mapping:
        return mapping[p] is g
    if p.op == "placeholder":
        if any(v is g for v in mapping.values()):
            return False
        mapping[p] = g
        return True
    if p.op != g.op or len(p.args) != len(g.args) or p.kwargs.keys() != g.kwargs.keys():
        return False
    if not (p.target is g.target or isinstance(p.target, str) and p.target == g.target):
        return False
    mapping[p] = g
    if _match_arg(p.args, g.args, mapping) and _match_arg(p.kwargs, g.kwargs, mapping):
        return True
    del mapping[p]
    return False


def _find(pattern: Graph, graph: Graph) -> list:
    output = next(n for n in pattern.nodes if n.op == "output")
    result = output.args[0]
    if not isinstance(result, Node):
        raise NotImplementedError("replace_pattern: the pattern must return one traced value")
    taken: set = set()
    matches = []
    for anchor in graph.nodes:
        mapping: dict = {}
        if not _match_node(result, anchor, mapping):
            continue
        inner = {g for p, g in mapping.items() if p.op != "placeholder"}
        if inner & taken:
            continue
        if any(user not in inner for g in inner if g is not anchor for user in g.users):
            continue  # an inner value is still needed elsewhere: the pattern cannot be cut out
        taken |= inner
        matches.append(Match(result, mapping))
    return matches


def replace_pattern(gm, pattern: Callable | Any, replacement: Callable | Any) -> list:
    """Replace each non-overlapping occurrence of `pattern` in gm's graph by `replacement`; recompiles gm and
    returns the Matches."""
    pattern_graph, replacement_graph = _graph_of(pattern), _graph_of(replacement)
    p_inputs = [n for n in pattern_graph.nodes if n.op == "placeholder"]
    r_inputs = [n for n in replacement_graph.nodes if n.op == "placeholder"]
    if len(p_inputs) != len(r_inputs):
        raise ValueError(f"replace_pattern: the pattern takes {len(p_inputs)} inputs, the replacement "
                         f"{len(r_inputs)}")
    graph = gm.graph
    matches = _find(pattern_graph, graph)
    changed: dict = {}  # a replaced graph node -> what replaced it (a later match may take it as input)
    for match in matches:
        for p in p_inputs:
            g = match.nodes_map[p]
            while g in changed:
                g = changed[g]
            match.nodes_map[p] = g
        env = {r: match.nodes_map[p] for p, r in zip(p_inputs, r_inputs)}
        returning = match.nodes_map[match.anchor]
        new_result = None
        with graph.inserting_before(_insert_point(graph, returning)):
            for node in replacement_graph.nodes:
                if node.op == "placeholder":
                    continue
                if node.op == "output":
                    new_result = _lookup(node.args[0], env)
                    continue
                env[node] = graph.node_copy(node, lambda n: env[n])
        returning.replace_all_uses_with(new_result)
        changed[returning] = new_result
        for p in reversed(list(pattern_graph.nodes)):
            g = match.nodes_map.get(p)
            if g is not None and p.op != "placeholder" and not g.users:
                graph.erase_node(g)
    gm.recompile()
    return matches


def _insert_point(graph: Graph, returning: Node) -> Node:
    """Where the replacement goes: before the first user of the matched result (else the node after it)."""
    if returning.users:
        return next(n for n in graph.nodes if n in returning.users)
    return returning.next


def _lookup(value: Any, env: dict) -> Any:
    from .node import map_arg
    return map_arg(value, lambda n: env[n])

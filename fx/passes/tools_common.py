"""Helpers graph partitioners share (torch.fx.passes.tools_common): a node's target as a name, and the graph's
nodes put back in a topological order (legalize_graph, stable_topological_sort) after edits broke it."""
from __future__ import annotations

import builtins
import collections
import heapq
import operator
from typing import Any, Mapping

from ...tensor import Tensor
from .._names import torch_table
from ..graph import Graph
from ..node import Node

__all__ = ["get_acc_ops_name", "get_node_target", "is_node_output_tensor", "legalize_graph",
           "stable_topological_sort", "CALLABLE_NODE_OPS", "Tensors", "TensorOrTensors", "NodeList", "NodeSet",
           "Names"]

Tensors = tuple | list
TensorOrTensors = Any
NodeList = list
NodeSet = set
Names = list
CALLABLE_NODE_OPS = {"call_module", "call_function", "call_method"}

# shape arithmetic goes first when several nodes are ready (torch also lists its runtime-assert aten ops)
_PRIORITIZED = (operator.add, operator.mul, operator.sub, operator.floordiv, operator.truediv, operator.mod,
                operator.le, operator.lt, operator.ge, operator.gt, operator.eq, operator.ne)


def get_acc_ops_name(k: Any) -> str:
    """A module class (or a name) as text: `torch.nn.modules.linear.Linear` (tidal's classes read as torch's)."""
    if isinstance(k, str):
        return k
    if k.__module__ and "acc_ops" in k.__module__:
        return f"acc_ops.{k.__name__}"
    module = k.__module__ or ""
    if module.startswith("tidal."):
        module = "torch." + module[len("tidal."):]
    return f"{module}.{k.__name__}"


def _function_name(fn: Any) -> str:
    """torch's qualified name of a call_function target: torch.add, torch.nn.functional.relu, _operator.add."""
    name = getattr(fn, "__name__", repr(fn))
    if getattr(builtins, name, None) is fn:
        return name
    hit = torch_table().get(id(fn))
    if hit is not None and hit[1] is fn:
        return hit[0]
    return f"{getattr(fn, '__module__', None) or ''}.{name}"


def get_node_target(submodules: Mapping, node: Node) -> str:
    """What a call node runs, as text: a module's class, a function's qualified name, or a method's name."""
    if node.op not in CALLABLE_NODE_OPS:
        raise AssertionError("Expect op types of " + ", ".join(CALLABLE_NODE_OPS) + f", but found {node.op}")
    if node.op == "call_module":
        if not isinstance(node.target, str):
            raise AssertionError(f"Expected str target, got {type(node.target)}")
        submod = submodules[node.target]
        return get_acc_ops_name(getattr(submod, "_base_class_origin", type(submod)))
    if node.op == "call_function":
        target = node.target
        if getattr(target, "__module__", None) and "acc_ops" in target.__module__:
            return f"acc_ops.{target.__name__}"
        return node.meta.get("torch_spelling") or _function_name(target)
    if not isinstance(node.target, str):
        raise AssertionError(f"Expected str target, got {type(node.target)}")
    return node.target


def is_node_output_tensor(node: Node) -> bool:
    """Whether ShapeProp found the node's value to be a tensor."""
    kind = node.meta.get("type", None)
    return kind is not None and issubclass(kind, Tensor)


def _reordered(gm: Any, pop: Any, push: Any, seed: Any) -> Any:
    """gm with its graph rebuilt in the order `pop` takes ready nodes (Kahn's algorithm: `seed` takes the nodes
    ready from the start, `push` those made ready on the way); the nodes left waiting when there is a cycle."""
    waiting = dict.fromkeys(gm.graph.nodes, 0)
    for node in gm.graph.nodes:
        for user in node.users:
            waiting[user] += 1
    for node in gm.graph.nodes:
        if waiting[node] == 0:
            seed(node)
    graph, env = Graph(), {}
    while True:
        cur = pop()
        if cur is None:
            break
        env[cur] = graph.node_copy(cur, lambda x: env[x])
        for user in cur.users:
            waiting[user] -= 1
            if waiting[user] == 0:
                push(user)
    if len(graph.nodes) < len(gm.graph.nodes):
        return [n for n in waiting if waiting[n] != 0]
    graph._codegen = gm.graph._codegen
    gm.graph = graph
    return gm


def legalize_graph(gm: Any) -> Any:
    """Reorder gm's graph topologically (breadth first, shape arithmetic first); RuntimeError on a cycle."""
    queue: collections.deque = collections.deque()

    def push(node: Node) -> None:
        if node.op == "call_function" and node.target in _PRIORITIZED:
            queue.appendleft(node)
        else:
            queue.append(node)
    out = _reordered(gm, lambda: queue.popleft() if queue else None, push, queue.append)
    if isinstance(out, list):
        raise RuntimeError(f"Input graph has cycles, unable to add {out}")
    return out


def stable_topological_sort(gm: Any) -> Any:
    """Reorder gm's graph topologically, keeping the original order wherever the dependencies allow."""
    index = {node: i for i, node in enumerate(gm.graph.nodes)}
    heap: list = []

    def push(node: Node) -> None:
        heapq.heappush(heap, (index[node], node))
    out = _reordered(gm, lambda: heapq.heappop(heap)[1] if heap else None, push, push)
    if isinstance(out, list):
        raise AssertionError(f"Input graph has cycles, unable to add {out}")
    return out

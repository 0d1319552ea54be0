"""Whole-graph helpers (torch.fx.passes.graph_manipulation): swap the target of matching nodes, and the memory
each node's output (and a submodule's parameters) takes, from ShapeProp's tensor metadata."""
from __future__ import annotations

from typing import Any, NamedTuple

from ... import ops
from ..graph import Graph
from ..node import Node, map_arg
from .shape_prop import ShapeProp, TensorMetadata

__all__ = ["replace_target_nodes_with", "size_bytes", "get_size_of_all_nodes", "get_tensor_meta",
           "get_size_of_node"]


def replace_target_nodes_with(fx_module: Any, old_op: str, old_target: Any, new_op: str, new_target: Any) -> None:
    """Rebuild fx_module's graph with each (old_op, old_target) node made a (new_op, new_target) node."""
    graph = Graph()
    env: dict = {}
    for node in fx_module.graph.nodes:
        if node.op == old_op and node.target == old_target:
            args = map_arg(node.args, lambda n: env[n])
            kwargs = map_arg(node.kwargs, lambda n: env[n])
            env[node] = graph.create_node(new_op, new_target, args, kwargs, node.name)
        else:
            env[node] = graph.node_copy(node, lambda n: env[n])
    fx_module.graph = graph


class size_bytes(NamedTuple):  # noqa: N801 - torch's name
    """A node's output size and total size (output plus a called submodule's parameters), in bytes."""
    output_size: int
    total_size: int


def get_tensor_meta(node: Node) -> TensorMetadata:
    """The node's ShapeProp metadata; RuntimeError when shape propagation has not run."""
    meta = node.meta.get("tensor_meta")
    if not meta:
        raise RuntimeError(f"Node {node} has no tensor metadata associated with it! Check that shape propagation "
                           "has run.")
    return meta


def get_size_of_node(fx_module: Any, node: Node) -> size_bytes:
    """The bytes of the node's output, and with a call_module node's parameters added."""
    elements = 0
    if node.op == "call_module":
        submodule = dict(fx_module.named_modules())[node.target]
        elements += sum(p.numel() for _, p in submodule.named_parameters())
    meta = get_tensor_meta(node)
    output = meta.shape.numel()
    elements += output
    itemsize = ops.tensor([], dtype=meta.dtype).element_size()
    return size_bytes(itemsize * output, itemsize * elements)


def get_size_of_all_nodes(fx_module: Any, args: list | None = None) -> None:
    """Set `node.size_bytes` on every node before the output (running ShapeProp on `args` first, if given)."""
    if args is not None:
        ShapeProp(fx_module).propagate(*args)
    for node in fx_module.graph.nodes:
        if node.op == "output":
            break
        node.size_bytes = get_size_of_node(fx_module, node)

"""split_module: cut a GraphModule into submodules `submod_<N>`, one per partition a callback names
(torch.fx.passes.split_module).

Every call node goes to the partition `split_callback(node)` returns; placeholders and get_attr nodes stay in
the outer module and are passed to the partitions that read them (a get_attr of a whole Module is read inside
the partition instead). A value one partition makes and another reads becomes an output of the first and a
placeholder of the second. The outer graph calls the partitions in a topological order of their dependencies
(or in the order they first appear, with `keep_original_order`), unpacking tuple outputs with getitem.
"""
from __future__ import annotations

import inspect
import operator
from typing import Any, Callable

from ...nn.module import Module
from ..graph import Graph
from ..graph_module import GraphModule
from ..node import Node, map_arg

__all__ = ["Partition", "split_module"]

_OUTSIDE = ("placeholder", "get_attr", "output")  # ops that no partition takes


class Partition:
    """One partition: its nodes' names, the values it reads and makes, and the graph of its submodule."""

    def __init__(self, name: str) -> None:
        self.name: str = name
        self.submod_name = f"submod_{name}"
        self.node_names: list = []
        self.inputs: dict = {}  # names of values made elsewhere (ordered set)
        self.outputs: dict = {}  # names of values read elsewhere (ordered set)
        self.dependencies: dict = {}  # partitions whose values this one reads
        self.dependents: dict = {}  # partitions that read this one's values
        self.graph = Graph()
        self.environment: dict = {}  # original node -> its node in self.graph
        self.targets: dict = {}  # attribute name in the submodule -> module or value

    def __repr__(self) -> str:
        return (f"name: {self.name},\n nodes: {self.node_names},\n inputs: {self.inputs},\n outputs: "
                f"{self.outputs},\n partitions depended on: {self.dependencies},\n partition dependents: "
                f"{self.dependents}")


def _get_attr_from_qualname(mod: Any, qualname: str) -> Any:
    value = mod
    for atom in qualname.split("."):
        if not hasattr(value, atom):
            raise AttributeError(f"Node target {qualname} not found!")
        value = getattr(value, atom)
    return value


def split_module(m: GraphModule, root_m: Any, split_callback: Callable[[Node], int],
                 qualname_map: dict | None = None, keep_original_order: bool | None = False,
                 keep_original_node_name: bool | None = False, keep_original_input_name: bool = True, *,
                 partition_affix: str | None = None, tuple_return: bool = False) -> GraphModule:
    """A GraphModule calling one submodule `submod_<N>` per partition `split_callback` assigns; it computes
    what `m` computes. `qualname_map` (filled in) maps the split module's submodule paths to `m`'s."""
    partitions: dict = {}
    where: dict = {}  # original node -> its partition's name
    orig_nodes = {node.name: node for node in m.graph.nodes}
    for node in m.graph.nodes:
        if node.op in _OUTSIDE:
            continue
        name = str(split_callback(node))
        if partition_affix is not None:
            name = f"{partition_affix}_{name}"
        partition = partitions.get(name)
        if partition is None:
            partitions[name] = partition = Partition(name)
        partition.node_names.append(node.name)
        where[node] = name

    def record_use(value: Node, user: Node | None) -> None:
        made, used = where.get(value), where.get(user) if user is not None else None
        if made == used:
            return
        if made is not None:
            partitions[made].outputs.setdefault(value.name)
            if used is not None:
                partitions[made].dependents.setdefault(used)
        if used is not None:
            partitions[used].inputs.setdefault(value.name)
            if made is not None:
                partitions[used].dependencies.setdefault(made)

    for node in m.graph.nodes:
        if node.op == "output":
            map_arg(node.args[0], lambda n: record_use(n, None))
        elif node.op not in _OUTSIDE:
            map_arg(node.args, lambda n, user=node: record_use(n, user))
            map_arg(node.kwargs, lambda n, user=node: record_use(n, user))

    order = _topological(partitions)
    for name in order:
        _make_placeholders(partitions[name], m, orig_nodes, keep_original_input_name, Module)
    for node in m.graph.nodes:
        if node in where:
            _copy_node(node, partitions[where[node]], m, qualname_map, keep_original_node_name)

    base = Graph()
    env: dict = {}  # original node name -> its value in the outer graph
    attrs: dict = {}  # the outer module's attributes

    def lift(node: Node) -> None:
        """The outer graph's copy of an original placeholder or get_attr node."""
        if node.name in env or node.op not in ("placeholder", "get_attr"):
            return
        if node.op == "placeholder":
            default = node.args[0] if node.args else inspect.Signature.empty
            if keep_original_node_name:
                new = base.create_node("placeholder", node.name, () if not node.args else (default,),
                                       type_expr=node.type)
            else:
                new = base.placeholder(node.target, type_expr=node.type, default_value=default)
        else:
            new = base.get_attr(node.target)
            attrs[node.target] = _get_attr_from_qualname(m, node.target)
        new.meta = dict(node.meta)
        env[node.name] = new

    placeholders = [n for n in m.graph.nodes if n.op == "placeholder"]
    if not keep_original_order:
        for node in m.graph.nodes:
            lift(node)
    for name in (list(partitions) if keep_original_order else order):
        partition = partitions[name]
        values = tuple(partition.environment[orig_nodes[out]] for out in partition.outputs)
        partition.graph.output(values[0] if len(values) == 1 and not tuple_return else values)
        if keep_original_order:  # the inputs in their order first, then the attributes this partition reads
            for node in placeholders:
                lift(node)
            for inp in partition.inputs:
                lift(orig_nodes[inp])
        attrs[partition.submod_name] = GraphModule(partition.targets, partition.graph)
        call = base.call_module(partition.submod_name, tuple(env[inp] for inp in partition.inputs))
        if len(values) > 1 or (len(values) == 1 and tuple_return):
            for i, out in enumerate(partition.outputs):
                env[out] = base.call_function(operator.getitem, (call, i))
        elif len(values) == 1:
            env[next(iter(partition.outputs))] = call
    if keep_original_order and not env:  # no partition at all: the outer graph still takes the inputs
        for node in m.graph.nodes:
            lift(node)
    for node in m.graph.nodes:
        if node.op == "output":
            base.output(map_arg(node.args[0], lambda n: env[n.name]))
    result = GraphModule(attrs, base)
    result.meta["partition_names"] = {p.submod_name for p in partitions.values()}
    return result


def _topological(partitions: dict) -> list:
    """The partitions' names in an order where each comes after those it reads from (torch's order: a stack
    of the ready ones); RuntimeError on a cycle."""
    waiting = {name: set(p.dependencies) for name, p in partitions.items()}
    ready = [name for name, deps in waiting.items() if not deps]
    order: list = []
    while ready:
        name = ready.pop()
        order.append(name)
        for dependent in partitions[name].dependents:
            waiting[dependent].discard(name)
            if not waiting[dependent]:
                ready.append(dependent)
    if len(order) != len(partitions):
        raise RuntimeError("cycle exists between partitions!")
    return order


def _make_placeholders(partition: Partition, m: GraphModule, orig_nodes: dict, keep_name: bool,
                       module_cls: type) -> None:
    """The partition's inputs become placeholders (named as the values, or arg_<i>); a get_attr of a whole
    Module is read inside the partition instead, after the placeholders."""
    def is_module_attr(inp: str) -> bool:
        node = orig_nodes[inp]
        return node.op == "get_attr" and isinstance(_get_attr_from_qualname(m, node.target), module_cls)

    inputs = list(partition.inputs)
    kept: dict = {}
    counter = 0
    for inp in [i for i in inputs if not is_module_attr(i)] + [i for i in inputs if is_module_attr(i)]:
        orig = orig_nodes[inp]
        if is_module_attr(inp):
            new = partition.graph.get_attr(orig.target)
            partition.targets[orig.target] = _get_attr_from_qualname(m, orig.target)
        else:
            name = inp if keep_name else f"arg_{counter}"
            counter += 0 if keep_name else 1
            new = partition.graph.placeholder(name, type_expr=orig.type)
            kept[inp] = None
        new.meta = dict(orig.meta)
        partition.environment[orig] = new
    partition.inputs = kept


def _copy_node(node: Node, partition: Partition, m: GraphModule, qualname_map: dict | None,
               keep_name: bool | None) -> None:
    """Copy one call node into its partition's graph (a submodule call names its module with '_' for '.')."""
    env = partition.environment
    args = map_arg(node.args, lambda n: env[n])
    kwargs = map_arg(node.kwargs, lambda n: env[n])
    target = node.target
    if node.op == "call_module":
        target = node.target.replace(".", "_")
        partition.targets[target] = _get_attr_from_qualname(m, node.target)
        if qualname_map is not None:
            qualname_map[f"{partition.submod_name}.{target}"] = node.target
    new = partition.graph.create_node(node.op, target, args, kwargs, name=node.name if keep_name else None,
                                      type_expr=node.type)
    new.meta = dict(node.meta)
    env[node] = new

"""split_by_tags (torch.fx.passes.split_utils): cut a GraphModule into one submodule per tag, in the order of
`tags`, from the `tag` attribute set on each call node. Placeholders and outputs are made where values cross
between components; get_attr nodes are copied into each component that reads them."""
from __future__ import annotations

import copy
import operator
from dataclasses import dataclass, field
from typing import Any

from ...nn.containers import ModuleList
from ..graph import Graph
from ..graph_module import GraphModule
from ..node import Node, map_arg
from .utils.common import HolderModule, lift_subgraph_as_module

__all__ = ["getattr_recursive", "setattr_recursive", "Component", "split_by_tags"]


def getattr_recursive(obj: Any, name: str) -> Any:
    """obj.<dotted name>, or None where a part is missing."""
    for layer in name.split("."):
        if isinstance(obj, ModuleList):
            if layer not in obj._modules:
                return None
            obj = obj._modules[layer]
        elif hasattr(obj, layer):
            obj = getattr(obj, layer)
        else:
            return None
    return obj


def setattr_recursive(obj: Any, attr: str, value: Any) -> None:
    """Set obj.<dotted attr> = value."""
    head, _, rest = attr.partition(".")
    if not rest:
        setattr(obj, attr, value)
    else:
        setattr_recursive(getattr(obj, head), rest, value)


@dataclass
class Component:
    """One tag's subgraph while it is built: its inputs (original nodes and their placeholders), outputs,
    copied get_attr nodes, and the GraphModule made of it."""
    graph: Graph
    order: int
    name: str
    input_placeholders: list = field(default_factory=list)
    orig_inputs: list = field(default_factory=list)
    orig_outputs: list = field(default_factory=list)
    getattr_maps: dict = field(default_factory=dict)
    constructor_args: list = field(default_factory=list)
    gm: GraphModule | None = None


def _nodes_in(x: Any) -> list:
    found: list = []
    map_arg(x, found.append)
    return found


def split_by_tags(gm: GraphModule, tags: list, return_fqn_mapping: bool = False, return_tuple: bool = False,
                  GraphModuleCls: type = GraphModule) -> Any:  # noqa: N803 - torch's argument name
    """A GraphModule calling one submodule per tag (named by the tag); each call node goes to the component of
    its `node.tag`, which may not come before a component it reads from. With return_fqn_mapping, also the
    map from gm's module/attribute paths to their paths in the result."""
    copied: dict = {}  # original node -> its copy in its component
    owner: dict = {}  # node -> its component
    components = [Component(Graph(), i, f"{tag}") for i, tag in enumerate(tags)]
    by_tag = {c.name: c for c in components}
    used_in_main: dict = {}
    main = Graph()
    main_env: dict = {}
    output = None
    for node in gm.graph.nodes:
        if node.op == "output":
            if output is not None:
                raise RuntimeError("Multiple output nodes in graph!")
            output = node
            continue
        if node.op == "placeholder":
            main_env[node] = main.placeholder(node.name, type_expr=node.type)
            main_env[node].meta = copy.copy(node.meta)
            continue
        if node.op == "get_attr":
            continue
        if not hasattr(node, "tag"):
            raise AssertionError(f"Node does not have tag: {node.format_node()}")
        upstream = [owner[x] for x in _nodes_in(node.args) + _nodes_in(node.kwargs)
                    if x.op not in ("placeholder", "get_attr")]
        comp = by_tag[node.tag]
        owner[node] = comp
        latest = max((c.order for c in upstream), default=0)
        if comp.order < latest:
            raise AssertionError(f"Component {comp.name} order must be >= max of its upstream components, "
                                 f"order={comp.order} and max={latest}")

        def remap(x: Node, comp: Component = comp) -> Node:
            if x.op == "get_attr":
                if x not in comp.getattr_maps:
                    comp.getattr_maps[x] = comp.graph.get_attr(x.target, type_expr=x.type)
                    comp.getattr_maps[x].meta = copy.copy(x.meta)
                return comp.getattr_maps[x]
            if x.op != "placeholder" and owner[x] is comp:
                return copied[x]
            if x not in comp.orig_inputs:
                comp.orig_inputs.append(x)
                ph = comp.graph.placeholder(x.name, type_expr=x.type)
                ph.meta = copy.copy(x.meta)
                comp.input_placeholders.append(ph)
                used_in_main[x] = None
            return comp.input_placeholders[comp.orig_inputs.index(x)]
        new = comp.graph.node_copy(node, remap)
        new.tag = node.tag
        copied[node] = new
        owner[new] = comp
    if output is None:
        raise RuntimeError("Graph had no output node!")
    for x in _nodes_in(output.args[0]):
        if x.op == "get_attr":
            main_env[x] = main.get_attr(x.name, type_expr=x.type)
        else:
            used_in_main[x] = None
    for n in used_in_main:
        if n.op != "placeholder":
            owner[n].orig_outputs.append(n)
    fqn_map: dict = {}
    for comp in components:
        outs = tuple(copied[n] for n in comp.orig_outputs)
        comp.graph.output(outs if return_tuple or len(outs) != 1 else outs[0])
        comp.gm, mapping = lift_subgraph_as_module(gm, subgraph=comp.graph, comp_name=comp.name)
        fqn_map.update(mapping)
        call = main.call_module(comp.name, args=tuple(main_env[x] for x in comp.orig_inputs), kwargs=None)
        if len(outs) == 1 and not return_tuple:
            main_env[comp.orig_outputs[0]] = call
        else:
            for i, o in enumerate(comp.orig_outputs):
                main_env[o] = main.call_function(operator.getitem, (call, i))
    main.output(map_arg(output.args[0], main_env.__getitem__))
    root = HolderModule({comp.name: comp.gm for comp in components})
    for x in _nodes_in(output.args[0]):
        if x.op == "get_attr":
            setattr(root, x.name, getattr_recursive(gm, x.target))
    result = GraphModuleCls(root, main)
    return (result, fqn_map) if return_fqn_mapping else result

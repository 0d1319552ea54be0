"""Constant folding of a traced module (torch.fx.experimental.const_fold): the nodes that depend only on
attributes (parameters, buffers, constants) are split off with split_module into a subgraph that runs once,
on the first call, its results kept as `_FX_CONST_FOLDED_ATTRS` parameters that the rest of the graph reads."""
from __future__ import annotations

import operator
import re
from typing import Any, Callable

from ... import ops
from ...nn import ParameterList
from ...nn.module import Module
from ...nn.parameter import Parameter
from ..graph import Graph
from ..graph_module import GraphModule
from ..node import Node, map_arg
from ..passes.split_module import split_module
from .._symbolic_trace import symbolic_trace

__all__ = ["FoldedGraphModule", "get_unique_attr_name_in_module", "split_const_subgraphs"]


class FoldedGraphModule(GraphModule):
    """A GraphModule whose constant part (`const_subgraph_module`) runs once, on the first call (or
    `run_folding()`), storing its results under `fx_const_folded_attrs_name`."""

    def __init__(self, root: Module, graph: Graph, const_subgraph: Graph | None = None,
                 fx_const_folded_attrs_name: str | None = None, device_for_folded_attrs: str = "cuda") -> None:
        super().__init__(root, graph)
        self.const_subgraph_module = None if const_subgraph is None else GraphModule(root, const_subgraph)
        self.has_folding_been_run = False
        self.fx_const_folded_attrs_name = fx_const_folded_attrs_name
        self.device_for_folded_attrs = device_for_folded_attrs

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if not self.has_folding_been_run:
            self.run_folding()
        return super().__call__(*args)

    def run_folding(self) -> None:
        """Run the constant subgraph and store its results as parameters (a ParameterList for several)."""
        if self.const_subgraph_module is None or self.fx_const_folded_attrs_name is None:
            return
        if self.has_folding_been_run:
            raise AssertionError("Folding has already been run")
        self.has_folding_been_run = True
        folded = self.const_subgraph_module()

        def as_param(value: Any) -> Parameter:
            if isinstance(value, int):  # (torch.Tensor([i]): a float tensor holding the int)
                return Parameter(ops.tensor([float(value)]).to(self.device_for_folded_attrs), requires_grad=False)
            return Parameter(value.detach().clone(), requires_grad=value.requires_grad)
        params = ParameterList([as_param(v) for v in folded]) if isinstance(folded, tuple) else as_param(folded)
        setattr(self, self.fx_const_folded_attrs_name, params)


def get_unique_attr_name_in_module(mod_traced: Module, name: str) -> str:
    """`name` made an identifier that no attribute of `mod_traced` has yet (a `_<n>` suffix counts up)."""
    name = re.sub("[^0-9a-zA-Z_]+", "_", name)
    if name[0].isdigit():
        name = f"_{name}"
    while hasattr(mod_traced, name):
        found = re.match(r"(.*)_(\d+)$", name)
        name = name + "_1" if found is None else f"{found.group(1)}_{int(found.group(2)) + 1}"
    return name


def _inline_module(gm: GraphModule, name: str, run_dce: bool = True) -> dict:
    """Replace the call of submodule `name` (a GraphModule) by its nodes; returns their original -> copy map."""
    inner = dict(gm.named_modules())[name]
    if not isinstance(inner, GraphModule):
        raise AssertionError(f"Expected GraphModule, got {type(inner)}")
    call = next((n for n in gm.graph.nodes if n.op == "call_module" and n.target == name), None)
    if call is None:
        raise AssertionError(f"Could not find call_module node for {name}")
    mapping: dict = {}

    def copied(node: Node) -> Node:
        new = mapping[node]
        new.meta = node.meta.copy()
        return new
    placeholders = 0
    for node in inner.graph.nodes:
        if node.op == "placeholder":
            mapping[node] = call.kwargs[node.name] if node.name in call.kwargs else call.args[placeholders]
            placeholders += 1
        elif node.op == "output":
            outputs = map_arg(node.args[0], copied)
            indexed = []
            if isinstance(outputs, (list, tuple)):  # `call[i]` readers take the i-th output directly
                indexed = [u for u in call.users if u.op == "call_function" and u.target is operator.getitem
                           and isinstance(u.args[1], int)]
            call.replace_all_uses_with(outputs)
            for user in indexed:
                user.replace_all_uses_with(outputs[user.args[1]])
                gm.graph.erase_node(user)
                mapping[user] = outputs[user.args[1]]
        else:
            with gm.graph.inserting_before(call):
                mapping[node] = gm.graph.node_copy(node, copied)
    gm.graph.erase_node(call)
    if run_dce:
        gm.graph.eliminate_dead_code()
    return mapping


def _has_impure_ops(module: GraphModule) -> bool:
    for node in module.graph.nodes:
        if node.op == "call_function" and node.is_impure():
            return True
        if node.op == "call_module":
            sub = module.get_submodule(node.target)
            if isinstance(sub, GraphModule):
                return _has_impure_ops(sub)
    return False


def _constant_nodes(mod: GraphModule, skip: Callable | None) -> tuple:
    """The nodes computed from attributes only (get_attr included), and whether any is more than a read."""
    const: set = set()
    folds = False
    for node in mod.graph.nodes:
        if node.op in ("placeholder", "output"):
            continue
        if node.op != "get_attr" and not set(node.all_input_nodes) <= const:
            continue
        if skip is not None and skip(node) or node.is_impure():
            continue
        if node.op == "call_module":
            sub = mod.get_submodule(node.target)
            if isinstance(sub, GraphModule) and _has_impure_ops(sub):
                continue
        const.add(node)
        folds = folds or node.op != "get_attr"
    return const, folds


def split_const_subgraphs(module: Module, skip_folding_node_fn: Callable[[Node], bool] | None = None,
                          device_for_folded_attrs: str = "cpu") -> FoldedGraphModule:
    """A FoldedGraphModule of `module` (traced unless it is a GraphModule) whose attribute-only computations
    run once; `skip_folding_node_fn(node)` True keeps a node out of the folding."""
    traced = module if isinstance(module, GraphModule) else symbolic_trace(module)
    const, folds = _constant_nodes(traced, skip_folding_node_fn)
    if not folds:
        return FoldedGraphModule(traced, traced.graph)
    split = split_module(traced, module, lambda node: 0 if node in const else 1)
    const_gm = split.submod_0
    rest = getattr(split, "submod_1", None)
    for gm in ([rest] if rest is not None else []) + [const_gm]:  # their submodules, reachable from the top
        for node in gm.graph.nodes:
            if node.op == "call_module":
                setattr(split, node.target, getattr(gm, node.target))
    const_args = next(n.args for n in split.graph.nodes if n.op == "call_module" and n.target == "submod_0")
    # the constant subgraph reads its inputs (attributes of the split module) itself
    root_const = GraphModule(split, const_gm.graph)
    multiple = False
    index = 0
    for node in list(root_const.graph.nodes):
        if node.op == "output":
            multiple = isinstance(node.args[0], tuple)
            continue
        if node.op != "placeholder":
            continue
        source = const_args[index]
        index += 1
        if source.op != "get_attr":
            raise AssertionError(f"Expected get_attr, got {source.op}")
        with root_const.graph.inserting_before(node):
            read = root_const.graph.get_attr(source.target)
        read.meta = node.meta.copy()
        node.replace_all_uses_with(read)
        root_const.graph.erase_node(node)
    attrs_name = get_unique_attr_name_in_module(traced, "_FX_CONST_FOLDED_ATTRS")
    setattr(split, attrs_name, ParameterList() if multiple else Parameter())
    call = next(n for n in split.graph.nodes if n.op == "call_module" and n.target == "submod_0")
    with split.graph.inserting_before(call):
        folded = split.graph.get_attr(attrs_name)
    folded.meta = call.meta.copy()
    call.replace_all_uses_with(folded)
    if hasattr(split, "submod_1"):
        _inline_module(split, "submod_1")
    split.graph.eliminate_dead_code()
    return FoldedGraphModule(split, split.graph, root_const.graph, attrs_name, device_for_folded_attrs)

"""Inference rewrites of traced models (torch.fx.experimental.optimization): fold each BatchNorm into the
Conv/Linear before it, drop Dropout modules, cut a subgraph out as its own GraphModule. torch's MKLDNN
passes (optimize_for_inference, modules_to_mkldnn) are left out: tidal has no MKLDNN layouts."""
from __future__ import annotations

import copy
from typing import Any, Iterable

from ... import nn
from ...nn import Dropout
from ...nn.module import Module
from ...nn.utils.fusion import fuse_conv_bn_eval
from ...nn.utils.fusion import fuse_linear_bn_eval
from ..graph import Graph
from ..graph_module import GraphModule
from ..interpreter import Transformer
from ..node import Node
from .._symbolic_trace import symbolic_trace

__all__ = ["matches_module_pattern", "replace_node_module", "fuse", "remove_dropout", "extract_subgraph"]


def _parent_name(target: str) -> tuple:
    *parent, name = target.rsplit(".", 1)
    return (parent[0] if parent else ""), name


def matches_module_pattern(pattern: Iterable[type], node: Node, modules: dict) -> bool:
    """Whether `node` and its first argument call modules of exactly the two types of `pattern` (first, node)."""
    if len(node.args) == 0:
        return False
    for expected, current in zip(pattern, (node.args[0], node)):
        if not isinstance(current, Node) or current.op != "call_module" or not isinstance(current.target, str):
            return False
        if current.target not in modules or type(modules[current.target]) is not expected:
            return False
    return True


def replace_node_module(node: Node, modules: dict, new_module: Module) -> None:
    """Install `new_module` where `node`'s call_module target points (and in `modules`)."""
    if not isinstance(node.target, str):
        raise AssertionError(f"Expected str target, got {type(node.target)}")
    parent, name = _parent_name(node.target)
    modules[node.target] = new_module
    setattr(modules[parent], name, new_module)


def fuse(model: Module, inplace: bool = False, no_trace: bool = False) -> GraphModule:
    """A GraphModule of `model` with every BatchNorm that alone follows a Conv1d/2d/3d or Linear folded into its
    weights (for inference: the running statistics are used). Copies `model` unless `inplace`."""
    patterns = [(nn.Conv1d, nn.BatchNorm1d), (nn.Conv2d, nn.BatchNorm2d), (nn.Conv3d, nn.BatchNorm3d),
                (nn.Linear, nn.BatchNorm1d)]
    if not inplace:
        model = copy.deepcopy(model)
    fx_model = model if no_trace and isinstance(model, GraphModule) else symbolic_trace(model)
    modules = dict(fx_model.named_modules())
    graph = copy.deepcopy(fx_model.graph)
    for first_type, bn_type in patterns:
        for node in graph.nodes:
            if not matches_module_pattern((first_type, bn_type), node, modules) or len(node.args[0].users) > 1:
                continue  # (a conv whose output has other readers keeps its own weights)
            first, bn = modules[node.args[0].target], modules[node.target]
            if not bn.track_running_stats:
                continue
            fused = fuse_linear_bn_eval(first, bn) if first_type is nn.Linear else fuse_conv_bn_eval(first, bn)
            replace_node_module(node.args[0], modules, fused)
            node.replace_all_uses_with(node.args[0])
            graph.erase_node(node)
    return GraphModule(fx_model, graph)


def remove_dropout(model: Module) -> GraphModule:
    """A GraphModule of `model` without its Dropout modules (each call replaced by its input)."""

    class DropoutRemover(Transformer):
        def call_module(self, target: str, args: tuple, kwargs: dict) -> Any:
            if isinstance(self.submodules[target], Dropout):
                if len(args) != 1:
                    raise AssertionError(f"Expected 1 arg for Dropout, got {len(args)}")
                return args[0]
            return super().call_module(target, args, kwargs)
    return DropoutRemover(symbolic_trace(model)).transform()


def extract_subgraph(orig_module: Module, nodes: list, inputs: list, outputs: list) -> GraphModule:
    """A GraphModule running `nodes` (of a graph of `orig_module`) from `inputs` to the list of `outputs`."""
    graph = Graph()
    env: dict = {}
    for inp in inputs:
        env[inp] = graph.placeholder(inp.name)
    for node in nodes:
        env[node] = graph.node_copy(node, lambda x: env[x])
    graph.output([env[out] for out in outputs])
    graph.lint()
    return GraphModule(orig_module, graph)

"""fx.GraphModule: a Module whose forward is Python generated from a Graph (torch.fx.GraphModule).

It holds the submodules, parameters and buffers the graph's call_module and get_attr nodes name (copied from
the root, with plain Modules standing in for the modules along a dotted path). Each instance has its own
class (named after the traced module), so `recompile()` can set that class's forward.
"""
from __future__ import annotations

import copy
import itertools
import linecache
from typing import Any

from ..nn.module import Module
from ..nn.parameter import Parameter
from ..tensor import Tensor
from .graph import Graph

__all__ = ["GraphModule"]

_KEYS = itertools.count()


def _copy_attr(from_module: Module, to_module: Module, target: str) -> None:
    *prefix, field = target.split(".")
    for item in prefix:
        f = getattr(from_module, item)
        t = getattr(to_module, item, None)
        if f is t:  # already installed (a whole submodule was copied)
            return
        if t is None:
            t = Module()
            setattr(to_module, item, t)
        from_module, to_module = f, t
    _set_field(to_module, field, getattr(from_module, field))


def _assign_attr(value: Any, to_module: Module, target: str) -> None:
    *prefix, field = target.split(".")
    for item in prefix:
        t = getattr(to_module, item, None)
        if t is None:
            t = Module()
            setattr(to_module, item, t)
        to_module = t
    _set_field(to_module, field, value)


def _set_field(module: Module, field: str, value: Any) -> None:
    if isinstance(value, Tensor) and not isinstance(value, Parameter):
        module.register_buffer(field, value)
    else:
        setattr(module, field, value)


class GraphModule(Module):
    """A Module running a Graph: `forward` is generated from it (`code`), `recompile()` after editing it."""

    def __new__(cls, *args, **kwargs):
        base = next(t for t in cls.__mro__ if t.__dict__.get("_fx_instance_class") is not True)

        class GraphModuleImpl(base):  # each instance its own class: forward is set on it
            _fx_instance_class = True
        return super().__new__(GraphModuleImpl)

    def __init__(self, root: Module | dict, graph: Graph, class_name: str = "GraphModule") -> None:
        super().__init__()
        type(self).__name__ = class_name
        type(self).__qualname__ = class_name
        if isinstance(root, Module):
            if hasattr(root, "training"):
                self.training = root.training
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    _copy_attr(root, self, node.target)
        elif isinstance(root, dict):
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    if node.target not in root:
                        raise RuntimeError(f"Node {node} referenced target {node.target} but that target was not "
                                           "provided in ``root``!")
                    _assign_attr(root[node.target], self, node.target)
        else:
            raise RuntimeError("Unsupported type " + str(root) + " passed for root!")
        self._tracer_cls = getattr(graph, "_tracer_cls", None)
        self.meta: dict = {}  # what passes note about the whole module (torch's GraphModule.meta)
        self.graph = graph

    @property
    def graph(self) -> Graph:
        """The graph this module runs (assigning one recompiles)."""
        return self._graph

    @graph.setter
    def graph(self, g: Graph) -> None:
        if not isinstance(g, Graph):
            raise AssertionError(f"Expected a Graph instance, but got {type(g)}")
        self._graph = g
        g.owning_module = self
        self.recompile()

    @property
    def code(self) -> str:
        """The Python source of forward."""
        if not hasattr(self, "_code"):
            raise RuntimeError("Code has not been generated! Please report a bug to PyTorch")
        return self._code

    def recompile(self):
        """Generate forward again from the (edited) graph; returns its PythonCode."""
        python_code = self._graph.python_code(root_module="self")
        self._code = python_code.src
        filename = f"<eval_with_key>.{next(_KEYS)}"
        linecache.cache[filename] = (len(self._code), None, self._code.splitlines(True), filename)
        namespace = dict(python_code.globals)
        exec(compile(self._code, filename, "exec", dont_inherit=True), namespace)
        cls = type(self)
        cls.forward = namespace["forward"]
        return python_code

    def print_readable(self, print_output: bool = True, include_stride: bool = False, include_device: bool = False,
                       colored: bool = False, **kwargs) -> str:
        """The module as a class with its forward's source, GraphModule children nested (printed unless
        print_output is False)."""
        text = _readable(self, type(self).__name__)
        if print_output:
            print(text)
        return text

    def __str__(self) -> str:
        return "\n".join([super().__str__(), self._code,
                          "# To see more debug info, please use `graph_module.print_readable()`"])

    def __deepcopy__(self, memo: dict) -> "GraphModule":
        state = {k: v for k, v in self.__dict__.items() if k != "_graph"}
        holder = Module()
        holder.__dict__.update(copy.deepcopy(state, memo))
        graph = copy.deepcopy(self._graph, memo)
        return GraphModule(holder, graph)  # (torch's copy is named GraphModule too)

    def __copy__(self) -> "GraphModule":
        new = GraphModule(self, self.graph, type(self).__name__)
        new.__dict__.update({k: v for k, v in self.__dict__.items() if k not in ("_graph", "_code")})
        return new

    def __reduce__(self):
        state = {k: v for k, v in self.__dict__.items() if k not in ("_graph", "_code")}
        return (_rebuild, (state, copy.deepcopy(self._graph), type(self).__name__))

    # -- submodules ------------------------------------------------------------------------------
    def add_submodule(self, target: str, m: Module) -> bool:
        """Install `m` at dotted path `target` (making plain Modules along the way); False if a non-Module blocks it."""
        *prefix, field = target.split(".")
        mod = self
        for item in prefix:
            sub = getattr(mod, item, None)
            if sub is None:
                sub = Module()
                mod.add_module(item, sub)
            if not isinstance(sub, Module):
                return False
            mod = sub
        mod.add_module(field, m)
        return True

    def delete_submodule(self, target: str) -> bool:
        """Remove the submodule at `target`; False if there is none."""
        *prefix, field = target.split(".")
        mod = self
        for item in prefix:
            if not hasattr(mod, item):
                return False
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                return False
        if not isinstance(getattr(mod, field, None), Module):
            return False
        delattr(mod, field)
        return True

    def delete_all_unused_submodules(self) -> None:
        """Remove the submodules no call_module or get_attr node of the graph reaches."""
        used: set = set()
        for node in self.graph.nodes:
            if node.op in ("call_module", "get_attr"):
                parts = node.target.split(".")
                used.update(".".join(parts[:i]) for i in range(1, len(parts) + 1))
                if node.op == "call_module":
                    used.update(f"{node.target}.{name}" for name, _ in self.get_submodule(node.target).named_modules())
        for name, _ in list(self.named_modules()):
            if name and name not in used:
                self.delete_submodule(name)


def _indent(text: str) -> str:
    first, *rest = text.split("\n")
    return "\n".join([first] + [("    " + line) if line.strip() else "" for line in rest]) if rest else text


def _readable(module: GraphModule, name: str) -> str:
    code = module.graph.python_code("self", verbose=True).src.lstrip("\n")
    text = _indent(f"class {name}(torch.nn.Module):\n" + code)
    children = [""] + [_readable(child, child_name) for child_name, child in module.named_children()
                       if isinstance(child, GraphModule)]
    return text + _indent("\n".join(children))


def _rebuild(state: dict, graph: Graph, class_name: str) -> GraphModule:
    holder = Module()
    holder.__dict__.update(state)
    return GraphModule(holder, graph, class_name)

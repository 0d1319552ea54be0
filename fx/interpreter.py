"""fx.Interpreter and fx.Transformer: run a GraphModule node by node, or rebuild it node by node.

Interpreter.run feeds the inputs to the placeholders and calls, for each node, the method named after its op
(placeholder, get_attr, call_function, call_method, call_module, output): subclasses override those to
observe or change execution. Values are dropped after their last use. Transformer runs the same methods on
Proxies of a new graph, so an override that returns something else rewrites the graph.
"""
from __future__ import annotations

import contextlib
from typing import Any, Iterator

from ._patch import Patcher
from .graph import Graph
from .graph_module import GraphModule
from .node import Node, map_aggregate, map_arg
from .proxy import Proxy
from .traceback import preserve_node_meta, set_current_meta
from .tracer import Tracer

__all__ = ["Interpreter", "Transformer"]


class Interpreter:
    """Runs a GraphModule's graph one node at a time (torch.fx.Interpreter)."""

    def __init__(self, module, garbage_collect_values: bool = True, graph: Graph | None = None) -> None:
        self.module = module
        self.submodules = dict(module.named_modules())
        self.graph = graph if graph is not None else module.graph
        self.env: dict = {}
        self.name = "Interpreter"
        self.garbage_collect_values = garbage_collect_values
        self.extra_traceback = True
        if garbage_collect_values:
            self.user_to_last_uses: dict = {}
            seen: set = set()
            for node in reversed(self.graph.nodes):
                for n in node.all_input_nodes:
                    if n not in seen:
                        seen.add(n)
                        self.user_to_last_uses.setdefault(node, []).append(n)

    def run(self, *args, initial_env: dict | None = None, enable_io_processing: bool = True) -> Any:
        """Run the graph on `args`; returns what its output node returns."""
        self.env = initial_env if initial_env is not None else {}
        self.args_iter: Iterator = iter(args)
        for node in self.graph.nodes:
            if node in self.env:  # given in initial_env: not run again
                continue
            try:
                self.env[node] = self.run_node(node)
            except Exception as e:
                if self.extra_traceback:  # torch's note on which node failed (its tlparse pointer left out)
                    msg = f"While executing {node.format_node()}"
                    msg = f"{e.args[0]}\n\n{msg}" if e.args else msg
                    msg += f"\nOriginal traceback:\n{node.stack_trace}"
                    e.args = (msg,) + e.args[1:]
                    if isinstance(e, KeyError):
                        raise RuntimeError(*e.args) from e
                raise
            if self.garbage_collect_values:
                for to_delete in self.user_to_last_uses.get(node, []):
                    self.env.pop(to_delete, None)
            if node.op == "output":
                return self.env[node]
        return None

    def boxed_run(self, args_list: list) -> Any:
        """run() with the inputs in a list that is cleared (so the inputs can be freed early)."""
        args = list(args_list)
        args_list.clear()
        return self.run(*args)

    @contextlib.contextmanager
    def _set_current_node(self, node: Node):
        yield

    def run_node(self, n: Node) -> Any:
        """Run one node: fetch its arguments from the environment and call the method of its op."""
        with self._set_current_node(n), set_current_meta(n):
            args, kwargs = self.fetch_args_kwargs_from_env(n)
            return getattr(self, n.op)(n.target, args, kwargs)

    # -- one method per op ------------------------------------------------------------------------
    def placeholder(self, target: str, args: tuple, kwargs: dict) -> Any:
        """The next input (the rest of them for `*args`; the default when the inputs ran out)."""
        if target.startswith("*"):
            return list(self.args_iter)
        try:
            return next(self.args_iter)
        except StopIteration:
            if len(args) > 0:
                return args[0]
            raise RuntimeError(f"Expected positional argument for parameter {target}, but one was not passed in!")

    def get_attr(self, target: str, args: tuple, kwargs: dict) -> Any:
        """The module's attribute at dotted path `target`."""
        return self.fetch_attr(target)

    def call_function(self, target, args: tuple, kwargs: dict) -> Any:
        """target(*args, **kwargs)."""
        return target(*args, **kwargs)

    def call_method(self, target: str, args: tuple, kwargs: dict) -> Any:
        """args[0].target(*args[1:], **kwargs)."""
        self_obj, *rest = args
        return getattr(self_obj, target)(*rest, **kwargs)

    def call_module(self, target: str, args: tuple, kwargs: dict) -> Any:
        """The submodule at `target` called with the arguments."""
        return self.fetch_attr(target)(*args, **kwargs)

    def output(self, target: str, args: tuple, kwargs: dict) -> Any:
        """What the graph returns."""
        return args[0]

    # -- helpers ----------------------------------------------------------------------------------
    def fetch_attr(self, target: str) -> Any:
        """Walk the dotted path `target` from the module."""
        attr = self.module
        for i, atom in enumerate(target.split(".")):
            if not hasattr(attr, atom):
                raise RuntimeError(f"Node referenced nonexistent target {'.'.join(target.split('.')[:i + 1])}")
            attr = getattr(attr, atom)
        return attr

    def fetch_args_kwargs_from_env(self, n: Node) -> tuple:
        """n's args and kwargs with each node replaced by its value."""
        return self.map_nodes_to_values(n.args, n), self.map_nodes_to_values(n.kwargs, n)

    def map_nodes_to_values(self, args: Any, n: Node) -> Any:
        """`args` with each node replaced by its value in the environment."""
        def load(n_arg: Node) -> Any:
            if n_arg not in self.env:
                raise RuntimeError(f"Node {n} referenced nonexistent value {n_arg}! Run Graph.lint() to diagnose "
                                   "such issues")
            return self.env[n_arg]
        return map_arg(args, load)


class _TransformerTracer(Tracer):
    def __init__(self, graph: Graph) -> None:
        super().__init__()
        self.graph = graph
        self.tensor_attrs = {}

    def is_leaf_module(self, m, module_qualified_name: str) -> bool:
        return True


class Transformer(Interpreter):
    """Rebuilds a GraphModule node by node on Proxies of a new graph; overrides rewrite it (torch.fx.Transformer)."""

    def __init__(self, module) -> None:
        super().__init__(module)
        self.new_graph = Graph()
        self.new_graph._tracer_cls = getattr(self.graph, "_tracer_cls", None)
        self.tracer = _TransformerTracer(self.new_graph)
        self.tracer.root = module

    def placeholder(self, target: str, args: tuple, kwargs: dict) -> Proxy:
        """A placeholder of the new graph (with the old one's default)."""
        import inspect
        default = next(iter(args), inspect.Signature.empty)
        return Proxy(self.new_graph.placeholder(target, default_value=default), self.tracer)

    def get_attr(self, target: str, args: tuple, kwargs: dict) -> Proxy:
        """A get_attr node of the new graph."""
        return self.tracer.create_proxy("get_attr", target, args, kwargs)

    def call_module(self, target: str, args: tuple, kwargs: dict) -> Any:
        """A call_module node of the new graph."""
        return self.tracer.call_module(self.fetch_attr(target), None, args, kwargs)

    def call_function(self, target, args: tuple, kwargs: dict) -> Any:
        """A call_function node of the new graph."""
        return self.tracer.create_proxy("call_function", target, args, kwargs)

    def call_method(self, target: str, args: tuple, kwargs: dict) -> Any:
        """A call_method node of the new graph."""
        return self.tracer.create_proxy("call_method", target, args, kwargs)

    def transform(self) -> GraphModule:
        """The rebuilt GraphModule."""
        self.tracer.submodule_paths = {id(m): name for name, m in reversed(list(self.module.named_modules()))}
        with Patcher(self.tracer, {}, {}), preserve_node_meta():
            result = super().run(enable_io_processing=False)
        if result is not None:
            self.new_graph.output(map_aggregate(result, lambda x: x.node if isinstance(x, Proxy) else x))
        return GraphModule(self.module, self.new_graph)

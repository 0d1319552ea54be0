"""fx.Graph: an ordered list of Nodes with unique names (torch.fx.Graph), and the edits passes make on it."""
from __future__ import annotations

import contextlib
import inspect
from typing import Any, Callable, Iterator

from ..nn.module import Module
from ._names import Namespace, snake_case, target_name
from .codegen import python_code
from .node import Node, map_arg

__all__ = ["Graph"]


class _NodeList:
    """`graph.nodes`: a live view of the node list (iterating survives erasing the current node)."""

    def __init__(self, graph: "Graph", reverse: bool = False) -> None:
        self._graph, self._reverse = graph, reverse

    def __len__(self) -> int:
        return self._graph._len

    def __iter__(self) -> Iterator[Node]:
        root = self._graph._root
        step = "_prev" if self._reverse else "_next"
        cur = getattr(root, step)
        while cur is not root:  # (an erased node keeps its links, so erasing while iterating is safe)
            if not cur._erased:
                yield cur
            cur = getattr(cur, step)

    def __reversed__(self) -> "_NodeList":
        return _NodeList(self._graph, not self._reverse)

    def __repr__(self) -> str:
        return repr(list(self))


class _InsertPoint:
    """Context that restores the graph's insertion point on exit (returned by inserting_before/after)."""

    def __init__(self, graph: "Graph", new_insert: Callable) -> None:
        self.graph = graph
        self.orig_insert, graph._insert = graph._insert, new_insert

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc) -> None:
        self.graph._insert = self.orig_insert


class Graph:
    """The nodes of a traced program, in execution order."""

    def __init__(self, owning_module: Any = None, tracer_cls: Any = None, tracer_extras: dict | None = None) -> None:
        self._root = Node(self, "", "root", "", (), {})
        self._namespace = Namespace()
        self._insert = self._root.prepend
        self._len = 0
        self._owning_module = owning_module
        self._tracer_cls = tracer_cls
        self._tracer_extras = tracer_extras
        self._codegen = None

    @property
    def owning_module(self):
        """The GraphModule that runs this graph (None for a free graph)."""
        return self._owning_module

    @owning_module.setter
    def owning_module(self, mod) -> None:
        self._owning_module = mod

    @property
    def nodes(self) -> _NodeList:
        """The nodes in order (a live view)."""
        return _NodeList(self)

    def output_node(self) -> Node:
        """The graph's output node (its last node)."""
        last = self._root._prev
        if last.op != "output":
            raise AssertionError(f"Expected output node, got op={last.op}")
        return last

    def find_nodes(self, *, op: str, target: Any = None, sort: bool = True) -> list:
        """The nodes with this op (and target, when given)."""
        return [n for n in self.nodes if n.op == op and (target is None or n.target == target)]

    # -- making nodes --------------------------------------------------------------------------------
    def create_node(self, op: str, target: Any, args: tuple | None = None, kwargs: dict | None = None,
                    name: str | None = None, type_expr: Any = None) -> Node:
        """A new node at the insertion point (the end, unless inside inserting_before/after)."""
        args = () if args is None else args
        kwargs = {} if kwargs is None else kwargs
        if not isinstance(args, tuple):
            raise AssertionError("args must be a tuple")
        if not isinstance(kwargs, dict):
            raise AssertionError("kwargs must be a dict")
        candidate = name if name is not None else self._target_to_str(target)
        name = self._namespace.create_name(candidate, None)
        node = Node(self, name, op, target, args, kwargs, type_expr)
        self._insert(node)
        self._len += 1
        return node

    def _target_to_str(self, target: Any) -> str:
        if callable(target) and not isinstance(target, str):
            op = target_name(target)
        else:
            op = target
            if isinstance(op, str) and len(op) > 4 and op.startswith("__") and op.endswith("__"):
                op = op[2:-2]  # a dunder method's node reads as its name: getitem
        return snake_case(str(op))

    def placeholder(self, name: str, type_expr: Any = None, default_value: Any = inspect.Signature.empty) -> Node:
        """An input of the graph named `name` (with a default when `default_value` is given)."""
        args = () if default_value is inspect.Signature.empty else (default_value,)
        return self.create_node("placeholder", name, args, type_expr=type_expr)

    def get_attr(self, qualified_name: str, type_expr: Any = None) -> Node:
        """A node reading attribute `qualified_name` (dotted) of the owning module."""
        return self.create_node("get_attr", qualified_name, type_expr=type_expr)

    def call_module(self, module_name: str, args: tuple | None = None, kwargs: dict | None = None,
                    type_expr: Any = None) -> Node:
        """A node calling submodule `module_name` of the owning module."""
        return self.create_node("call_module", module_name, args, kwargs, type_expr=type_expr)

    def call_method(self, method_name: str, args: tuple | None = None, kwargs: dict | None = None,
                    type_expr: Any = None) -> Node:
        """A node calling method `method_name` on args[0]."""
        return self.create_node("call_method", method_name, args, kwargs, type_expr=type_expr)

    def call_function(self, the_function: Callable, args: tuple | None = None, kwargs: dict | None = None,
                      type_expr: Any = None) -> Node:
        """A node calling `the_function`."""
        return self.create_node("call_function", the_function, args, kwargs, type_expr=type_expr)

    def output(self, result: Any, type_expr: Any = None) -> Node:
        """The graph's output node (what forward returns)."""
        return self.create_node("output", "output", (result,), type_expr=type_expr)

    def node_copy(self, node: Node, arg_transform: Callable[[Node], Any] = lambda x: x) -> Node:
        """A copy of `node` (from any graph) here, its node arguments mapped through `arg_transform`."""
        args = map_arg(node.args, arg_transform)
        kwargs = map_arg(node.kwargs, arg_transform)
        name = node.name if node.op != "placeholder" else node.target
        copy = self.create_node(node.op, node.target, args, kwargs, name, node.type)
        copy.meta = dict(node.meta)
        return copy

    def graph_copy(self, g: "Graph", val_map: dict, return_output_node: bool = False) -> Any:
        """Copy every node of `g` here (val_map maps g's nodes to the copies); returns the copied output value."""
        for node in g.nodes:
            if node in val_map:
                continue
            if node.op == "output":
                out = map_arg(node.args[0], lambda n: val_map[n])
                return (out, node) if return_output_node else out
            val_map[node] = self.node_copy(node, lambda n: val_map[n])
        return None

    def __deepcopy__(self, memo: dict) -> "Graph":
        g = Graph(tracer_cls=self._tracer_cls)
        out = g.graph_copy(self, {}, return_output_node=True)
        if out is not None:
            value, old = out
            g.output(value, type_expr=old.type)
        return g

    # -- editing -------------------------------------------------------------------------------------
    def inserting_before(self, n: Node | None = None) -> _InsertPoint:
        """Context (and setting) making new nodes go before `n` (the start of the graph when None)."""
        if n is None:
            return self.inserting_after(self._root)
        if n.graph is not self:
            raise AssertionError("Node to insert before is not in graph.")
        return _InsertPoint(self, n.prepend)

    def inserting_after(self, n: Node | None = None) -> _InsertPoint:
        """Context (and setting) making new nodes go after `n` (the end of the graph when None)."""
        if n is None:
            return self.inserting_before(self._root)
        if n.graph is not self:
            raise AssertionError("Node to insert after is not in graph.")
        return _InsertPoint(self, n.append)

    def erase_node(self, to_erase: Node) -> None:
        """Remove a node that nothing uses any more."""
        if len(to_erase.users) > 0:
            raise RuntimeError(f"Tried to erase Node {to_erase} but it still had {len(to_erase.users)} users in "
                               f"the graph: {to_erase.users}!")
        if to_erase.graph is not self:
            raise RuntimeError(f"Attempting to remove {to_erase} from wrong graph!")
        if to_erase._erased:
            import warnings
            warnings.warn(f"erase_node({to_erase}) on an already erased node")
            return
        to_erase._remove_from_list()
        to_erase._erased = True
        self._len -= 1  # (its name stays taken: torch never hands an erased node's name out again)
        to_erase.args, to_erase.kwargs = (), {}  # drop it from its inputs' users

    def eliminate_dead_code(self, is_impure_node: Callable[[Node], bool] | None = None) -> bool:
        """Erase the nodes no one uses and that have no side effects; whether anything was erased."""
        changed = False
        for node in reversed(self.nodes):
            impure = is_impure_node(node) if is_impure_node is not None else node.is_impure()
            if not impure and len(node.users) == 0:
                self.erase_node(node)
                changed = True
        return changed

    def lint(self) -> None:
        """Check the graph is well formed: links, names, defined-before-use, output last, targets exist."""
        seen: set = set()
        names: set = set()
        for node in self.nodes:
            if node.graph is not self:
                raise RuntimeError(f"Node '{node}' does not belong to this Graph!")
            if node.name in names:
                raise RuntimeError(f"Node redefined name {node.name}!")
            for arg in node.all_input_nodes:
                if arg not in seen:
                    raise RuntimeError(f"Argument '{arg}' of Node '{node}' was used before it has been defined! "
                                       "Please check that Nodes in the graph are topologically ordered\n"
                                       f"{self}")
                if node not in arg.users:
                    raise RuntimeError(f"Node '{node}' is not a user of its argument '{arg}'")
            for user in node.users:
                if user._erased or user.graph is not self:
                    raise RuntimeError(f"Node '{node}' has a user '{user}' outside this graph")
            seen.add(node)
            names.add(node.name)
        outputs = [n for n in self.nodes if n.op == "output"]
        if len(outputs) > 1 or outputs and outputs[0] is not self._root._prev:
            raise RuntimeError("The output node must be the graph's last node, and only one")
        mod = self.owning_module
        if mod is None:
            return
        for node in self.nodes:
            if node.op in ("get_attr", "call_module"):
                owner = mod
                for i, atom in enumerate(node.target.split(".")):
                    if not hasattr(owner, atom):
                        seen_qualname = ".".join(node.target.split(".")[:i])
                        raise RuntimeError(f"Node {node} target {node.target} references nonexistent attribute "
                                           f"{atom} of {seen_qualname}")
                    owner = getattr(owner, atom)
                if node.op == "call_module" and not isinstance(owner, Module):
                    raise RuntimeError(f"Node {node} target {node.target} {atom} of {seen_qualname} does not "
                                       "reference an nn.Module")

    # -- text and code -------------------------------------------------------------------------------
    def python_code(self, root_module: str = "self", *, verbose: bool = False, **kwargs):
        """The PythonCode (source and globals) of a forward running this graph."""
        return python_code(self, root_module, verbose)

    def on_generate_code(self, make_transformer: Callable) -> contextlib.AbstractContextManager:
        """torch's hook around code generation: tidal generates one way, so this only yields."""
        return contextlib.nullcontext()

    def __str__(self) -> str:
        placeholders: list = []
        lines = [n.format_node(placeholders) for n in self.nodes]
        return "graph():\n" + "\n".join("    " + line for line in lines)

    def print_tabular(self) -> None:
        """Print the nodes as a table (needs the `tabulate` package, as torch's does)."""
        try:
            from tabulate import tabulate
        except ImportError:
            print("`print_tabular` relies on the library `tabulate`, which could not be found on this machine. "
                  "Run `pip install tabulate` to install the library.")
            raise
        rows = [[n.op, n.name, n.target, n.args, n.kwargs] for n in self.nodes]
        print(tabulate(rows, headers=["opcode", "name", "target", "args", "kwargs"]))

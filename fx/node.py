"""fx.Node: one operation of a Graph (torch.fx.Node), and the helpers that map over its arguments.

A node is `op` (placeholder, get_attr, call_function, call_method, call_module, output), a `target`, `args`
and `kwargs` in which other nodes appear (nested in lists, tuples, dicts and slices). Each node knows its
users (the nodes whose arguments name it); setting `args`/`kwargs` keeps those links current. The nodes of a
graph form a doubly linked list through `prev`/`next` around the graph's root sentinel.
"""
from __future__ import annotations

import builtins
import operator
import types
from typing import Any, Callable

from ..tensor.dtype import dtype
from ._names import qualified_name
from .immutable_collections import immutable_dict, immutable_list

__all__ = ["Node", "map_arg", "map_aggregate", "Argument", "Target"]

Argument = Any
Target = Any
OPCODES = ("placeholder", "call_method", "call_module", "call_function", "get_attr", "output", "root")

# functions whose call does something besides returning a value: never dead code
_SIDE_EFFECTS: set = set()


def map_aggregate(a: Argument, fn: Callable) -> Argument:
    """Apply `fn` to every leaf of `a` (through tuples, lists, dicts and slices), rebuilding the containers."""
    if isinstance(a, tuple):
        mapped = tuple(map_aggregate(e, fn) for e in a)
        return type(a)(*mapped) if hasattr(a, "_fields") else mapped  # named tuples keep their type
    if isinstance(a, list):
        return immutable_list(map_aggregate(e, fn) for e in a)
    if isinstance(a, dict):
        return immutable_dict((k, map_aggregate(v, fn)) for k, v in a.items())
    if isinstance(a, slice):
        return slice(map_aggregate(a.start, fn), map_aggregate(a.stop, fn), map_aggregate(a.step, fn))
    return fn(a)


def map_arg(a: Argument, fn: Callable[["Node"], Argument]) -> Argument:
    """Apply `fn` to every Node in `a`, leaving the other leaves as they are."""
    if not callable(fn):
        raise AssertionError("torch.fx.map_arg(a, fn): fn must be a callable")
    return map_aggregate(a, lambda x: fn(x) if isinstance(x, Node) else x)


def _qualified_name(fn: Any) -> str:
    """How a call_function target reads in the graph's text: torch.add, operator.mul, getattr."""
    return qualified_name(fn)


class Node:
    """One operation in a Graph."""

    def __init__(self, graph, name: str, op: str, target: Target, args: tuple, kwargs: dict,
                 return_type: Any = None) -> None:
        if op not in OPCODES:
            raise AssertionError(f"Unknown opcode {op}")
        if op in ("call_method", "call_module", "get_attr", "placeholder") and not isinstance(target, str):
            raise ValueError(f"Node [graph = {graph}, name = '{name}'] target {target} has type "
                             f"{type(target)} but a str is expected")
        if op == "call_function" and not callable(target):
            raise ValueError(f"Node [graph = {graph}, name = '{name}'] target {target} has type "
                             f"{type(target)} but a Callable is expected")
        self.graph = graph
        self.name = name
        self.op = op
        self.target = target
        self._input_nodes: dict = {}
        self._args: tuple = ()
        self._kwargs: dict = {}
        self.__update_args_kwargs(args, kwargs)
        self.users: dict = {}
        self.type = return_type
        self._prev = self
        self._next = self
        self._erased = False
        self.meta: dict = {}

    # -- position in the graph's list --------------------------------------------------------------
    @property
    def next(self) -> "Node":
        """The node after this one."""
        return self._next

    @property
    def prev(self) -> "Node":
        """The node before this one."""
        return self._prev

    def prepend(self, x: "Node") -> None:
        """Move `x` (of the same graph) to just before this node."""
        if self.graph is not x.graph:
            raise AssertionError("Attempting to move a Node into a different Graph")
        if self is x:
            return
        x._remove_from_list()
        p = self._prev
        p._next, x._prev = x, p
        x._next, self._prev = self, x

    def append(self, x: "Node") -> None:
        """Move `x` (of the same graph) to just after this node."""
        self._next.prepend(x)

    def _remove_from_list(self) -> None:
        p, n = self._prev, self._next
        p._next, n._prev = n, p

    # -- arguments ---------------------------------------------------------------------------------
    @property
    def args(self) -> tuple:
        """The positional arguments (other nodes appear as Nodes)."""
        return self._args

    @args.setter
    def args(self, a: tuple) -> None:
        self.__update_args_kwargs(a, self._kwargs)

    @property
    def kwargs(self) -> dict:
        """The keyword arguments (other nodes appear as Nodes)."""
        return self._kwargs

    @kwargs.setter
    def kwargs(self, k: dict) -> None:
        self.__update_args_kwargs(self._args, k)

    @property
    def all_input_nodes(self) -> list:
        """The distinct nodes this node's arguments name, in order of appearance."""
        return list(self._input_nodes)

    def update_arg(self, idx: int, arg: Argument) -> None:
        """Set positional argument `idx` to `arg`."""
        args = list(self._args)
        args[idx] = arg
        self.args = tuple(args)

    def insert_arg(self, idx: int, arg: Argument) -> None:
        """Insert `arg` among the positional arguments at `idx`."""
        args = list(self._args)
        args.insert(idx, arg)
        self.args = tuple(args)

    def update_kwarg(self, key: str, arg: Argument) -> None:
        """Set keyword argument `key` to `arg`."""
        self.kwargs = {**self._kwargs, key: arg}

    def __update_args_kwargs(self, new_args: tuple, new_kwargs: dict) -> None:
        for old in self._input_nodes:
            old.users.pop(self, None)
        self._input_nodes = {}
        seen = self._input_nodes

        def note(n: Node) -> Node:
            if getattr(n, "graph", None) is not None and n.graph is not self.graph:
                raise AssertionError(f"Node {self} uses Node {n} from another graph")
            seen.setdefault(n, None)
            return n
        self._args = map_arg(tuple(new_args), note)
        self._kwargs = map_arg(dict(new_kwargs), note)
        for n in seen:
            n.users.setdefault(self, None)

    def replace_all_uses_with(self, replace_with: "Node", delete_user_cb: Callable = lambda user: True, *,
                              propagate_meta: bool = False) -> list:
        """Make every user of this node use `replace_with` instead; returns the users changed."""
        if propagate_meta:
            if replace_with.meta:
                raise AssertionError("Called node.replace_all_uses_with(replace_with, propagate_meta=True), "
                                     "but replace_with already has .meta keys")
            replace_with.meta.update(self.meta)
        changed = []
        for user in list(self.users):
            if not delete_user_cb(user):
                continue
            user.replace_input_with(self, replace_with)
            changed.append(user)
        return changed

    def replace_input_with(self, old_input: "Node", new_input: "Node") -> None:
        """Replace every occurrence of `old_input` among this node's arguments with `new_input`."""
        swap = (lambda n: new_input if n is old_input else n)
        self.__update_args_kwargs(map_arg(self._args, swap), map_arg(self._kwargs, swap))

    # -- properties used by passes -----------------------------------------------------------------
    @property
    def stack_trace(self) -> str | None:
        """Where the traced program made this node (when recorded)."""
        return self.meta.get("stack_trace")

    @stack_trace.setter
    def stack_trace(self, trace: str | None) -> None:
        self.meta["stack_trace"] = trace

    def is_impure(self, impure_random: bool = True) -> bool:
        """Whether dead-code elimination must keep this node (placeholders, outputs, side effects)."""
        if self.op in ("placeholder", "output"):
            return True
        if self.op == "call_module":
            owner = self.graph.owning_module
            if owner is None:
                raise AssertionError("self.graph.owning_module not set for purity check")
            return bool(getattr(owner.get_submodule(self.target), "_is_impure", False))
        if self.op == "call_function":
            if self.target in _SIDE_EFFECTS:
                return True
            packet = getattr(self.target, "overloadpacket", None)  # (an ATen op: its op's name, add_ of add_.Tensor)
            name = packet.__name__ if packet is not None else getattr(self.target, "__name__", "")
            return name.endswith("_") and not name.endswith("__") or \
                self.kwargs.get("out") is not None or \
                impure_random and name in ("rand", "randn", "randint", "rand_like", "randn_like", "dropout",
                                           "bernoulli", "multinomial", "normal", "randperm")
        if self.op == "call_method":
            return isinstance(self.target, str) and self.target.endswith("_") and not self.target.endswith("__")
        return False

    # -- text --------------------------------------------------------------------------------------
    def __repr__(self) -> str:
        return self.name

    def _pretty_print_target(self, target: Target) -> str:
        if isinstance(target, str):
            return target
        if getattr(target, "__module__", None) == "builtins" and hasattr(target, "__name__"):
            return f"builtins.{target.__name__}"  # (the graph's text spells builtins out; the code does not)
        return _qualified_name(target)

    def format_node(self, placeholder_names: list | None = None, maybe_return_typename: list | None = None) -> str:
        """The node as one line of the graph's text (`%name : [num_users=N] = op[target=...](...)`)."""
        if self.op == "placeholder":
            if placeholder_names is not None:
                placeholder_names.append(self.target)
            typename = f"{_type_repr(self.type)}[num_users={len(self.users)}]"
            default = f"(default={self.args[0]})" if self.args else ""
            return f"%{self.name} : {typename} = {self.op}[target={self.target}]{default}"
        if self.op == "get_attr":
            target = self._pretty_print_target(self.target)
            return f"%{self.name} : [num_users={len(self.users)}] = {self.op}[target={target}]"
        if self.op == "output":
            return f"return {self.args[0]}"
        target = self.meta.get("torch_spelling") or self._pretty_print_target(self.target)
        return (f"%{self.name} : {_type_repr(self.type)}[num_users={len(self.users)}] = {self.op}[target="
                f"{target}](args = {_format_arg(self.args)}, kwargs = "
                f"{_format_arg(self.kwargs)})")


def _type_repr(t: Any) -> str:
    """A node's annotation as the graph's text shows it, with the space after it ('' when none)."""
    if t is None:
        return ""
    if isinstance(t, str):
        return f"{t!r} "  # a postponed annotation reads quoted, as torch's text shows it
    if isinstance(t, type):
        if t.__module__ == "builtins":
            return t.__qualname__ + " "
        if t.__module__.startswith("tidal.") and t.__name__ == "Tensor":
            return "torch.Tensor "
        return f"{t.__module__}.{t.__qualname__} "
    return f"{t} "


def _format_arg(arg: Argument) -> str:
    """An argument as the graph's text shows it: nodes as %name."""
    if isinstance(arg, tuple) and not hasattr(arg, "_fields"):
        inner = ", ".join(_format_arg(a) for a in arg)
        return f"({inner},)" if len(arg) == 1 else f"({inner})"
    if isinstance(arg, list):
        return "[" + ", ".join(_format_arg(a) for a in arg) + "]"
    if isinstance(arg, dict):
        return "{" + ", ".join(f"{k}: {_format_arg(v)}" for k, v in arg.items()) + "}"
    if isinstance(arg, Node):
        return "%" + str(arg)
    if isinstance(arg, (types.FunctionType, types.BuiltinFunctionType)):
        return _qualified_name(arg)
    if isinstance(arg, dtype):  # torch.float32, whether or not compat is installed
        return "torch." + str(arg).rsplit(".", 1)[-1]
    return str(arg)


_SIDE_EFFECTS.update({operator.setitem, builtins.print})

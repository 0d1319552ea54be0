"""fx.Proxy: the value that flows through a traced program and records what is done to it (torch.fx.Proxy).

Operators on a Proxy record `call_function` nodes of the `operator` functions, attribute reads record
`getattr` (or, when called, `call_method`), and torch functions reach `Proxy.__torch_function__` (tidal's
public functions dispatch there once the call fails on the Proxy). A Proxy that reaches tidal's library code
while one of those public functions runs stops it at once (`LibraryUse`, a TypeError) so that the function
records one node, never the inner steps it took before failing.
"""
from __future__ import annotations

import dis
import operator
import os
import sys
from bisect import bisect_left
import traceback
from typing import Any, Callable

from .. import ops
from ._functional_calls import recorded_call
from ._names import MAGIC_METHODS, REFLECTABLE
from ..tensor.device import device
from ..tensor.dtype import dtype
from .node import Node, map_aggregate
from .traceback import copy_current_meta

__all__ = ["Proxy", "Attribute", "TraceError", "GraphAppendingTracer", "LibraryUse"]

_FX_DIR = os.path.dirname(os.path.abspath(__file__))
_PKG_DIR = os.path.dirname(_FX_DIR)
_OWN_DIRS = (_FX_DIR + os.sep, os.path.join(_PKG_DIR, "tests") + os.sep)


class TraceError(ValueError):
    """A traced program did something symbolic tracing cannot record (control flow on a Proxy)."""


class LibraryUse(TypeError):
    """A Proxy reached tidal's library code: the torch function called with it records one node instead."""


class LibraryAttribute(AttributeError):
    """An attribute of a Proxy read by tidal's library code under a public op (so `getattr(x, name, default)`
    probes answer the default); the op then records one node."""


_DISPATCHING: list = []  # code objects of tidal's public op wrappers (they dispatch to __torch_function__)


def _dispatching_code():
    if not _DISPATCHING:
        _DISPATCHING.append(ops.add.__code__)  # every public op shares the code of ops' `public` wrapper
    return _DISPATCHING[0]


def _is_library(filename: str) -> bool:
    return filename.startswith(_PKG_DIR + os.sep) and not filename.startswith(_OWN_DIRS)


def _from_library(depth: int = 2) -> bool:
    """Whether the code `depth` frames up is tidal's library running under one of its public ops (which will
    hand the call to Proxy.__torch_function__ once it fails). Library code reached otherwise (the forward of
    a module a tracer does not treat as a leaf) is traced through, as torch traces Python code."""
    frame = sys._getframe(depth)
    public = _dispatching_code()
    while frame is not None and _is_library(frame.f_code.co_filename):
        if frame.f_code is public:
            return True
        frame = frame.f_back
    return False


def _check_caller(proxy: "Proxy", what: str, error: type = LibraryUse) -> None:
    if _from_library(3):
        frame = sys._getframe(2)
        raise error(f"a traced value ({proxy!r}) reached tidal's library code ({what} at "
                    f"{frame.f_code.co_filename}:{frame.f_lineno}); a torch function, tensor method or operator "
                    "applied to it directly is recorded as one node")


class TracerBase:
    """Turns calls on Proxies into nodes of `self.graph`."""

    graph: Any  # (fx's Graph)
    record_stack_traces = False
    check_mutable_operations = False
    trace_asserts = False
    proxy_buffer_attributes = False
    traced_func_name = "forward"
    scope = None

    def create_node(self, kind: str, target: Any, args: tuple, kwargs: dict, name: str | None = None,
                    type_expr: Any = None) -> Node:
        """A node in the graph (subclasses may annotate it); with `record_stack_traces`, where the traced
        program made it, from its first `forward` frame on (torch's rule)."""
        node = self.graph.create_node(kind, target, args, kwargs, name, type_expr)
        if self.record_stack_traces and not node.stack_trace:
            frames = [f for f in traceback.extract_stack() if not _is_library(f.filename)
                      and not f.filename.startswith(_FX_DIR)]
            start = next((i for i, f in enumerate(frames) if f.name == "forward"), None)
            if start is not None:
                node.stack_trace = "".join(traceback.StackSummary.from_list(frames[start:]).format()).strip()
        return node

    def proxy(self, node: Node) -> Proxy:
        """The Proxy standing for `node`'s value."""
        return Proxy(node, self)

    def create_proxy(self, kind: str, target: Any, args: tuple, kwargs: dict, name: str | None = None,
                     type_expr: Any = None, proxy_factory_fn: Callable | None = None) -> Proxy:
        """Record one operation (its Proxy arguments become nodes) and return a Proxy of its result."""
        args_ = self.create_arg(args)
        kwargs_ = self.create_arg(kwargs)
        node = self.create_node(kind, target, args_, kwargs_, name, type_expr)
        copy_current_meta(node)  # (a pass under traceback.preserve_node_meta: where the node came from)
        return self.proxy(node) if proxy_factory_fn is None else proxy_factory_fn(node)

    def create_arg(self, a: Any) -> Any:
        """`a` as a node argument: Proxies become their nodes, containers are rebuilt, constants kept."""
        if isinstance(a, Proxy):
            return a.node
        if isinstance(a, Node):
            return a
        if isinstance(a, tuple) and hasattr(a, "_fields"):
            return type(a)(*(self.create_arg(e) for e in a))
        if isinstance(a, list):
            return [self.create_arg(e) for e in a]
        if isinstance(a, tuple):
            return tuple(self.create_arg(e) for e in a)
        if isinstance(a, dict):
            out = {}
            for k, v in a.items():
                if not isinstance(k, str):
                    k = self.create_arg(k)
                    if isinstance(k, Node):
                        raise RuntimeError(f"Keys for dictionaries used as an argument cannot contain a Node. "
                                           f"Got key: {k}")
                out[k] = self.create_arg(v)
            return out
        if isinstance(a, slice):
            return slice(self.create_arg(a.start), self.create_arg(a.stop), self.create_arg(a.step))
        if isinstance(a, range):
            return range(self.create_arg(a.start), self.create_arg(a.stop), self.create_arg(a.step))
        if a is None or a is ... or isinstance(a, (str, int, float, bool, complex, dtype, device)):
            return a
        if callable(a) and hasattr(a, "__name__") or isinstance(a, type):
            return a
        from .. import compat  # compat sits above: KNOWN_UPWARD in tests/test_layers.py
        if isinstance(a, (compat.memory_format, compat.layout)):
            return a
        raise NotImplementedError(f"argument of type: {type(a)}")

    def to_bool(self, obj: Proxy) -> bool:
        """`bool(proxy)`: control flow on a traced value cannot be recorded."""
        raise TraceError("symbolically traced variables cannot be used as inputs to control flow")

    def iter(self, obj: Proxy):
        """`iter(proxy)`: refused (only `a, b = proxy` unpacking is traced)."""
        raise TraceError("Proxy object cannot be iterated. This can be attempted when the Proxy is used in a "
                         "loop or as a *args or **kwargs function argument. See the torch.fx docs on pytorch.org "
                         "for a more detailed explanation of what types of control flow can be traced, and "
                         "check out the Proxy docstring for help troubleshooting Proxy iteration errors")

    def keys(self, obj: Proxy):
        """`**proxy`: a call_method node `keys`."""
        return Proxy(self.create_node("call_method", "keys", (obj.node,), {}), self)


class GraphAppendingTracer:
    """The minimal tracer for Proxies made over an existing graph: new nodes go at its insertion point."""

    def __init__(self, graph) -> None:
        self.graph = graph
        self.scope = None
        self._base = TracerBase()
        self._base.graph = graph

    def __getattr__(self, name: str):
        return getattr(self._base, name)


class Proxy:
    """A stand-in for a value in a traced program; every use becomes a node of the tracer's graph."""

    def __init__(self, node: Node, tracer: Any = None) -> None:
        if tracer is None:
            tracer = GraphAppendingTracer(node.graph)
        self.tracer = tracer
        self.node = node

    def __repr__(self) -> str:
        return f"Proxy({self.node.name})"

    __hash__ = object.__hash__

    def __getattr__(self, k: str) -> "Attribute":
        if k.startswith("__") and k.endswith("__"):  # copy/pickle probe these: not tensor attributes
            raise AttributeError(k)
        _check_caller(self, f".{k}", LibraryAttribute)
        return Attribute(self, k)

    def __getstate__(self) -> dict:
        return dict(self.__dict__)

    def __setstate__(self, state: dict) -> None:
        self.__dict__ = state

    def __call__(self, *args, **kwargs) -> "Proxy":
        return self.tracer.create_proxy("call_method", "__call__", (self,) + args, kwargs)

    def __iter__(self):
        _check_caller(self, "iteration")
        frame = sys._getframe(1)
        code = frame.f_code
        instructions = list(dis.get_instructions(code))
        at = bisect_left([i.offset for i in instructions], frame.f_lasti)
        inst = instructions[at] if at < len(instructions) else None
        if inst is not None and inst.opname == "UNPACK_SEQUENCE":  # `a, b = proxy`: as many items as names
            return (self[i] for i in range(inst.argval))
        return self.tracer.iter(self)

    def __bool__(self) -> bool:
        _check_caller(self, "bool()")
        return self.tracer.to_bool(self)

    def keys(self):
        """What `**proxy` unpacks (the tracer decides; by default a call_method node `keys`)."""
        return self.tracer.keys(self)

    def __len__(self) -> int:
        _check_caller(self, "len()")
        raise RuntimeError("'len' is not supported in symbolic tracing by default. If you want this call to be "
                           "recorded, please call torch.fx.wrap('len') at module scope")

    @classmethod
    def __torch_function__(cls, orig_method, types, args=(), kwargs=None):
        """Record a torch function called with a Proxy as one call_function node."""
        kwargs = kwargs or {}
        tracers: list = []

        def find(a):
            if isinstance(a, Proxy) and a.tracer not in tracers:
                tracers.append(a.tracer)
            return a
        map_aggregate(args, find)
        map_aggregate(kwargs, find)
        if len(tracers) > 1:
            raise RuntimeError(f"Found multiple different tracers {tracers} while trying to trace operation "
                               f"{orig_method}")
        recorded = recorded_call(orig_method, tuple(args), dict(kwargs))  # F.<fn>: torch's argument list
        if recorded is not None:
            proxy = tracers[0].create_proxy(*recorded[:4])
            if recorded[4] is not None:
                proxy.node.meta["torch_spelling"] = recorded[4]
            return proxy
        return tracers[0].create_proxy("call_function", orig_method, tuple(args), dict(kwargs))


class Attribute(Proxy):
    """`proxy.name`: a getattr node made when the value is used, or a call_method node when it is called."""

    def __init__(self, root: Proxy, attr: str) -> None:
        self.root = root
        self.attr = attr
        self.tracer = root.tracer
        self._node = None

    @property
    def node(self) -> Node:
        """The getattr node (made on first use)."""
        if self._node is None:
            self._node = self.tracer.create_proxy("call_function", getattr, (self.root, self.attr), {}).node
        return self._node

    def __call__(self, *args, **kwargs) -> Proxy:
        return self.tracer.create_proxy("call_method", self.attr, (self.root,) + args, kwargs)


def _dunder(name: str) -> str:
    return f"__{name.rstrip('_')}__"


def _make_magic(name: str):
    target = getattr(operator, name)

    def impl(*args):
        _check_caller(args[0], name)
        return args[0].tracer.create_proxy("call_function", target, args, {})
    impl.__name__ = _dunder(name)
    return impl


def _make_reflected(name: str):
    target = getattr(operator, name)

    def impl(self, rhs):
        _check_caller(self, name)
        return self.tracer.create_proxy("call_function", target, (rhs, self), {})
    impl.__name__ = f"__r{name.rstrip('_')}__"
    return impl


for _name in (*MAGIC_METHODS, "abs"):  # (abs has no operator syntax: the code calls it)
    setattr(Proxy, _dunder(_name), _make_magic(_name))
for _name in REFLECTABLE:
    setattr(Proxy, f"__r{_name.rstrip('_')}__", _make_reflected(_name))

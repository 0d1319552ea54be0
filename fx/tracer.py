"""fx.Tracer: run a module's forward on Proxies and record a Graph (torch.fx.Tracer; TracerBase, which turns
calls on Proxies into nodes, is proxy.py's; symbolic_trace, in _symbolic_trace.py, makes a GraphModule of the graph).

While tracing, `Module.__call__` and `Module.__getattr__` are patched (as torch does): a leaf module (one of
tidal's nn modules, Sequential excepted) becomes a call_module node, a Parameter read a get_attr node. The
functions of torch.nn.functional, those `wrap()` named and the math functions a traced function's globals
hold are wrapped so that a call with a Proxy records a call_function node. A tensor's methods and operators
given a Proxy record a call_method node (`b + x` with b a buffer: `b.add(x)`, as torch records it).
"""
from __future__ import annotations

import inspect
import math
import operator
import types
from typing import Any, Callable

from ..nn import Sequential
from ..nn.module import Module
from ..nn.parameter import Parameter
from ..tensor import Tensor
from .graph import Graph
from .node import map_aggregate
from .proxy import Proxy, TracerBase
from ._patch import Patcher, wrap  # noqa: F401 (wrap: torch.fx.wrap, re-exported)

__all__ = ["TracerBase", "Tracer", "wrap", "PH", "PHBase"]



class PHBase:
    """A placeholder marker for concrete_args: the argument stays an input of the graph."""

    def __repr__(self) -> str:
        return "PH"


PH = PHBase()


def _assert_is_none(value: Any, msg: str) -> None:
    """Check a specialized argument is still None."""
    if value is not None:
        raise AssertionError(msg)


class Tracer(TracerBase):
    """Symbolic tracer: `trace(root)` runs root's forward on Proxies and returns the Graph recorded."""

    def __init__(self, autowrap_modules: tuple = (math,), autowrap_functions: tuple = (),
                 param_shapes_constant: bool = False) -> None:
        super().__init__()
        self._autowrap_function_ids = {id(v) for m in autowrap_modules for k, v in vars(m).items()
                                       if not k.startswith("_") and callable(v)}
        self._autowrap_function_ids.update(id(f) for f in autowrap_functions)
        self._autowrap_modules = list(autowrap_modules)
        self.param_shapes_constant = param_shapes_constant
        self.submodule_paths: dict | None = None
        self.root = None
        self.tensor_attrs: dict = {}

    # -- what becomes a node ---------------------------------------------------------------------
    def is_leaf_module(self, m, module_qualified_name: str) -> bool:
        """torch's rule: modules of torch.nn (tidal.nn here) are leaves, except Sequential."""
        module = type(m).__module__ or ""
        return module.startswith(("tidal.nn", "torch.nn", "torch.ao.nn")) and not isinstance(m, Sequential)

    def path_of_module(self, mod) -> str:
        """The qualified name of submodule `mod` in the root."""
        if self.submodule_paths is not None:
            path = self.submodule_paths.get(id(mod))
            if path is None:
                raise NameError("module is not installed as a submodule")
            return path
        for name, candidate in self.root.named_modules():
            if candidate is mod:
                return name
        raise NameError("module is not installed as a submodule")

    def call_module(self, m, forward: Callable, args: tuple, kwargs: dict) -> Any:
        """A call of submodule `m`: a call_module node for a leaf, else its forward traced through."""
        name = self.path_of_module(m)
        if not self.is_leaf_module(m, name):
            return forward(*args, **kwargs)
        return self.create_proxy("call_module", name, args, kwargs)

    def getattr(self, attr: str, attr_val: Any, parameter_proxy_cache: dict) -> Any:
        """A module attribute read while tracing: a Parameter becomes a get_attr Proxy (one per parameter)."""
        if isinstance(attr_val, Parameter):
            name = self._names("_parameter_names", "named_parameters").get(id(attr_val))
            if name is not None:
                if name not in parameter_proxy_cache:
                    parameter_proxy_cache[name] = self.create_proxy("get_attr", name, (), {})
                return parameter_proxy_cache[name]
        return attr_val

    def _names(self, key: str, method: str) -> dict:
        """id(tensor) -> its qualified name among root's parameters or buffers (built once per trace)."""
        names = self.__dict__.get(key)
        if names is None or names[0] is not self.root:
            table: dict = {}
            for name, t in getattr(self.root, method)():
                table.setdefault(id(t), name)
            names = (self.root, table)
            self.__dict__[key] = names
        return names[1]

    def get_fresh_qualname(self, prefix: str) -> str:
        """`prefix<N>` naming no attribute of the root yet (counting from 0 again while `prefix0` is free)."""
        counters = self.__dict__.setdefault("_qualname_counter", {})
        if not hasattr(self.root, f"{prefix}0"):
            counters[prefix] = 0
            return f"{prefix}0"
        i = counters.get(prefix, 0)
        while hasattr(self.root, f"{prefix}{i}"):
            i += 1
        counters[prefix] = i + 1
        return f"{prefix}{i}"

    def create_arg(self, a: Any) -> Any:
        """As TracerBase, and a tensor of the root (parameter, buffer, attribute) becomes a get_attr node; any
        other tensor is stored on the root as `_tensor_constant<N>`."""
        if isinstance(a, Parameter):
            name = self._names("_parameter_names", "named_parameters").get(id(a))
            if name is None:
                raise NameError("parameter is not a member of this module")
            return self.create_node("get_attr", name, (), {})
        if isinstance(a, Tensor):
            name = self._names("_buffer_names", "named_buffers").get(id(a))
            if name is not None:
                return self.create_node("get_attr", name, (), {})
            qualname = self.tensor_attrs.get(id(a))
            if qualname is None:
                qualname = self.get_fresh_qualname("_tensor_constant")
                setattr(self.root, qualname, a)
                self.tensor_attrs[id(a)] = qualname
            return self.create_node("get_attr", qualname, (), {})
        if isinstance(a, Module):
            raise NotImplementedError(f"argument of type: {type(a)}")
        if type(a) in _PROXYABLE:  # an instance made before the trace: kept on the root, read by get_attr
            qualname = self.get_fresh_qualname(f"_{a.__class__.__name__}_constant_")
            setattr(self.root, qualname, a)
            return self.create_node("get_attr", qualname, (), {})
        return super().create_arg(a)

    # -- tracing ---------------------------------------------------------------------------------
    def create_args_for_root(self, root_fn: Callable, is_module: bool, concrete_args: dict | None = None):
        """root_fn (made to take keyword-only, *args and **kwargs parameters positionally, as torch does) and
        the placeholders (Proxies, or the concrete values given) to call it with."""
        sig = inspect.signature(root_fn)
        params = list(sig.parameters.values())[1 if is_module else 0:]
        concrete_args = dict(concrete_args or {})
        args: list = []
        for kind in (("POSITIONAL_ONLY", "POSITIONAL_OR_KEYWORD"), ("KEYWORD_ONLY",), ("VAR_POSITIONAL",),
                     ("VAR_KEYWORD",)):  # the order of the code's variables
            for p in params:
                if p.kind.name in kind:
                    prefix = {"VAR_POSITIONAL": "*", "VAR_KEYWORD": "**"}.get(p.kind.name, "")
                    args.append(self._placeholder(prefix + p.name, p, concrete_args, root_fn))
        if any(p.kind in (p.KEYWORD_ONLY, p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params):
            root_fn = _positional(root_fn, len(args) + int(is_module))
        return root_fn, args

    def _placeholder(self, name: str, param, concrete_args: dict, root_fn: Callable) -> Any:
        default = () if name.startswith("*") or param.default is inspect.Parameter.empty else (param.default,)
        if name in concrete_args:
            value = concrete_args[name]
            out = self.create_proxy("placeholder", f"{name}_1", default, {})
            if isinstance(value, PHBase):
                return out
            if value is None:
                self.create_proxy("call_function", _assert_is_none,
                                  (out, f"{name} has been specialized to have value None but got another value"), {})
            elif isinstance(value, (bool, int, float, str, complex)):
                eq = self.create_proxy("call_function", operator.eq, (out, value), {})
                from ..compat import _assert  # torch._assert
                self.create_proxy("call_function", _assert,
                                  (eq, f"{name} has been specialized to have value {value} but got another value"),
                                  {}, name="_assert")
            else:
                import warnings
                warnings.warn(f"Was not able to add assertion to guarantee correct input {name} to specialized "
                              "function. It is up to the user to make sure that your inputs match the inputs you "
                              "specialized the function with.")
            return value
        return self.create_proxy("placeholder", name, default, {},
                                 type_expr=getattr(root_fn, "__annotations__", {}).get(name.lstrip("*")))

    def trace(self, root, concrete_args: dict | None = None) -> Graph:
        """Trace `root` (a Module or a function) into a Graph."""
        if isinstance(root, Module):
            self.root = root
            fn = type(root).forward
            is_module = True
        else:
            self.root = Module()
            fn = root
            is_module = False
        self.graph = Graph(tracer_cls=getattr(self, "__class__", None))
        self.submodule_paths = {}
        for name, m in self.root.named_modules():
            self.submodule_paths.setdefault(id(m), name)
        self.__dict__.pop("_parameter_names", None)
        self.__dict__.pop("_buffer_names", None)
        self.tensor_attrs = self._collect_tensor_attrs()
        returns = getattr(fn, "__annotations__", {}).get("return")
        fn, args = self.create_args_for_root(fn, is_module, concrete_args)
        if is_module:
            args = [root, *args]
        cache: dict = {}
        _TRACING.append(self)
        try:
            with Patcher(self, cache, getattr(fn, "__globals__", {})):
                result = fn(*args)
                self.create_node("output", "output", (self.create_arg(result),), {}, type_expr=returns)
        finally:
            _TRACING.pop()
        self.submodule_paths = None
        return self.graph

    def _collect_tensor_attrs(self) -> dict:
        found: dict = {}
        for prefix, mod in self.root.named_modules():
            for name, value in vars(mod).items():
                if isinstance(value, Tensor) and not isinstance(value, Parameter):
                    found.setdefault(id(value), f"{prefix}.{name}" if prefix else name)
        return found


_TRACING: list = []  # the tracers now running trace() (innermost last)
_PROXYABLE: dict = {}  # classes made with ProxyableClassMeta


def is_fx_tracing() -> bool:
    """Whether a symbolic trace is running."""
    return bool(_TRACING)


class ProxyableClassMeta(type):
    """Metaclass whose classes, constructed from traced values during a trace, are recorded as one
    call_function node of the class (their methods then record call_method nodes on it)."""

    def __init__(cls, name: str, bases: tuple, attrs: dict) -> None:
        _PROXYABLE.setdefault(cls)
        super().__init__(name, bases, attrs)

    def __call__(cls, *args, **kwargs):
        instance = cls.__new__(cls)
        if not is_fx_tracing():
            cls.__init__(instance, *args, **kwargs)
            return instance
        found: list = []

        def find(a):
            if isinstance(a, Proxy):
                found.append(a)
            return a
        map_aggregate(args, find)
        map_aggregate(kwargs, find)
        if found:
            return found[0].tracer.create_proxy("call_function", cls, args, kwargs)
        cls.__init__(instance, *args, **kwargs)
        return instance


def _positional(fn: Callable, count: int) -> Callable:
    """`fn` with every parameter (keyword-only, *args, **kwargs too) taken positionally, in code order."""
    code = fn.__code__
    flags = code.co_flags & ~(inspect.CO_VARARGS | inspect.CO_VARKEYWORDS)
    new_code = code.replace(co_flags=flags, co_argcount=count, co_kwonlyargcount=0, co_posonlyargcount=0)
    return types.FunctionType(new_code, fn.__globals__, fn.__name__, None, fn.__closure__)



"""The temporary patches a trace runs under, all undone when it ends (torch's _Patcher).

Module.__call__ and Module.__getattr__ go through the tracer; a Tensor method or operator given a Proxy
records a call_method node on the tensor; functions of torch.nn.functional, of the
autowrap modules (math) and those wrap() named become wrappers that record a call with a Proxy.
"""
from __future__ import annotations

import builtins
import functools
import sys
import types
from typing import Any, Callable

from ..nn import functional as F
from ..nn.module import Module
from ..tensor import Tensor
from ._functional_calls import recorded_call
from .node import map_aggregate
from ._names import torch_table
from .proxy import LibraryUse, Proxy, _from_library

__all__ = ["Patcher", "wrap"]

# tensor operators given a Proxy operand record torch's method name (`b + x` with b a tensor: b.add(x))
_OPERATOR_METHODS = {"__add__": "add", "__sub__": "sub", "__mul__": "mul", "__truediv__": "div",
                     "__div__": "div", "__floordiv__": "floor_divide", "__mod__": "remainder", "__pow__": "pow",
                     "__matmul__": "matmul", "__and__": "__and__", "__or__": "__or__", "__xor__": "__xor__",
                     "__lshift__": "__lshift__", "__rshift__": "__rshift__", "__eq__": "eq", "__ne__": "ne",
                     "__lt__": "lt", "__le__": "le", "__gt__": "gt", "__ge__": "ge", "__getitem__": "__getitem__"}
# torch.nn.functional's own __torch_function__ helpers: they take Proxies as plain arguments
_KEEP = {"has_torch_function", "has_torch_function_unary", "has_torch_function_variadic", "handle_torch_function"}
_MISSING = object()
_ATEN_MODULES = ("tidal.compat._aten_functional", "tidal.compat._aten_native", "tidal.compat._aten_nn")


def _first_proxy(args: tuple, kwargs: dict):
    found: list = []

    def note(a):
        if isinstance(a, Proxy) and not found:
            found.append(a)
        return a
    map_aggregate((args, kwargs), note)  # (through lists, tuples, dicts and slices: t[:n] with n traced)
    return found[0] if found else None


def _tensor_method(orig, method: str):
    """Tensor method `orig`: with a Proxy argument, a call_method node `method` on the tensor (a get_attr)."""
    def wrapper(self, *args, **kwargs):
        proxy = self if isinstance(self, Proxy) else _first_proxy(args, kwargs)  # (Tensor.add(proxy, 1) too)
        if proxy is None:
            return orig(self, *args, **kwargs)
        if _from_library(2):
            raise LibraryUse(f"a traced value ({proxy!r}) reached tidal's library code (Tensor.{method})")
        return proxy.tracer.create_proxy("call_method", method, (self, *args), kwargs)
    return wrapper


_REUSED: dict = {}  # (id of a function, method name) -> (the function, its wrapper): made once, not per trace


def _reused(fn, method: str | None = None):
    """The wrapper of library function `fn` (or of Tensor method `method`), made on first need; wrappers hold
    no trace state (each finds its tracer through the Proxy it is given)."""
    hit = _REUSED.get((id(fn), method))
    if hit is None or hit[0] is not fn:
        wrapper = make_wrapper(fn, mark=False) if method is None else \
            _tensor_method(fn, _OPERATOR_METHODS.get(method, method))
        hit = _REUSED[(id(fn), method)] = (fn, wrapper)
    return hit[1]


class Patcher:
    """Context manager applying the trace's patches and restoring every original on exit."""

    def __init__(self, tracer, parameter_cache: dict, fn_globals: dict) -> None:
        self.tracer = tracer
        self.cache = parameter_cache
        self.fn_globals = fn_globals
        self._undo: list = []

    def _set(self, owner: Any, name: str, value: Any) -> None:
        if isinstance(owner, dict):
            old = owner.get(name, _MISSING)
            owner[name] = value
        else:
            old = owner.__dict__.get(name, _MISSING)
            setattr(owner, name, value)
        self._undo.append((owner, name, old))

    def __enter__(self) -> "Patcher":
        try:
            self._apply()
        except BaseException:
            self.__exit__()  # (a with statement does not undo a failed __enter__)
            raise
        return self

    def _apply(self) -> None:
        torch_table()  # the spellings of torch's functions, read before any is patched
        tracer, cache = self.tracer, self.cache
        orig_call, orig_getattr = Module.__call__, Module.__getattr__

        def module_call(mod, *args, **kwargs):
            return tracer.call_module(mod, lambda *a, **k: orig_call(mod, *a, **k), args, kwargs)

        def module_getattr(mod, attr):
            return tracer.getattr(attr, orig_getattr(mod, attr), cache)
        self._set(Module, "__call__", module_call)
        self._set(Module, "__getattr__", module_getattr)
        for name, value in list(vars(Tensor).items()):
            if isinstance(value, types.FunctionType) and (not name.startswith("_") or name in _OPERATOR_METHODS):
                self._set(Tensor, name, _reused(value, name))
        for name, value in list(vars(F).items()):
            if not name.startswith("_") and name not in _KEEP and isinstance(value, types.FunctionType):
                self._set(F.__dict__, name, _reused(value))
        from .. import compat  # compat sits above: KNOWN_UPWARD in tests/test_layers.py
        for name, value in list(vars(compat).items()):  # torch.dropout, torch.layer_norm... (ATen spellings)
            if isinstance(value, types.FunctionType) and value.__module__.startswith(_ATEN_MODULES):
                self._set(compat.__dict__, name, _reused(value))
        for space in (compat.linalg, compat.fft, compat.special):  # torch.linalg.norm(proxy): one node
            for name, value in list(vars(space).items()):
                if not name.startswith("_") and isinstance(value, types.FunctionType):
                    self._set(space.__dict__, name, _reused(value))
        ids = tracer._autowrap_function_ids
        for space in [self.fn_globals] + [m.__dict__ for m in tracer._autowrap_modules]:
            for name, value in list(space.items()):
                if not name.startswith("_") and callable(value) and id(value) in ids:
                    self._set(space, name, make_wrapper(value))
        for (_, name), space in wrapped_names().items():
            orig = space.get(name, _MISSING)
            if orig is _MISSING:
                orig = getattr(builtins, name, _MISSING)
            if orig is not _MISSING:
                self._set(space, name, make_wrapper(getattr(orig, "__fx_original__", orig)))

    def __exit__(self, *exc) -> None:
        for owner, name, old in reversed(self._undo):
            if isinstance(owner, dict):
                if old is _MISSING:
                    owner.pop(name, None)
                else:
                    owner[name] = old
            elif old is _MISSING:
                delattr(owner, name)
            else:
                setattr(owner, name, old)
        self._undo.clear()


# -- wrap(): global functions a trace records as one call_function node -----------------------------------
_WRAPPED: dict = {}  # (id of a module's globals, name) -> those globals: the functions wrap() named


def wrap(fn_or_name):
    """Called at module level: calls of this global function (or builtin name) from that module become one
    call_function node instead of being traced through."""
    if not callable(fn_or_name) and not isinstance(fn_or_name, str):
        raise AssertionError("Unsupported type for global function! Must be either a callable or string name")
    if callable(fn_or_name):
        if isinstance(fn_or_name, str):
            raise AssertionError("fn_or_name must be a global function or string name")
        name = fn_or_name.__name__
    else:
        name = fn_or_name
    caller = sys._getframe(1)
    if caller.f_code.co_name != "<module>":
        raise NotImplementedError("wrap must be called at the top level of a module")
    _WRAPPED[(id(caller.f_globals), name)] = caller.f_globals
    return fn_or_name


def wrapped_names() -> dict:
    """The (globals id, name) -> globals entries wrap() registered."""
    return _WRAPPED


def make_wrapper(orig_fn: Callable, mark: bool = True) -> Callable:
    """`orig_fn`, recording a call_function node (target orig_fn) when an argument is a Proxy (`mark`: noted
    in the node's meta as wrapped, so the code names it in a wrap() line)."""
    @functools.wraps(orig_fn)
    def wrapped(*args, **kwargs):
        found: list = []

        def find(a):
            if isinstance(a, Proxy) and not found:
                found.append(a)
            return a
        map_aggregate(args, find)
        map_aggregate(kwargs, find)
        if found:
            recorded = None if mark else recorded_call(orig_fn, args, kwargs)  # F.<fn>: torch's argument list
            proxy = found[0].tracer.create_proxy(*recorded[:4]) if recorded is not None else \
                found[0].tracer.create_proxy("call_function", orig_fn, args, kwargs)
            if recorded is not None and recorded[4] is not None:
                proxy.node.meta["torch_spelling"] = recorded[4]
            if mark:
                proxy.node.meta["is_wrapped"] = True
            return proxy
        return orig_fn(*args, **kwargs)
    wrapped.__fx_original__ = orig_fn
    return wrapped

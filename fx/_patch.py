"""The temporary patches a trace runs under, all undone when it ends (torch's _Patcher).

Module.__call__ and Module.__getattr__ go through the tracer; tensor operators return NotImplemented for a
Proxy operand (so the Proxy's reflected operator records the node); functions of torch.nn.functional, of the
autowrap modules (math) and those wrap() named become wrappers that record a call with a Proxy.
"""
from __future__ import annotations

import builtins
import types
from typing import Any

from .proxy import Proxy
from .tracer import make_wrapper, wrapped_names

__all__ = ["Patcher"]

_BINARY = ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or", "xor", "lshift",
           "rshift", "div")
_COMPARE = ("eq", "ne", "lt", "le", "gt", "ge")
# torch.nn.functional's own __torch_function__ helpers: they take Proxies as plain arguments
_KEEP = {"has_torch_function", "has_torch_function_unary", "has_torch_function_variadic", "handle_torch_function"}
_MISSING = object()


def _deferring(orig):
    def op(self, other):
        if isinstance(other, Proxy):
            return NotImplemented
        return orig(self, other)
    return op


def _indexing(orig):
    def getitem(self, index):
        items = index if isinstance(index, tuple) else (index,)
        if any(isinstance(i, Proxy) for i in items):
            proxy = next(i for i in items if isinstance(i, Proxy))
            import operator
            return proxy.tracer.create_proxy("call_function", operator.getitem, (self, index), {})
        return orig(self, index)
    return getitem


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
        from ..nn import functional as F
        from ..nn.module import Module
        from ..tensor import Tensor
        tracer, cache = self.tracer, self.cache
        orig_call, orig_getattr = Module.__call__, Module.__getattr__

        def module_call(mod, *args, **kwargs):
            return tracer.call_module(mod, lambda *a, **k: orig_call(mod, *a, **k), args, kwargs)

        def module_getattr(mod, attr):
            return tracer.getattr(attr, orig_getattr(mod, attr), cache)
        self._set(Module, "__call__", module_call)
        self._set(Module, "__getattr__", module_getattr)
        for base in _BINARY + _COMPARE:
            for name in (f"__{base}__", f"__r{base}__", f"__i{base}__"):
                orig = getattr(Tensor, name, None)
                if orig is not None:
                    self._set(Tensor, name, _deferring(orig))
        self._set(Tensor, "__getitem__", _indexing(Tensor.__getitem__))
        for name, value in list(vars(F).items()):
            if not name.startswith("_") and name not in _KEEP and isinstance(value, types.FunctionType):
                self._set(F.__dict__, name, make_wrapper(value, mark=False))
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
        return self

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

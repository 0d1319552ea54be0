"""torch.jit: scripting and tracing return what they are given (tidal runs Python eagerly)."""
from __future__ import annotations

from typing import Callable, Final  # noqa: F401 - `torch.jit.Final[int]` annotations

from ..nn import Module

__all__ = ["script", "trace", "ignore", "unused", "export", "is_scripting", "is_tracing", "Final", "save", "load",
           "ScriptModule", "RecursiveScriptModule", "ScriptFunction", "script_method", "Attribute", "annotate", "fork",
           "wait", "freeze", "optimize_for_inference", "interface", "trace_module", "TracerWarning", "isinstance",
           "script_if_tracing", "Error", "Future", "enable_onednn_fusion", "onednn_fusion_enabled",
           "set_fusion_strategy", "strict_fusion"]


def script(obj, optimize=None, _frames_up: int = 0, _rcb=None, example_inputs=None):
    """Return `obj` itself; a module gains ScriptModule's `save(path)`."""
    return _with_save(obj)


def trace(func, example_inputs=None, optimize=None, check_trace: bool = True, check_inputs=None,
          check_tolerance: float = 1e-05, strict: bool = True, **kwargs):
    """Return `func` itself (nothing is traced); a module gains ScriptModule's `save(path)`."""
    return _with_save(func)


_TWINS: dict = {}  # a module class -> its subclass that is also a ScriptModule


def _with_save(obj):
    """A scripted or traced nn.Module is a ScriptModule (`isinstance` checks, `m.save(path)` as the deployment
    tutorials do): its class becomes a subclass of it and ScriptModule, of the same name, pickled as the original."""
    if not _builtin_isinstance(obj, Module) or _builtin_isinstance(obj, ScriptModule):
        return obj
    base = type(obj)
    twin = _TWINS.get(base)
    if twin is None:
        twin = _TWINS[base] = type(base.__name__, (base, RecursiveScriptModule), {
            "__reduce_ex__": _reduce_as_base, "__module__": base.__module__, "__qualname__": base.__qualname__,
            "__doc__": base.__doc__})
    obj.__class__ = twin
    return obj


def _reduce_as_base(self, protocol):
    """Pickle a scripted module as an instance of its own class (the twin class is not importable)."""
    return _rebuild, (type(self).__mro__[1], self.__getstate__())


def _rebuild(base: type, state):
    obj = base.__new__(base)
    if hasattr(obj, "__setstate__"):
        obj.__setstate__(state)
    else:
        obj.__dict__.update(state)
    return obj


def ignore(drop=False, **kwargs) -> Callable:
    """Decorator (with or without arguments) that leaves the function as it is."""
    return drop if callable(drop) else (lambda fn: fn)


def unused(fn: Callable) -> Callable:
    """Decorator that leaves the function as it is."""
    return fn


def export(fn: Callable) -> Callable:
    """Decorator that leaves the method as it is."""
    return fn


def is_scripting() -> bool:
    """False: code never runs under TorchScript."""
    return False


def is_tracing() -> bool:
    """False: code never runs under the tracer."""
    return False


def load(f, map_location=None, _extra_files=None):
    """Load what jit.save wrote: the module, ready to call."""
    from ..serialization import load as _load  # serialization loads on first use (keeps import light)
    return _with_save(_load(f, map_location=map_location, weights_only=False))


_builtin_isinstance = isinstance
from .jit_api import (Attribute, Error, Future, RecursiveScriptModule, ScriptFunction, ScriptModule,  # noqa: E402
                      TracerWarning, annotate, enable_onednn_fusion, fork, freeze, interface, isinstance,
                      onednn_fusion_enabled, optimize_for_inference, save, script_if_tracing, script_method,
                      set_fusion_strategy, strict_fusion, wait)


def trace_module(mod, inputs, optimize=None, check_trace: bool = True, check_inputs=None,
                 check_tolerance: float = 1e-05, strict: bool = True, **kwargs):
    """The module itself, as a ScriptModule (nothing is traced)."""
    return _with_save(mod)

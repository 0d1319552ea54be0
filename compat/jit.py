"""torch.jit: scripting and tracing return what they are given (tidal runs Python eagerly)."""
from __future__ import annotations

from typing import Callable, Final  # noqa: F401 - `torch.jit.Final[int]` annotations

__all__ = ["script", "trace", "ignore", "unused", "export", "is_scripting", "is_tracing", "Final", "save", "load"]


def script(obj, optimize=None, _frames_up: int = 0, _rcb=None, example_inputs=None):
    """Return `obj` itself; a module gains ScriptModule's `save(path)`."""
    return _with_save(obj)


def trace(func, example_inputs=None, optimize=None, check_trace: bool = True, check_inputs=None,
          check_tolerance: float = 1e-05, strict: bool = True, **kwargs):
    """Return `func` itself (nothing is traced); a module gains ScriptModule's `save(path)`."""
    return _with_save(func)


_TWINS: dict = {}  # a module class -> its subclass with ScriptModule's save()


def _with_save(obj):
    """A scripted or traced nn.Module is saved with `m.save(path)` (the deployment tutorials do): its class becomes
    a subclass (same name) adding `save`; it pickles as the original class."""
    from ..nn import Module
    if not isinstance(obj, Module) or "_jit_twin" in type(obj).__dict__:
        return obj
    base = type(obj)
    twin = _TWINS.get(base)
    if twin is None:
        twin = _TWINS[base] = type(base.__name__, (base,), {
            "save": _save_method, "__reduce_ex__": _reduce_as_base, "_jit_twin": True,
            "__module__": base.__module__, "__qualname__": base.__qualname__, "__doc__": base.__doc__})
    obj.__class__ = twin
    return obj


def _save_method(self, f, _extra_files=None) -> None:
    """ScriptModule.save: what torch.jit.save(self, f) writes."""
    save(self, f, _extra_files)


def _reduce_as_base(self, protocol):
    """Pickle a module given save() as an instance of its own class (the twin class is not importable)."""
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


def save(m, f, _extra_files=None) -> None:
    """Save a scripted/traced module (here: the module itself, pickled whole as torch.save does); only
    tidal's jit.load reads the file back (it is not a TorchScript archive)."""
    from ..serialization import save as _save
    _save(m, f)


def load(f, map_location=None, _extra_files=None):
    """Load what jit.save wrote: the module, ready to call."""
    from ..serialization import load as _load
    return _with_save(_load(f, map_location=map_location, weights_only=False))

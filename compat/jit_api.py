"""The rest of torch.jit's surface for eager code: ScriptModule (what scripted and traced modules are instances of,
and the legacy base class with @script_method), Attribute/annotate, fork/wait, freeze and
optimize_for_inference (torch's checks; the module comes back as it is), isinstance with typing containers,
TracerWarning and the fusion switches (recorded, nothing is fused by them)."""
from __future__ import annotations

import builtins
import collections
import contextlib
import typing
from typing import Any, Callable

from ..nn import Module
from ..utils.futures import Future

__all__ = ["ScriptModule", "RecursiveScriptModule", "ScriptFunction", "script_method", "Attribute", "annotate",
           "fork", "wait", "freeze", "optimize_for_inference", "interface", "TracerWarning", "isinstance",
           "script_if_tracing", "Error", "Future", "enable_onednn_fusion", "onednn_fusion_enabled",
           "set_fusion_strategy", "strict_fusion"]

def save(m, f, _extra_files=None) -> None:
    """Save a scripted/traced module (here: the module itself, pickled whole as torch.save does); only
    tidal's jit.load reads the file back (it is not a TorchScript archive)."""
    from ..serialization import save as _save  # serialization loads on first use (keeps import light)
    _save(m, f)


Attribute = collections.namedtuple("Attribute", ["value", "type"])
Attribute.__doc__ = "A typed module attribute (`self.x = torch.jit.Attribute(0, int)` in a ScriptModule)."


class ScriptModule(Module):
    """A scripted module: runs its Python forward eagerly; `save(path)` writes what torch.jit.save writes."""

    def __setattr__(self, name: str, value) -> None:
        if builtins.isinstance(value, Attribute):  # a typed attribute holds its value
            value = value.value
        super().__setattr__(name, value)

    def save(self, f, _extra_files=None) -> None:
        """Save the module (torch.jit.save)."""
        save(self, f, _extra_files)

    @property
    def original_name(self) -> str:
        """The name of the scripted module's class."""
        return type(self).__name__


class RecursiveScriptModule(ScriptModule):
    """The type of what torch.jit.script / trace return for a module."""


class ScriptFunction:
    """The type torch gives scripted functions (tidal returns the function itself: nothing is an instance)."""


class TracerWarning(Warning):
    """The warnings the tracer gives (filtered by scripts: warnings.filterwarnings('ignore', category=...))."""

    @staticmethod
    def ignore_lib_warnings() -> None:
        """Hide tracer warnings raised inside torch."""


class Error(Exception):
    """Errors raised by TorchScript code."""


def script_method(fn: Callable) -> Callable:
    """The legacy `@torch.jit.script_method` decorator: the method as it is."""
    return fn


def script_if_tracing(fn: Callable) -> Callable:
    """The function as it is (nothing is traced)."""
    return fn


def interface(obj):
    """A TorchScript interface declaration: the class as it is."""
    return obj


def annotate(the_type, the_value):
    """`the_value` (the type is a hint for the TorchScript compiler)."""
    return the_value


def fork(func: Callable, *args, **kwargs) -> Future:
    """Run `func(*args, **kwargs)` now and hold its result (or error) in a Future."""
    fut = Future()
    try:
        fut.set_result(func(*args, **kwargs))
    except Exception as err:  # noqa: BLE001 - the error belongs to whoever waits
        fut.set_exception(err)
    return fut


def wait(future: Future):
    """The result of a forked call."""
    return future.wait()


def freeze(mod, preserved_attrs=None, optimize_numerics: bool = True):
    """torch's checks (a scripted module in eval mode); the module comes back as it is."""
    if not builtins.isinstance(mod, ScriptModule):
        raise RuntimeError("Freezing expects a ScriptModule as input. Please use torch.jit.script or torch.jit.trace "
                           "to script your 'nn.Module'.")
    if mod.training:
        raise RuntimeError("Freezing is currently only implemented for modules in eval mode. Please call .eval() on "
                           "your module before freezing.")
    return mod


def optimize_for_inference(mod, other_methods=None):
    """Freeze (torch's checks) a scripted module; it comes back as it is."""
    if not builtins.isinstance(mod, ScriptModule):
        raise RuntimeError("optimize_for_inference expects a ScriptModule as input. Please use torch.jit.script or "
                           "torch.jit.trace to script your 'nn.Module'.")
    return freeze(mod.eval()) if mod.training else mod


def isinstance(obj, target_type) -> bool:
    """Python's isinstance, also for typing containers (List[int], Dict[str, Tensor], Tuple[...], Optional[...])."""
    origin = typing.get_origin(target_type)
    if origin is None:
        if target_type in (list, dict, tuple):
            raise RuntimeError(f"Attempted to use {target_type.__name__} without a contained type. Please add a "
                               f"contained type, e.g. {target_type.__name__}[int]")
        return target_type is Any or builtins.isinstance(obj, target_type)
    args = typing.get_args(target_type)
    if origin is typing.Union:
        return builtins.any(isinstance(obj, a) if a is not type(None) else obj is None for a in args)
    if not builtins.isinstance(obj, origin):
        return False
    if origin is list:
        return builtins.all(isinstance(v, args[0]) for v in obj)
    if origin is dict:
        return builtins.all(isinstance(k, args[0]) and isinstance(v, args[1]) for k, v in obj.items())
    if origin is tuple:
        return len(obj) == len(args) and builtins.all(isinstance(v, a) for v, a in zip(obj, args))
    return True


_FUSION = {"onednn": False, "strategy": [("STATIC", 2), ("DYNAMIC", 10)]}


def enable_onednn_fusion(enabled: bool) -> None:
    """Record the oneDNN fusion switch (tidal's VM fuses on its own)."""
    _FUSION["onednn"] = builtins.bool(enabled)


def onednn_fusion_enabled() -> bool:
    """The recorded oneDNN fusion switch."""
    return _FUSION["onednn"]


def set_fusion_strategy(strategy: list) -> list:
    """Record the fusion strategy; the previous one is returned."""
    previous, _FUSION["strategy"] = _FUSION["strategy"], list(strategy)
    return previous


class strict_fusion(contextlib.ContextDecorator):
    """A block TorchScript must fuse whole; eager code runs it as it is."""

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> bool:
        return False

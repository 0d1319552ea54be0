"""torch.jit: scripting and tracing return what they are given (tidal runs Python eagerly)."""
from __future__ import annotations

from typing import Callable, Final  # noqa: F401 - `torch.jit.Final[int]` annotations

__all__ = ["script", "trace", "ignore", "unused", "export", "is_scripting", "is_tracing", "Final", "save", "load"]


def script(obj, optimize=None, _frames_up: int = 0, _rcb=None, example_inputs=None):
    """Return `obj` unchanged."""
    return obj


def trace(func, example_inputs=None, optimize=None, check_trace: bool = True, check_inputs=None,
          check_tolerance: float = 1e-05, strict: bool = True, **kwargs):
    """Return `func` unchanged (nothing is traced)."""
    return func


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
    return _load(f, map_location=map_location, weights_only=False)

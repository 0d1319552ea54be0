"""torch.compiler: the public face of torch.compile's machinery, for eager tidal (see compat/_dynamo.py)."""
from __future__ import annotations

from typing import Callable

from . import _dynamo
from ._dynamo import allow_in_graph, assume_constant_result, disable, is_compiling, list_backends, reset
from ._runtime import compile as _compile

__all__ = ["compile", "reset", "allow_in_graph", "assume_constant_result", "list_backends", "disable",
           "is_compiling", "is_dynamo_compiling", "is_exporting", "set_stance", "cudagraph_mark_step_begin"]


def compile(*args, **kwargs) -> Callable:
    """torch.compiler.compile: torch.compile under its other name."""
    return _compile(*args, **kwargs)


def is_dynamo_compiling() -> bool:
    """False: nothing is traced."""
    return False


def is_exporting() -> bool:
    """False: nothing is exported."""
    return False


class set_stance:
    """`torch.compiler.set_stance(...)` as a call, context manager or decorator: eager code has one stance."""

    def __init__(self, stance: str = "default", *, skip_guard_eval_unsafe: bool = False, force_backend=None):
        self.stance = stance

    def __enter__(self) -> "set_stance":
        return self

    def __exit__(self, *exc) -> bool:
        return False

    def __call__(self, fn: Callable) -> Callable:
        return fn


def cudagraph_mark_step_begin() -> None:
    """Marks a new iteration for CUDA graphs: tidal records none."""


del _dynamo

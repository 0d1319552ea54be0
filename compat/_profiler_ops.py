"""`torch.ops.profiler`: the record_function ops (_record_function_enter / _enter_new / _exit) that code calls to
open and close a profiler range without a `with` block (torch.fx graphs do, as pytorch/examples'
fx/profiling_tracer.py emits them); each range is a compat.profiler.record_function."""
from __future__ import annotations

from typing import Any

from .profiler import record_function

__all__ = ["RecordFunctionHandle", "namespace"]


class RecordFunctionHandle:
    """An open profiler range (torch's profiler._RecordFunction object): _record_function_exit closes it."""

    def __init__(self, name: str, args: str | None) -> None:
        self._range = record_function(name, args)
        self._range.__enter__()
        self._open = True

    def record(self) -> None:
        """Close the range (once)."""
        if self._open:
            self._open = False
            self._range.__exit__(None, None, None)


def _check_name(op: str, name: Any) -> None:
    if not isinstance(name, str):
        raise RuntimeError(f"profiler::{op}() Expected a value of type 'str' for argument 'name' but instead found "
                           f"type '{type(name).__name__}'.")


def _record_function_enter(name: str, args: str | None = None) -> RecordFunctionHandle:
    """Open a profiler range named `name`; returns its handle for _record_function_exit."""
    traced = _traced(_record_function_enter, (name, args))
    if traced is not None:
        return traced
    _check_name("_record_function_enter", name)
    return RecordFunctionHandle(name, args)


def _record_function_enter_new(name: str, args: str | None = None) -> RecordFunctionHandle:
    """Open a profiler range named `name` (torch's newer spelling); returns its handle."""
    traced = _traced(_record_function_enter_new, (name, args))
    if traced is not None:
        return traced
    _check_name("_record_function_enter_new", name)
    return RecordFunctionHandle(name, args)


def _traced(fn, args: tuple):
    """A graph node calling `fn` when an argument is a torch.fx Proxy (as torch's ops record themselves), else
    None."""
    from ..fx.proxy import Proxy  # fx loads on first use (keeps import light)
    proxy = next((a for a in args if isinstance(a, Proxy)), None)
    return None if proxy is None else proxy.tracer.create_proxy("call_function", fn, args, {})


def _record_function_exit(handle: RecordFunctionHandle):
    """Close the profiler range `handle` opened."""
    traced = _traced(_record_function_exit, (handle,))
    if traced is not None:
        return traced
    if not isinstance(handle, RecordFunctionHandle):
        raise RuntimeError("Overloaded torch operator invoked from Python failed to match any schema:\n"
                           "profiler::_record_function_exit() Expected a value of type 'Tensor' for argument 'handle' "
                           f"but instead found type '{type(handle).__name__}'.")
    handle.record()


class _ProfilerOps:
    """The `torch.ops.profiler` namespace."""

    name = "profiler"
    _record_function_enter = staticmethod(_record_function_enter)
    _record_function_enter_new = staticmethod(_record_function_enter_new)
    _record_function_exit = staticmethod(_record_function_exit)

    def __getattr__(self, op_name: str):
        raise AttributeError(f"'_OpNamespace' 'profiler' object has no attribute '{op_name}'")

    def __iter__(self):
        return iter(["_record_function_enter", "_record_function_enter_new", "_record_function_exit"])


namespace = _ProfilerOps()

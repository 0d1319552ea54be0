"""Deferred kernel failures: where the failing instruction was issued, and the error a sync point raises.

A kernel that checks its data (an index op whose indices were computed on the VM) fails after the call
returned. Its instruction carries the issuing site, captured at the call (only for such instructions:
walking the stack costs a few microseconds); the failure is re-raised at a sync point as a fresh
exception of the kernel's type, naming the op and the user's line, with a traceback that starts at the
sync point instead of a chain through the worker thread.
"""
from __future__ import annotations

import linecache
import sys
import threading

_getframe = sys._getframe
_get_ident = threading.get_ident
_PACKAGE = __name__.split(".")[0]
_PREFIX = _PACKAGE + "."


def issuing_site() -> tuple:
    """(code, instruction offset, thread id) of the innermost caller outside this package's own modules.
    The line number is worked out only if the op fails (`site`): `f_lineno` scans the line table."""
    f = _getframe(1)
    last = f
    while f is not None:
        name = f.f_globals.get("__name__")
        if name.__class__ is not str or not (name.startswith(_PREFIX) or name == _PACKAGE):
            return f.f_code, f.f_lasti, _get_ident()
        last = f
        f = f.f_back
    return last.f_code, last.f_lasti, _get_ident()  # the package's own thread: no user frame


def site(origin: tuple) -> tuple:
    """(filename, line, function) of an `issuing_site()` result."""
    code, lasti, _ = origin
    line = code.co_firstlineno
    for start, end, number in code.co_lines():
        if start <= lasti < end:
            if number is not None:
                line = number
            break
    return code.co_filename, line, code.co_name


class Failure:
    """A failed instruction: its op name, the kernel's exception, and where it was issued (or None)."""

    __slots__ = ("op", "exc", "origin")

    def __init__(self, op: str, exc: BaseException, origin: tuple | None):
        self.op = op
        self.exc = exc
        self.origin = origin

    def visible_to(self, ident: int) -> bool:
        """Whether a sync point on thread `ident` reports it: its own failures, those of threads that can
        no longer sync (they ended), and those whose issuer is unknown."""
        if self.origin is None or self.origin[2] == ident:
            return True
        return all(t.ident != self.origin[2] for t in threading.enumerate())

    def message(self) -> str:
        """The kernel's message, prefixed with the op's name, and the user's line that issued it."""
        name, text = self.op, str(self.exc)
        named = text.startswith(name) and text[len(name):len(name) + 2].lstrip("_")[:1] in (":", "(")
        msg = text if named else f"{name}: {text}"  # name the op unless the message already does
        if self.origin is not None:
            filename, line, function = site(self.origin)
            msg += f" (issued at {filename}:{line}, in {function})"
        return msg

    def exception(self) -> BaseException:
        """A fresh exception of the kernel's type to raise at a sync point (raising the kernel's own object
        again would grow its traceback at every sync). The kernel's traceback is kept as the cause only
        when the issuing site is unknown: then it is the one clue where the failure came from."""
        exc = self.exc
        msg = self.message()
        try:
            new = type(exc)(msg)
        except Exception:  # noqa: BLE001 - an exception type with an unusual constructor
            new = RuntimeError(msg)
        if self.origin is None:
            new.__cause__ = exc
        else:
            new.__suppress_context__ = True
            filename, line, function = site(self.origin)
            source = linecache.getline(filename, line).strip()
            if source and hasattr(new, "add_note"):  # printed under the message, as a traceback line is
                new.add_note(f'  File "{filename}", line {line}, in {function} (where {self.op} was issued)\n'
                             f"    {source}")
        return new

"""torch.futures: Future (a value that arrives later, with callbacks), collect_all and wait_all."""
from __future__ import annotations

import logging
import threading
import traceback
from typing import Callable, Generic, TypeVar

__all__ = ["Future", "collect_all", "wait_all"]

T = TypeVar("T")
S = TypeVar("S")
_logger = logging.getLogger(__name__)
_PENDING = object()


class Future(Generic[T]):
    """A result (or an error) set once, by any thread; callbacks run when it is set."""

    def __init__(self, *, devices: list | None = None) -> None:
        self._lock = threading.Condition()
        self._value = _PENDING
        self._error: BaseException | None = None
        self._callbacks: list = []

    def done(self) -> bool:
        """Whether a result or an error has been set."""
        return self._value is not _PENDING or self._error is not None

    def wait(self) -> T:
        """Block until the future is done; its value, or its error raised."""
        with self._lock:
            self._lock.wait_for(self.done)
        return self.value()

    def value(self) -> T:
        """The value of a done future (its error raised); refused before it is done."""
        if not self.done():
            raise RuntimeError("completed() INTERNAL ASSERT FAILED: value() of a Future that is not completed yet")
        if self._error is not None:
            raise self._error
        return self._value

    def _complete(self, value, error) -> None:
        with self._lock:
            if self.done():
                raise RuntimeError("Attempting to mark a completed Future as complete again. Note that a Future can "
                                   "only be marked completed once.")
            self._value, self._error = value, error
            callbacks, self._callbacks = self._callbacks, []
            self._lock.notify_all()
        for callback in callbacks:
            self._run(callback)

    def _run(self, callback: Callable) -> None:
        try:
            callback(self)
        except Exception as e:  # noqa: BLE001 - torch logs a callback's error and goes on
            _logger.error("Got the following error when running the callback: %s: %s", type(e).__name__, e)

    def set_result(self, result: T) -> None:
        """Complete the future with `result` and run its callbacks."""
        self._complete(result, None)

    def set_exception(self, result: BaseException) -> None:
        """Complete the future with an error, raised by wait() and value()."""
        if not isinstance(result, BaseException):
            raise AssertionError(f"{result} is of type {type(result)}, not an Exception.")
        self._complete(_PENDING, result)

    def add_done_callback(self, callback: Callable) -> None:
        """Run `callback(self)` once the future is done (at once if it is)."""
        with self._lock:
            if not self.done():
                self._callbacks.append(callback)
                return
        self._run(callback)

    def then(self, callback: Callable) -> "Future":
        """A new future completed with `callback(self)` once this one is done (or with its error)."""
        follow = Future()

        def chain(fut: Future) -> None:
            try:
                follow.set_result(callback(fut))
            except Exception as e:  # noqa: BLE001 - the error travels in the new future, as in torch
                text = "".join(traceback.format_exception_only(type(e), e)).strip()
                follow.set_exception(RuntimeError(f"Got the following error when running the callback: {text}"))
        self.add_done_callback(chain)
        return follow


def collect_all(futures: list) -> Future:
    """A future completed with the list of `futures` once all are done (with the first error, if any)."""
    futures = list(futures)
    result: Future = Future()
    remaining = [len(futures)]
    lock = threading.Lock()

    def one_done(_fut: Future) -> None:
        with lock:
            remaining[0] -= 1
            last = remaining[0] == 0
        if last:
            error = next((f._error for f in futures if f._error is not None), None)
            if error is not None:
                result.set_exception(error)
            else:
                result.set_result(futures)
    if not futures:
        result.set_result([])
    for fut in futures:
        fut.add_done_callback(one_done)
    return result


def wait_all(futures: list) -> list:
    """Wait for every future; their values (the first error raised)."""
    return [fut.wait() for fut in collect_all(futures).wait()]

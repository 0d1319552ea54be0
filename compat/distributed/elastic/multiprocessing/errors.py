"""`@record` and the ErrorHandler behind it (torch.distributed.elastic.multiprocessing.errors): an entry point's
uncaught exception is written as JSON to $TORCHELASTIC_ERROR_FILE (when set) and raised on; SystemExit(0) is a
normal return."""
from __future__ import annotations

import faulthandler
import functools
import json
import os
import time
import traceback
import warnings
from typing import Any, Callable

__all__ = ["ProcessFailure", "ChildFailedError", "record", "ErrorHandler", "get_error_handler"]


class ErrorHandler:
    """Records an entry point's exception for the launcher (override to report elsewhere)."""

    def _get_error_file_path(self) -> str | None:
        return os.environ.get("TORCHELASTIC_ERROR_FILE", None)

    def initialize(self) -> None:
        """Before the entry point runs: dump tracebacks of all threads on a fatal signal."""
        try:
            faulthandler.enable(all_threads=True)
        except Exception as e:  # noqa: BLE001 - torch warns and goes on
            warnings.warn(f"Unable to enable fault handler. {type(e).__name__}: {e}", stacklevel=2)

    def record_exception(self, e: BaseException) -> None:
        """Write the exception (message, traceback, time) as JSON to the error file, when one is set."""
        file = self._get_error_file_path()
        if file:
            data = {"message": {"message": f"{type(e).__name__}: {e}",
                                "extraInfo": {"py_callstack": traceback.format_exc(),
                                              "timestamp": str(int(time.time()))}}}
            with open(file, "w") as fp:
                json.dump(data, fp)


def get_error_handler() -> ErrorHandler:
    """The default ErrorHandler."""
    return ErrorHandler()


class ProcessFailure:
    """A failed child process: its local rank, pid, exit code and error file."""

    def __init__(self, local_rank: int, pid: int, exitcode: int, error_file: str) -> None:
        self.local_rank, self.pid, self.exitcode, self.error_file = local_rank, pid, exitcode, error_file
        self.message = f"Process failed with exitcode {exitcode}"
        self.timestamp = int(time.time())


class ChildFailedError(Exception):
    """Some child processes failed (`failures`: global rank -> ProcessFailure)."""

    def __init__(self, name: str, failures: dict) -> None:
        self.name, self.failures = name, failures
        super().__init__(f"{name} FAILED: " + ", ".join(f"rank {r}: {f.message}" for r, f in failures.items()))


def record(fn: Callable, error_handler: ErrorHandler | None = None) -> Callable:
    """Wrap an entry point so that its uncaught exception is recorded (see ErrorHandler) and raised again."""
    handler = error_handler or get_error_handler()

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        handler.initialize()
        try:
            return fn(*args, **kwargs)
        except SystemExit as se:
            if se.code == 0:
                return None
            raise
        except Exception as e:
            handler.record_exception(e)
            raise
    return wrapper

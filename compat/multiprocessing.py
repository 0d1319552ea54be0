"""torch.multiprocessing: Python's multiprocessing plus torch's `spawn` / `start_processes`.

Tensors sent between processes are pickled (copied), except those moved into shared memory by
share_memory_() (ops/factories/shared_memory.py), which go by name; the sharing-strategy knobs are recorded only.
"""
from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import os
import secrets
import signal
import sys
import time
import traceback
from multiprocessing import *  # noqa: F401,F403 - torch.multiprocessing re-exports the standard module
from typing import Callable

__all__ = list(multiprocessing.__all__) + [
    "spawn", "start_processes", "ProcessContext", "ProcessRaisedException", "ProcessExitedException",
    "ProcessException", "set_sharing_strategy", "get_sharing_strategy", "get_all_sharing_strategies"]

_sharing = {"strategy": "file_system" if sys.platform == "darwin" else "file_descriptor"}


def get_all_sharing_strategies() -> set:
    """The sharing strategies torch knows on this platform."""
    return {"file_system"} if sys.platform == "darwin" else {"file_descriptor", "file_system"}


def set_sharing_strategy(new_strategy: str) -> None:
    """Record the strategy (tidal pickles tensors between processes whatever it is)."""
    if new_strategy not in get_all_sharing_strategies():
        raise AssertionError(f"unknown sharing strategy {new_strategy!r}")
    _sharing["strategy"] = new_strategy


def get_sharing_strategy() -> str:
    """The strategy last set."""
    return _sharing["strategy"]


class ProcessException(Exception):
    """A process started by spawn failed."""

    def __init__(self, msg: str, error_index: int, pid: int) -> None:
        super().__init__(msg)
        self.msg, self.error_index, self.pid = msg, error_index, pid

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.pid)


class ProcessRaisedException(ProcessException):
    """A process raised: the message carries its traceback."""


class ProcessExitedException(ProcessException):
    """A process exited with a non-zero code or was killed by a signal."""

    def __init__(self, msg: str, error_index: int, error_pid: int, exit_code: int, signal_name: str | None = None):
        super().__init__(msg, error_index, error_pid)
        self.exit_code, self.signal_name = exit_code, signal_name

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.pid, self.exit_code, self.signal_name)


def _wrap(fn: Callable, i: int, args: tuple, error_queue) -> None:
    """Run fn(i, *args) in a child; report an exception's traceback to the parent and exit 1."""
    try:
        fn(i, *args)
    except KeyboardInterrupt:
        pass
    except Exception:  # noqa: BLE001 - every failure goes back to the parent, which raises it
        error_queue.put(traceback.format_exc())
        sys.exit(1)


class ProcessContext:
    """The processes started by start_processes; join() waits and re-raises the first failure."""

    def __init__(self, processes: list, error_queues: list) -> None:
        self.processes, self.error_queues = processes, error_queues
        self.sentinels = {p.sentinel: i for i, p in enumerate(processes)}

    def pids(self) -> list:
        """The process ids."""
        return [p.pid for p in self.processes]

    def join(self, timeout: float | None = None, grace_period: float | None = None) -> bool:
        """Wait up to `timeout`; True once all exited cleanly; raise if one failed (stopping the rest)."""
        if not self.sentinels:
            return True
        ready = multiprocessing.connection.wait(list(self.sentinels), timeout=timeout)
        failed = None
        for sentinel in ready:
            index = self.sentinels.pop(sentinel)
            process = self.processes[index]
            process.join()
            if process.exitcode != 0 and failed is None:
                failed = index
        if failed is None:
            return not self.sentinels
        for process in self.processes:
            if process.is_alive():
                process.terminate()
        deadline = time.monotonic() + (grace_period or 10)
        for process in self.processes:
            process.join(max(deadline - time.monotonic(), 0))
            if process.is_alive():
                process.kill()
                process.join()
        process = self.processes[failed]
        if self.error_queues[failed].empty():
            code = process.exitcode
            if code < 0:
                name = signal.Signals(-code).name
                raise ProcessExitedException(f"process {failed} terminated with signal {name}", failed, process.pid,
                                             code, name)
            raise ProcessExitedException(f"process {failed} terminated with exit code {code}", failed, process.pid,
                                         code)
        original = self.error_queues[failed].get()
        msg = f"\n\n-- Process {failed} terminated with the following error:\n{original}"
        raise ProcessRaisedException(msg, failed, process.pid)


def start_processes(fn: Callable, args: tuple = (), nprocs: int = 1, join: bool = True, daemon: bool = False,
                    start_method: str = "spawn") -> ProcessContext | None:
    """Start `nprocs` processes running fn(i, *args) with `start_method`; join them unless join=False."""
    ctx = multiprocessing.get_context(start_method)
    if "TIDAL_JOB_SECRET" not in os.environ:  # the ranks it starts share one, as the launcher gives them
        os.environ["TIDAL_JOB_SECRET"] = secrets.token_hex(16)
    queues, processes = [], []
    for i in range(nprocs):
        queue = ctx.SimpleQueue()
        process = ctx.Process(target=_wrap, args=(fn, i, args, queue), daemon=daemon)
        process.start()
        queues.append(queue)
        processes.append(process)
    context = ProcessContext(processes, queues)
    if not join:
        return context
    while not context.join():
        pass
    return None


def spawn(fn: Callable, args: tuple = (), nprocs: int = 1, join: bool = True, daemon: bool = False,
          start_method: str = "spawn") -> ProcessContext | None:
    """Start `nprocs` processes running fn(i, *args) (torch.multiprocessing.spawn)."""
    if start_method != "spawn":
        import warnings
        warnings.warn(f"This method only supports start_method=spawn (got: {start_method}).\nTo use a different "
                      "start_method use:\n\t\t torch.multiprocessing.start_processes(...)", FutureWarning, stacklevel=2)
    return start_processes(fn, args, nprocs, join, daemon, start_method)

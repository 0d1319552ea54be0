"""Timer: torch.utils.benchmark.Timer for tidal.

Each timed block runs the statement `number` times, then waits for the VMs (tidal.sync()), so the
wall time covers the work and not only its enqueueing, as torch's Timer synchronizes CUDA. The
time until the last call returned is the host (enqueue) time; the kernel durations the VMs
report while the block runs are the device time. Both are kept beside the wall times.
"""
from __future__ import annotations

import enum
import threading
import time
import timeit
from typing import Any, Callable

import numpy as np

from ... import vm as _vm
from .measurement import Measurement, TaskSpec

__all__ = ["Timer", "Language", "timer"]

timer = time.perf_counter


class Language(enum.Enum):
    """The language of the statement: only Python can run here."""

    PYTHON = 0
    CPP = 1


class _KernelClock:
    """Stands in as every VM's profiler while a block runs, summing kernel durations (and passing
    each kernel on to a profiler that was already active)."""

    def __init__(self) -> None:
        self.ns = 0
        self.start_ns = 0  # kernels count from here: the block's first clock reading (after the setup ran)
        self._lock = threading.Lock()
        self._saved: list = []
        self._default = None

    def record_kernel(self, ins, t0: int, t1: int) -> None:
        with self._lock:
            self.ns += max(t1 - max(t0, self.start_ns), 0)
        if self._default is not None:  # a tidal.profiler.profile was running: it still sees every kernel
            self._default.record_kernel(ins, t0, t1)

    def __enter__(self) -> "_KernelClock":
        self._saved = [(m, m.profiler) for m in _vm.all_vms()]
        for machine, _ in self._saved:
            machine.profiler = self
        self._default = _vm.machine._profiler_default
        _vm.machine._profiler_default = self
        return self

    def __exit__(self, *exc) -> bool:
        for machine, previous in self._saved:
            machine.profiler = previous
        _vm.machine._profiler_default = self._default
        return False


class _SyncedClock:
    """The clock timeit reads: it first waits for the VMs, noting when the statement's last call returned."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self.clock = clock
        self.before_sync = self.last = 0.0
        self.kernels: _KernelClock | None = None  # the block's kernel clock, started at the first reading

    def __call__(self) -> float:
        self.before_sync = self.clock()
        _vm.sync()
        if self.kernels is not None:  # timeit's first reading: the setup's kernels (just synced) are not timed
            with self.kernels._lock:
                self.kernels.ns, self.kernels.start_ns = 0, time.perf_counter_ns()
            self.kernels = None
        self.last = self.clock()
        return self.last


class Timer:
    """Time a Python statement on tidal, as torch.utils.benchmark.Timer."""

    _timer_cls = timeit.Timer

    def __init__(self, stmt: str = "pass", setup: str = "pass", global_setup: str = "", timer: Callable = timer,
                 globals: dict | None = None, label: str | None = None, sub_label: str | None = None,
                 description: str | None = None, env: str | None = None, num_threads: int = 1,
                 language: Language | str = Language.PYTHON) -> None:
        if not isinstance(stmt, str):
            raise ValueError("Currently only a `str` stmt is supported.")
        if language not in (Language.PYTHON, "py", "python"):
            raise NotImplementedError("tidal's Timer runs Python statements only: timing C++ (language='c++') "
                                      "needs torch's C++ toolchain, which tidal does not have")
        if global_setup:
            raise ValueError("global_setup is C++ only.")
        self._globals = dict(globals or {})
        self._clock = _SyncedClock(timer)
        self._timer = self._timer_cls(stmt=stmt, setup=setup or "pass", timer=self._clock, globals=self._globals)
        self._task_spec = TaskSpec(stmt=stmt, setup=setup, global_setup=global_setup, label=label,
                                   sub_label=sub_label, description=description, env=env, num_threads=num_threads)
        self._host: list = []
        self._kernels: list = []

    def _timeit(self, number: int) -> float:
        """Wall seconds for `number` runs (at least 1 ns), recording host and kernel time beside it."""
        with _KernelClock() as kernels:
            self._clock.kernels = kernels
            wall = self._timer.timeit(number)
        # timeit reads the clock once before the loop and once after it; the host part ends where
        # the second reading began waiting for the VMs
        waited = self._clock.last - self._clock.before_sync
        self._host.append(min(max(wall - waited, 0.0), wall))
        self._kernels.append(kernels.ns / 1e9)
        return max(wall, 1e-9)

    def _measurement(self, number: int, times: list) -> Measurement:
        k = len(times)
        return Measurement(number_per_run=number, raw_times=times, task_spec=self._task_spec,
                           raw_host_times=self._host[-k:], raw_kernel_times=self._kernels[-k:])

    def timeit(self, number: int = 1000000) -> Measurement:
        """Run the statement `number` times (after a short warm-up) and report one measurement."""
        self._timeit(max(int(number // 100), 2))
        self._host.clear()
        self._kernels.clear()
        return self._measurement(number, [self._timeit(number)])

    def repeat(self, repeat: int = -1, number: int = -1) -> None:
        """Not offered (as in torch): use timeit or blocked_autorange."""
        raise NotImplementedError("See `Timer.blocked_autorange.`")

    def autorange(self, callback: Callable | None = None) -> None:
        """Not offered (as in torch): use blocked_autorange."""
        raise NotImplementedError("See `Timer.blocked_autorange.`")

    def _estimate_block_size(self, min_run_time: float) -> int:
        overhead = float(np.median([self._timeit(0) for _ in range(5)]))
        number = 1
        while True:
            taken = self._timeit(number)
            if (overhead / taken <= 1e-4 and taken >= min_run_time / 1000) or taken > min_run_time:
                break
            if number * 10 > 2147483647:
                break
            number *= 10
        return number

    def _loop(self, number: int, stop: Callable[[list], bool], min_run_time: float,
              max_run_time: float | None = None, callback: Callable | None = None) -> list:
        self._host.clear()
        self._kernels.clear()
        total, can_stop, times = 0.0, False, []
        while total < min_run_time or not can_stop:
            spent = self._timeit(number)
            times.append(spent)
            total += spent
            if callback:
                callback(number, spent)
            can_stop = stop(times)
            if max_run_time and total > max_run_time:
                break
        return times

    def blocked_autorange(self, callback: Callable | None = None, min_run_time: float = 0.2) -> Measurement:
        """Blocks of a calibrated number of runs until `min_run_time` seconds have been spent."""
        number = self._estimate_block_size(min_run_time=0.05)
        times = self._loop(number, lambda _: True, min_run_time, callback=callback)
        return self._measurement(number, times)

    def adaptive_autorange(self, threshold: float = 0.1, *, min_run_time: float = 0.01, max_run_time: float = 10.0,
                           callback: Callable | None = None) -> Measurement:
        """Blocks until the IQR is under `threshold` of the median (and `min_run_time` is spent)."""
        number = self._estimate_block_size(min_run_time=0.05)

        def stop(times: list) -> bool:
            if len(times) > 3:
                return Measurement(number, times, self._task_spec).meets_confidence(threshold=threshold)
            return False
        times = self._loop(number, stop, min_run_time, max_run_time, callback=callback)
        return self._measurement(number, times)

    def collect_callgrind(self, *args: Any, **kwargs: Any) -> None:
        """Not available: tidal has no valgrind integration."""
        raise NotImplementedError("collect_callgrind needs valgrind and torch's callgrind bindings, which tidal "
                                  "does not have")

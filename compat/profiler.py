"""torch.profiler (and torch.autograd.profiler's reports) over tidal's profiler.

    with torch.profiler.profile(activities=[ProfilerActivity.CPU]) as prof:
        with torch.profiler.record_function("model_inference"):
            model(inputs)
    print(prof.key_averages().table(sort_by="cpu_time_total", row_limit=10))

tidal.profiler times every public op (the outermost call) on the host; this module turns its trace into
torch's reports: events named `aten::<op>`, `key_averages()` as an EventList of per-name averages with
torch's fields (count, cpu_time_total, self_cpu_time_total in microseconds, ...), `table()` with torch's
columns, schedules with `step()` and `on_trace_ready`, Chrome traces. Not measured: device (kernel) time
per op (kernels are fused across ops; tidal's own `tidal.profiler` table reports them), memory, flops and
input shapes (empty).
"""
from __future__ import annotations

import contextlib
import enum
import os
import time
from typing import Callable, Iterable

from .. import profiler as _tidal_profiler

__all__ = ["ProfilerActivity", "ProfilerAction", "profile", "record_function", "schedule",
           "tensorboard_trace_handler", "supported_activities", "EventList", "FunctionEvent", "FunctionEventAvg"]

# Tensor operators as tidal's profiler names them -> the ATen op torch reports
_ATEN = {"truediv": "div", "rtruediv": "div", "radd": "add", "rmul": "mul", "rsub": "rsub", "iadd": "add_",
         "isub": "sub_", "imul": "mul_", "itruediv": "div_", "getitem": "select", "setitem": "copy_"}


class ProfilerActivity(enum.Enum):
    """The kinds of activity a profile may record (tidal measures CPU time)."""
    CPU = 0
    XPU = 1
    MTIA = 2
    CUDA = 3
    HPU = 4
    PrivateUse1 = 5


class ProfilerAction(enum.Enum):
    """What a schedule asks of the profiler at one step."""
    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


def supported_activities() -> set:
    """The activities this build can profile."""
    return {ProfilerActivity.CPU}


def schedule(*, wait: int, warmup: int, active: int, repeat: int = 0, skip_first: int = 0,
             skip_first_wait: int = 0) -> Callable[[int], ProfilerAction]:
    """torch's cyclic schedule: skip_first steps, then cycles of wait, warmup and active steps (repeat times, 0:
    forever); the last active step of a cycle saves the trace."""
    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise AssertionError("Invalid profiler schedule arguments")
    if warmup == 0:
        import warnings
        warnings.warn("Profiler won't be using warmup, this can skew profiler results", stacklevel=2)

    def action(step: int) -> ProfilerAction:
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if skip_first_wait and step < wait:
            return ProfilerAction.NONE
        cycle = wait + warmup + active
        if repeat and step // cycle >= repeat:
            return ProfilerAction.NONE
        at = step % cycle
        if at < wait:
            return ProfilerAction.NONE
        if at < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if at < cycle - 1 else ProfilerAction.RECORD_AND_SAVE
    return action


def tensorboard_trace_handler(dir_name: str, worker_name: str | None = None,
                              use_gzip: bool = False) -> Callable[["profile"], None]:
    """An on_trace_ready handler writing each trace as `<worker>.<time>.pt.trace.json` into `dir_name`."""
    def handler(prof: "profile") -> None:
        import socket
        os.makedirs(dir_name, exist_ok=True)
        worker = worker_name or f"{socket.gethostname()}_{os.getpid()}"
        name = f"{worker}.{time.time_ns() // 1_000_000}.pt.trace.json" + (".gz" if use_gzip else "")
        prof.export_chrome_trace(os.path.join(dir_name, name))
    return handler


class FunctionEvent:
    """One timed call: name (`key`), start and duration, and its time outside the calls it contains."""

    def __init__(self, name: str, start_us: float, duration_us: float, self_us: float):
        self.name = self.key = name
        self.time_range_start, self.cpu_time_total, self.self_cpu_time_total = start_us, duration_us, self_us
        self.count, self.input_shapes, self.stack = 1, [], []
        self.device_time_total = self.self_device_time_total = 0.0
        self.cpu_memory_usage = self.self_cpu_memory_usage = self.flops = 0
        self.is_async, self.is_legacy = False, False

    @property
    def cpu_time(self) -> float:
        return self.cpu_time_total / max(self.count, 1)

    cuda_time_total = self_cuda_time_total = property(lambda self: 0.0)

    def __repr__(self) -> str:
        return (f"<{type(self).__name__} key={self.key} self_cpu_time={self.self_cpu_time_total:.3f}us "
                f"cpu_time={self.cpu_time:.3f}us count={self.count}>")


class FunctionEventAvg(FunctionEvent):
    """The calls of one name added up (what key_averages lists)."""

    def __init__(self, key: str):
        super().__init__(key, 0.0, 0.0, 0.0)
        self.count = 0

    def add(self, event: FunctionEvent) -> "FunctionEventAvg":
        """Add one event (or average) to this one."""
        self.count += event.count
        self.cpu_time_total += event.cpu_time_total
        self.self_cpu_time_total += event.self_cpu_time_total
        return self


_SORT_KEYS = ("cpu_time", "cuda_time", "device_time", "cpu_time_total", "cuda_time_total", "device_time_total",
              "cpu_memory_usage", "cuda_memory_usage", "self_cpu_memory_usage", "self_cuda_memory_usage",
              "self_cpu_time_total", "self_cuda_time_total", "self_device_time_total", "count")


def _time(us: float) -> str:
    """torch's time formatting: us below 1 ms, ms below 1 s, else s."""
    if us >= 1e6:
        return f"{us / 1e6:.3f}s"
    if us >= 1e3:
        return f"{us / 1e3:.3f}ms"
    return f"{us:.3f}us"


class EventList(list):
    """A list of FunctionEvent / FunctionEventAvg with torch's reports."""

    @property
    def self_cpu_time_total(self) -> float:
        return sum(e.self_cpu_time_total for e in self)

    def total_average(self) -> FunctionEventAvg:
        """Every event added into one average keyed 'Total'."""
        total = FunctionEventAvg("Total")
        for e in self:
            total.add(e)
        return total

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0) -> "EventList":
        """One FunctionEventAvg per name, in first-seen order."""
        averages: dict = {}
        for e in self:
            averages.setdefault(e.key, FunctionEventAvg(e.key)).add(e)
        return EventList(averages.values())

    def __str__(self) -> str:
        return self.table()  # (print(prof.key_averages()) prints the table, as torch's EventList)

    def table(self, sort_by: str | None = None, row_limit: int = 100, max_src_column_width: int = 75,
              max_name_column_width: int = 55, max_shapes_column_width: int = 80, header: str | None = None,
              top_level_events_only: bool = False, time_unit: str | None = None) -> str:
        """torch's text table: Name, Self CPU %, Self CPU, CPU total %, CPU total, CPU time avg, # of Calls."""
        if sort_by is not None and sort_by not in _SORT_KEYS:
            raise AttributeError(f"'FunctionEventAvg' object has no attribute '{sort_by}'")
        rows = list(self)
        if sort_by is not None:
            rows.sort(key=lambda e: getattr(e, sort_by.replace("cuda", "device")), reverse=True)
        if row_limit is not None and row_limit > 0:
            rows = rows[:row_limit]
        total_self = self.self_cpu_time_total or 1.0
        width = min(max([len("Name")] + [len(e.key) for e in rows]) + 4, max_name_column_width)
        cols = ["Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg", "# of Calls"]
        line = "-" * width + "  " + "  ".join("-" * 12 for _ in cols)
        out = [line, "Name".ljust(width) + "  " + "  ".join(c.rjust(12) for c in cols), line]
        if header is not None:
            out.insert(0, header)
        for e in rows:
            name = e.key if len(e.key) <= width - 2 else e.key[:width - 5] + "..."
            cells = [f"{100 * e.self_cpu_time_total / total_self:.2f}%", _time(e.self_cpu_time_total),
                     f"{100 * e.cpu_time_total / total_self:.2f}%", _time(e.cpu_time_total), _time(e.cpu_time),
                     str(e.count)]
            out.append(name.ljust(width) + "  " + "  ".join(c.rjust(12) for c in cells))
        out.append(line)
        out.append(f"Self CPU time total: {_time(self.self_cpu_time_total)}")
        return "\n".join(out) + "\n"

    def export_chrome_trace(self, path: str) -> None:
        """A Chrome trace of these events."""
        import json
        with open(path, "w") as f:
            json.dump({"traceEvents": [{"name": e.key, "ph": "X", "ts": e.time_range_start, "dur": e.cpu_time_total,
                                        "pid": 0, "tid": "host", "cat": "cpu_op"} for e in self]}, f)


def _events(raw: Iterable[dict], labels: set) -> EventList:
    """Host events of a tidal trace as FunctionEvents: op names as `aten::<op>`, a call's self time being its time
    outside the calls it contains (record_function regions contain ops)."""
    host = sorted((e for e in raw if e.get("tid") == "host"), key=lambda e: (e["ts"], -e["dur"]))
    events, stack = [], []
    for e in host:
        name = e["name"] if e["name"] in labels else "aten::" + _ATEN.get(e["name"], e["name"])
        event = FunctionEvent(name, e["ts"], e["dur"], e["dur"])
        while stack and e["ts"] >= stack[-1].time_range_start + stack[-1].cpu_time_total:
            stack.pop()
        if stack:
            stack[-1].self_cpu_time_total -= e["dur"]
        stack.append(event)
        events.append(event)
    return EventList(events)


class record_function(contextlib.ContextDecorator):
    """Label a region (a context manager or a decorator); it is listed under its own name."""

    _labels: set = set()

    def __init__(self, name: str, args: str | None = None):
        self.name, self.args = name, args
        self._inner = _tidal_profiler.record_function(name)

    def __enter__(self) -> "record_function":
        record_function._labels.add(self.name)
        self._inner.__enter__()
        return self

    def __exit__(self, *exc) -> bool:
        return self._inner.__exit__(*exc)


class profile:
    """torch.profiler.profile: a context manager (or start/stop) timing tidal's ops; with a schedule, `step()`
    moves through its wait/warmup/active steps and `on_trace_ready(prof)` runs after each active window."""

    def __init__(self, activities: Iterable | None = None, *, schedule: Callable | None = None,
                 on_trace_ready: Callable | None = None, record_shapes: bool = False, profile_memory: bool = False,
                 with_stack: bool = False, with_flops: bool = False, with_modules: bool = False,
                 experimental_config=None, execution_trace_observer=None, acc_events: bool = False,
                 use_cuda: bool | None = None, custom_trace_id_callback=None):
        self.activities = set(activities) if activities is not None else supported_activities()
        self.schedule = schedule
        self.on_trace_ready = on_trace_ready
        self.record_shapes, self.profile_memory, self.with_stack = record_shapes, profile_memory, with_stack
        self.step_num = 0
        self._inner: _tidal_profiler.profile | None = None
        self._events = EventList()

    # -- the window being recorded ------------------------------------------------------------------
    def _action(self) -> ProfilerAction:
        return ProfilerAction.RECORD if self.schedule is None else self.schedule(self.step_num)

    def _begin(self) -> None:
        self._inner = _tidal_profiler.profile()
        self._inner.__enter__()

    def _end(self, save: bool) -> None:
        inner, self._inner = self._inner, None
        if inner is None:
            return
        inner.__exit__(None, None, None)
        self._events = _events(inner.events, record_function._labels)
        if save and self.on_trace_ready is not None:
            self.on_trace_ready(self)

    def start(self) -> None:
        """Begin profiling (what entering the context does)."""
        if self._action() is not ProfilerAction.NONE:
            self._begin()

    def stop(self) -> None:
        """End profiling; a window that was recording (not warming up) goes to on_trace_ready."""
        self._end(save=self._action() in (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE))

    def step(self) -> None:
        """Mark the end of one step: with a schedule, open, keep, or close (and hand over) the recorded window."""
        before = self._action()
        self.step_num += 1
        after = self._action()
        recording = (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)
        if before is ProfilerAction.RECORD_AND_SAVE or (before is ProfilerAction.RECORD and
                                                        after is ProfilerAction.NONE):
            self._end(save=True)
        elif before is ProfilerAction.WARMUP and after is not ProfilerAction.WARMUP:
            self._end(save=False)  # what warmup steps ran is not reported
        if self._inner is None and (after in recording or after is ProfilerAction.WARMUP):
            self._begin()

    def __enter__(self) -> "profile":
        self.start()
        return self

    def __exit__(self, *exc) -> bool:
        self.stop()
        return False

    # -- reports ------------------------------------------------------------------------------------
    def events(self) -> EventList:
        """Every timed call of the last recorded window."""
        return self._events

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0,
                     group_by_overload_name: bool = False) -> EventList:
        """One average per name (see EventList.table)."""
        return self._events.key_averages(group_by_input_shape, group_by_stack_n)

    def export_chrome_trace(self, path: str) -> None:
        """Write the last window as a Chrome trace."""
        self._events.export_chrome_trace(path)

    @property
    def self_cpu_time_total(self) -> float:
        return self._events.self_cpu_time_total

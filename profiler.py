"""`tidal.profiler`: where the time goes, on the host and in kernels.

    with tidal.profiler.profile() as prof:
        model(x).sum().backward()
    print(prof.table())
    prof.export_chrome_trace("trace.json")   # one track per stream, plus the host

Host time is measured around every public op (the outermost call only, so composites
are not double counted); kernel time, fusion and allocation come from the VM.
"""
from __future__ import annotations

import functools
import json
import os
import threading
import time

from . import vm as _vm
from .tensor import Tensor
import tidal

__all__ = ["profile", "record_function"]


_VM_COUNTERS = ("instructions", "kernels", "replays", "inline_batches", "worker_batches", "fused_away",
                "allocations_avoided")


class _Row:
    __slots__ = ("calls", "host_ns", "kernels", "kernel_ns", "fused_away", "bytes")

    def __init__(self):
        self.calls = self.host_ns = self.kernels = self.kernel_ns = self.fused_away = self.bytes = 0


class profile:
    """Context manager collecting per-op host and kernel statistics and a trace."""

    def __init__(self, record_shapes: bool = False, with_stack: bool = False, **_ignored):
        self.rows: dict = {}
        self.events: list = []
        self._depth = threading.local()
        self._patched: list = []
        self._t0 = 0
        self._lock = threading.Lock()
        self.vm_stats: dict = {}  # VM counters over the profiled block (replayed windows, inline batches...)
        self._vm_before: dict = {}

    # -- hooks the VM calls ------------------------------------------------------------------
    def record_kernel(self, ins, t0: int, t1: int) -> None:
        """Called by the VM after each kernel."""
        nbytes = sum(v.blob.nbytes for v in ins.outs)
        with self._lock:
            row = self.rows.setdefault(ins.name, _Row())
            row.kernels += 1
            row.kernel_ns += t1 - t0
            row.fused_away += ins.fused - 1
            row.bytes += nbytes
            self.events.append({"name": ins.name, "ph": "X", "ts": (t0 - self._t0) / 1e3, "dur": (t1 - t0) / 1e3,
                                "pid": 0, "tid": f"stream:{ins.stream}", "args": {"fused": ins.fused}})

    def _wrap(self, name: str, fn):
        depth = self._depth
        rows, events = self.rows, self.events

        @functools.wraps(fn)
        def timed(*args, **kwargs):
            level = getattr(depth, "level", 0)
            depth.level = level + 1
            t0 = time.perf_counter_ns()
            try:
                return fn(*args, **kwargs)
            finally:
                depth.level = level
                if level == 0:
                    t1 = time.perf_counter_ns()
                    row = rows.setdefault(name, _Row())
                    row.calls += 1
                    row.host_ns += t1 - t0
                    events.append({"name": name, "ph": "X", "ts": (t0 - self._t0) / 1e3, "dur": (t1 - t0) / 1e3,
                                   "pid": 0, "tid": "host"})
        return timed

    # -- enter / exit ------------------------------------------------------------------------
    def __enter__(self) -> "profile":
        tidal.sync()
        self._t0 = time.perf_counter_ns()
        for obj, names in ((tidal, tidal.ops.__all__), (Tensor, [n for n in dir(Tensor) if not n.startswith("_")
                                                                  or n in _OPERATORS])):
            for name in names:
                fn = obj.__dict__.get(name) if isinstance(obj, type) else getattr(obj, name, None)
                if callable(fn) and not isinstance(fn, type):
                    self._patched.append((obj, name, fn))
                    setattr(obj, name, self._wrap(name.strip("_") if name in _OPERATORS else name, fn))
        for machine in _vm.all_vms():
            machine.profiler = self
        _vm.machine._profiler_default = self
        self._vm_before = _vm.stats()
        return self

    def __exit__(self, *exc) -> bool:
        try:
            tidal.sync()
            after = _vm.stats()
            self.vm_stats = {k: after[k] - self._vm_before.get(k, 0) for k in _VM_COUNTERS}
        finally:
            for obj, name, fn in reversed(self._patched):
                setattr(obj, name, fn)
            self._patched.clear()
            for machine in _vm.all_vms():
                machine.profiler = None
            _vm.machine._profiler_default = None
        return False

    # -- reports -----------------------------------------------------------------------------
    def key_averages(self) -> dict:
        """Per-name statistics: calls, host_us, kernels, kernel_us, fused_away, bytes."""
        return {name: {"calls": r.calls, "host_us": r.host_ns / 1e3, "kernels": r.kernels,
                       "kernel_us": r.kernel_ns / 1e3, "fused_away": r.fused_away, "bytes": r.bytes}
                for name, r in self.rows.items()}

    def table(self, sort_by: str = "kernel_us", row_limit: int = 30) -> str:
        """A text table, one row per op or kernel, sorted by `sort_by`."""
        stats = self.key_averages()
        order = sorted(stats.items(), key=lambda kv: -kv[1].get(sort_by, 0))[:row_limit]
        width = max([len("name")] + [min(len(n), 48) for n, _ in order])
        head = f"{'name':<{width}}  {'calls':>7}  {'host us':>10}  {'kernels':>7}  {'kernel us':>10}  " \
               f"{'fused away':>10}  {'bytes':>12}"
        lines = [head, "-" * len(head)]
        for name, s in order:
            lines.append(f"{name[:48]:<{width}}  {s['calls']:>7}  {s['host_us']:>10.1f}  {s['kernels']:>7}  "
                         f"{s['kernel_us']:>10.1f}  {s['fused_away']:>10}  {s['bytes']:>12}")
        if self.vm_stats:
            v = self.vm_stats
            lines.append(f"VM: {v['instructions']} instructions, {v['kernels']} kernels, {v['replays']} windows replayed, "
                         f"{v['inline_batches']} batches on the calling thread, {v['worker_batches']} on workers")
        return "\n".join(lines)

    def export_chrome_trace(self, path: str | os.PathLike) -> None:
        """Write a Chrome trace (chrome://tracing, Perfetto): one track per stream and one for the host."""
        with open(path, "w") as f:
            json.dump({"traceEvents": self.events, "displayTimeUnit": "ns"}, f)


class record_function:
    """Label a region in the trace (and table) with `name`."""

    def __init__(self, name: str):
        self.name = name
        self._t0 = 0

    def __enter__(self):
        self._t0 = time.perf_counter_ns()
        return self

    def __exit__(self, *exc) -> bool:
        prof = _vm.machine._profiler_default
        if prof is not None:
            t1 = time.perf_counter_ns()
            row = prof.rows.setdefault(self.name, _Row())
            row.calls += 1
            row.host_ns += t1 - self._t0
            prof.events.append({"name": self.name, "ph": "X", "ts": (self._t0 - prof._t0) / 1e3,
                                "dur": (t1 - self._t0) / 1e3, "pid": 0, "tid": "host"})
        return False


_OPERATORS = ("__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__truediv__", "__rtruediv__",
              "__matmul__", "__getitem__", "__setitem__", "__neg__", "__pow__", "__iadd__", "__isub__", "__imul__",
              "__itruediv__")

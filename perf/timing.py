"""Measuring one case for one competitor: warm up, repeat, report the median."""
from __future__ import annotations

import statistics
import time

from .cases import Bench, Case
from .competitors import Competitor

QUICK_TIME_SCALE = 0.1  # --quick samples for a tenth of the time


def time_bench(bench: Bench, warmup: int, min_repeat: int, min_time: float, max_time: float = 20.0,
               cpu: list | None = None) -> float:
    """Median seconds per operation over at least `min_repeat` calls and `min_time` seconds
    (stopping at `max_time`), after `warmup` untimed calls; the median CPU seconds per operation
    (every thread of the process) is appended to `cpu` when given."""
    after = bench.after or (lambda: None)
    for _ in range(warmup):
        bench.run()
        after()
    samples: list[float] = []
    cpu_samples: list[float] = []
    start = time.perf_counter()
    while True:
        c0 = time.process_time()
        t0 = time.perf_counter()
        result = bench.run()
        t1 = time.perf_counter()
        c1 = time.process_time()
        del result  # freeing the results is not part of the measured call
        after()
        samples.append((t1 - t0) / bench.per_call)
        cpu_samples.append((c1 - c0) / bench.per_call)
        spent = time.perf_counter() - start
        if (len(samples) >= min_repeat and spent >= min_time) or spent >= max_time:
            if cpu is not None:
                cpu.append(statistics.median(cpu_samples))
            return statistics.median(samples)


def measure(case: Case, comp: Competitor, quick: bool = False, cpu: list | None = None) -> float:
    """The case's figure for one competitor: seconds per op, or bytes for memory cases (CPU seconds
    per op are appended to `cpu` for timed cases)."""
    with comp.configured(fusion_compile_now=case.compile_now):
        built = case.build(comp)
        if case.unit == "B" or case.probe:
            return float(built())
        scale = QUICK_TIME_SCALE if quick else 1.0
        return time_bench(built, case.warmup, case.min_repeat, case.min_time * scale, cpu=cpu)

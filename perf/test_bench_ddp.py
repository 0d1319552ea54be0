"""DistributedDataParallel step time on 2 ranks (CPU data plane): bucketed all-reduces that overlap
backward, against the same DDP with one bucket (all-reduced only once backward has finished),
and against one process running the same per-rank step without any communication.

    pytest perf/test_bench_ddp.py --benchmark-only -s     (the table is printed and kept in extra_info)
    python perf/test_bench_ddp.py [steps]

A step: zero_grad, forward and MSE loss of an MLP on the rank's batch, backward, SGD step, then
`tidal.sync()`. Each variant runs `steps` timed steps after warm-up; the time of a step is the
slower rank's, and the table gives the median over steps. Overlap ratio = no-overlap time /
overlap time (above 1: overlapping pays).
"""
from __future__ import annotations

import multiprocessing as mp
import statistics
import sys
import time

import pytest

from tidal.perf.ranks import run_on_ranks

WORLD = 2
WIDTH, DEPTH, BATCH = 1024, 6, 64    # about 5.3M float32 parameters: 21 MB of gradients per step
OVERLAP_BUCKET_MB = 4
STEPS, WARMUP = 12, 3


def _model():
    import tidal
    from tidal import nn
    tidal.manual_seed(0)
    layers = []
    for _ in range(DEPTH - 1):
        layers += [nn.Linear(WIDTH, WIDTH), nn.ReLU()]
    return nn.Sequential(*layers, nn.Linear(WIDTH, 16))


def _step_times(model, steps: int, control) -> list:
    """Seconds per step (this rank's, or the slower rank's when `control` is given)."""
    import tidal
    opt = tidal.optim.SGD(model.parameters(), lr=1e-4)
    x, y = tidal.randn(BATCH, WIDTH), tidal.randn(BATCH, 16)
    times = []
    for k in range(WARMUP + steps):
        if control is not None:
            control.barrier()
        start = time.perf_counter()
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()
        tidal.sync()
        elapsed = time.perf_counter() - start
        if k >= WARMUP:
            times.append(elapsed)
    if control is not None:
        times = [max(pair) for pair in zip(*control.all_gather_object(times))]
    return times


def _ddp_rows(rank: int, steps: int) -> dict:
    from tidal import comm
    from tidal.nn.parallel import DistributedDataParallel as DDP
    control = comm.default_group().control
    rows = {}
    overlap = DDP(_model(), bucket_cap_mb=OVERLAP_BUCKET_MB)
    rows["overlap"] = (_step_times(overlap, steps, control), len(overlap.reducer.buckets))
    single_bucket = DDP(_model(), bucket_cap_mb=1 << 20)
    rows["no overlap"] = (_step_times(single_bucket, steps, control), len(single_bucket.reducer.buckets))
    return rows


def _single_main(steps: int, results) -> None:
    results.put({"1 process": (_step_times(_model(), steps, None), 0)})


def measure(steps: int = STEPS, timeout: float = 300.0) -> dict:
    """{variant: ([seconds per step], buckets)} for DDP with overlap, DDP without, and one process."""
    rows = run_on_ranks(_ddp_rows, (steps,), WORLD, timeout)
    ctx = mp.get_context("spawn")
    results = ctx.Queue()
    single = ctx.Process(target=_single_main, args=(steps, results), daemon=True)  # a fresh process, alone
    single.start()
    try:
        rows.update(results.get(timeout=timeout))
    finally:
        single.join(10)
    return rows


def table(rows: dict) -> str:
    """Median step times, and the ratios that matter."""
    median = {name: statistics.median(times) for name, (times, _) in rows.items()}
    lines = [f"MLP {DEPTH} x {WIDTH} float32, batch {BATCH} per rank, {WORLD} ranks",
             f"{'variant':>12} {'buckets':>8} {'step ms':>9} {'vs 1 process':>13}"]
    for name, (_, buckets) in rows.items():
        lines.append(f"{name:>12} {buckets or '-':>8} {median[name] * 1e3:9.2f} "
                     f"{median[name] / median['1 process']:13.2f}")
    lines.append(f"overlap ratio (no-overlap time / overlap time): {median['no overlap'] / median['overlap']:.2f}")
    return "\n".join(lines)


@pytest.mark.timeout(600)
def test_ddp_step_time(benchmark):
    """One measurement of the three variants (timed as a whole); the table goes to stdout and extra_info."""
    rows = benchmark.pedantic(measure, rounds=1, iterations=1)
    benchmark.extra_info["step_seconds"] = {name: times for name, (times, _) in rows.items()}
    benchmark.extra_info["buckets"] = {name: buckets for name, (_, buckets) in rows.items()}
    print("\n" + table(rows))


if __name__ == "__main__":
    print(table(measure(int(sys.argv[1]) if len(sys.argv) > 1 else STEPS)))

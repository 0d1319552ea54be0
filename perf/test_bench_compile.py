"""First-call latency of a new fused chain, in fresh processes: cold (empty kernel cache: the
kernel is generated and numba compiles it) against warm (the generated file and numba's
compiled artefacts are on disk from an earlier process). CPU only: the CUDA simulator runs
kernels as Python, so its timings mean nothing.

Each round starts a process with TIDAL_CACHE_DIR set, compiles in the foreground on first sight
(`compile_after=1`, no background compiler) and reports, measured inside the process: import
time, the first call (generate + compile or load + run) and a second call (steady state).
The benchmark's own time is the whole process; the inside numbers are in `extra_info`.
Run directly (`python perf/test_bench_compile.py`) for a table.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

import pytest

_CHILD = r"""
import json, time
t0 = time.perf_counter()
import tidal
t_import = time.perf_counter() - t0
tidal.vm.set_fusion(compile_after=1, background_compile=False)
x, y = tidal.ones(4096), tidal.full((4096,), 0.25)
tidal.sync()

def chain(x, y):
    return ((x * 1.75 + y).relu() - 0.5 * y).exp() / (y + 3.0)

times = []
for _ in range(2):
    t = time.perf_counter()
    chain(x, y).numpy()
    times.append(time.perf_counter() - t)
print(json.dumps({"import_s": t_import, "first_call_s": times[0], "second_call_s": times[1]}))
"""


def first_call(cache_dir: str) -> dict:
    """Run the chain in a fresh process whose kernel cache is `cache_dir`; its inside timings."""
    env = dict(os.environ, TIDAL_CACHE_DIR=cache_dir, TIDAL_VM_MODE="async")
    out = subprocess.run([sys.executable, "-c", _CHILD], env=env, capture_output=True, text=True, timeout=300,
                         check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _record(benchmark, runs: list) -> None:
    for key in ("import_s", "first_call_s", "second_call_s"):
        benchmark.extra_info[key] = min(r[key] for r in runs)


@pytest.mark.benchmark(group="first call of a new fused chain (fresh process)")
def test_first_call_cold_cache(benchmark):
    runs = []

    def run():
        with tempfile.TemporaryDirectory() as cache:
            runs.append(first_call(cache))
    benchmark.pedantic(run, rounds=3, iterations=1)
    _record(benchmark, runs)


@pytest.mark.benchmark(group="first call of a new fused chain (fresh process)")
def test_first_call_warm_cache(benchmark):
    runs = []
    with tempfile.TemporaryDirectory() as cache:
        first_call(cache)  # fills the cache
        benchmark.pedantic(lambda: runs.append(first_call(cache)), rounds=3, iterations=1)
    _record(benchmark, runs)


def main() -> None:
    """Print cold and warm first-call latencies (best of 3 processes each)."""
    with tempfile.TemporaryDirectory() as warm:
        first_call(warm)
        rows = {"cold": [], "warm": []}
        for _ in range(3):
            with tempfile.TemporaryDirectory() as cold:
                rows["cold"].append(first_call(cold))
            rows["warm"].append(first_call(warm))
    print(f"{'cache':6} {'import':>9} {'first call':>11} {'second call':>12}")
    for name, runs in rows.items():
        best = {k: min(r[k] for r in runs) for k in runs[0]}
        print(f"{name:6} {best['import_s'] * 1e3:7.0f}ms {best['first_call_s'] * 1e3:9.1f}ms "
              f"{best['second_call_s'] * 1e3:10.2f}ms")


if __name__ == "__main__":
    main()

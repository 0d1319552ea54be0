"""Runtime benchmarks with no competitor (the compared cases live in perf/cases.py)."""
import pytest

import tidal


@pytest.mark.benchmark(group="long loop of small ops (memory must stay flat)")
def test_long_small_op_loop_memory(benchmark):
    x = tidal.ones(1000)

    def run():
        y = tidal.ones(1000)
        for _ in range(20_000):
            y = y * 0.5 + x
        y.numpy()
    tidal.sync()
    before = tidal.vm.memory_stats()["bytes_in_use"]
    benchmark.pedantic(run, rounds=3)
    tidal.sync()
    assert tidal.vm.memory_stats()["bytes_in_use"] - before <= 1 << 16

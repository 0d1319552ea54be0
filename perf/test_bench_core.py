"""Core runtime benchmarks, each next to its NumPy and PyTorch counterparts in the same run.

Group names pair competitors so pytest-benchmark's table reads as ratios per row group.
"""
import numpy as np
import pytest

import tidal

torch = pytest.importorskip("torch")


@pytest.fixture(params=["async", "sync"])
def mode(request):
    saved = tidal.vm.get_mode()
    tidal.vm.set_mode(request.param)
    yield request.param
    tidal.vm.set_mode(saved)


@pytest.mark.benchmark(group="tiny add, synced")
def test_tiny_add_tidal(benchmark, mode):
    a, b = tidal.ones(1), tidal.ones(1)
    benchmark(lambda: (a + b).numpy())


@pytest.mark.benchmark(group="tiny add, synced")
def test_tiny_add_numpy(benchmark):
    a, b = np.ones(1, np.float32), np.ones(1, np.float32)
    benchmark(lambda: a + b)


@pytest.mark.benchmark(group="tiny add, synced")
def test_tiny_add_torch(benchmark):
    a, b = torch.ones(1), torch.ones(1)
    benchmark(lambda: a + b)


@pytest.mark.benchmark(group="tiny add, host enqueue x100")
def test_tiny_add_enqueue_tidal(benchmark):
    a, b = tidal.ones(1), tidal.ones(1)

    def run():
        for _ in range(100):
            a + b
    benchmark(run)
    tidal.sync()


@pytest.mark.benchmark(group="tiny add, host enqueue x100")
def test_tiny_add_enqueue_torch(benchmark):
    a, b = torch.ones(1), torch.ones(1)

    def run():
        for _ in range(100):
            a + b
    benchmark(run)


def _chain(x, lib):
    return lib.maximum(x * 2 + 1, lib.zeros_like(x) if lib is np else 0) * x + 0.5 if lib is not torch else \
        torch.clamp_min(x * 2 + 1, 0) * x + 0.5


N = 10_000_000


@pytest.mark.benchmark(group="4-op chain, 10M float32")
def test_chain_tidal(benchmark):
    x = tidal.randn(N)
    benchmark.pedantic(lambda: (tidal.maximum(x * 2 + 1, 0) * x + 0.5).numpy(), rounds=10, warmup_rounds=3)


@pytest.mark.benchmark(group="4-op chain, 10M float32")
def test_chain_numpy(benchmark):
    x = np.random.default_rng(0).standard_normal(N).astype(np.float32)
    benchmark.pedantic(lambda: np.maximum(x * 2 + 1, 0) * x + np.float32(0.5), rounds=10, warmup_rounds=1)


@pytest.mark.benchmark(group="4-op chain, 10M float32")
def test_chain_torch(benchmark):
    x = torch.randn(N)
    benchmark.pedantic(lambda: torch.clamp_min(x * 2 + 1, 0) * x + 0.5, rounds=10, warmup_rounds=1)


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

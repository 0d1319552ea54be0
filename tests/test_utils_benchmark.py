"""tidal.utils.benchmark against torch.utils.benchmark (Measurement statistics and repr, Compare tables,
Timer with its host/device split), and the compat process and RNG utilities: torch.multiprocessing's
spawn and torch.random."""
from __future__ import annotations

import multiprocessing
import os

import numpy as np
import pytest
import torch.utils.benchmark as TB

import tidal
import tidal.compat as compat
from tidal.utils import benchmark as B


def measurement_pair(times, number=100, **spec):
    ours = B.Measurement(number, list(times), B.TaskSpec(stmt=spec.pop("stmt", "x + 1"), setup="pass", **spec))
    theirs = TB.Measurement(number, list(times), TB.TaskSpec(stmt=ours.stmt, setup="pass", **spec))
    return ours, theirs


def body(text: str) -> str:
    return text.split("\n", 1)[1]  # drop the first line, which names the class and its address


@pytest.mark.parametrize("times", [[1.2e-4], [3e-3, 3.1e-3, 2.9e-3, 3.05e-3, 3.2e-3],
                                   [1e-5, 2e-5, 1.5e-5, 4e-5, 1.1e-5, 1.3e-5]])
def test_measurement_statistics_and_repr_as_torch(times):
    ours, theirs = measurement_pair(times, label="add", sub_label="small", description="cpu")
    for name in ("median", "mean", "iqr"):
        assert getattr(ours, name) == pytest.approx(getattr(theirs, name), rel=1e-12)
    assert ours.significant_figures == theirs.significant_figures
    assert ours.has_warnings == theirs.has_warnings
    assert ours.times == theirs.times and ours.title == theirs.title
    assert body(repr(ours)) == body(repr(theirs))
    assert repr(ours).startswith("<tidal.utils.benchmark.measurement.Measurement object at 0x")


def test_compare_table_as_torch():
    rng = np.random.default_rng(0)
    ours, theirs = [], []
    for sub in ("small", "large"):
        for desc, base in (("add", 2e-6), ("mul", 5e-6)):
            for threads in (1, 4):
                scale = base * (10 if sub == "large" else 1) / threads
                o, t = measurement_pair(scale * (1 + 0.05 * rng.random(7)), label="ops", sub_label=sub,
                                        description=desc, num_threads=threads)
                ours.append(o)
                theirs.append(t)
    o, t = measurement_pair([1e-3, 1.01e-3], label="other", sub_label="x", description="add")
    ours.append(o)
    theirs.append(t)
    mine, ref = B.Compare(ours), TB.Compare(theirs)
    assert str(mine) == str(ref)
    for method in ("trim_significant_figures", "highlight_warnings"):
        getattr(mine, method)()
        getattr(ref, method)()
        assert str(mine) == str(ref)
    mine.colorize(rowwise=True)
    ref.colorize(rowwise=True)
    assert str(mine) == str(ref)
    with pytest.raises(ValueError, match="Expected an instance of `Measurement`"):
        B.Compare([1.0])


def test_timer_reports_wall_host_and_device_time():
    x = tidal.ones(64, 64)
    timer = B.Timer("y = x @ x", globals={"x": x}, label="mm", description="tidal")
    m = timer.timeit(20)
    assert m.number_per_run == 20 and len(m.raw_times) == 1
    assert 0 < m.host_times[0] <= m.times[0]
    assert 0 < m.kernel_times[0]  # the matmuls ran as kernels while the block was timed
    assert "host (enqueue):" in repr(m) and "device (kernels):" in repr(m)
    blocked = timer.blocked_autorange(min_run_time=0.05)
    assert sum(blocked.raw_times) >= 0.05 and len(blocked.raw_host_times) == len(blocked.raw_times)
    calls = []
    adaptive = B.Timer("x + 1", globals={"x": x}).adaptive_autorange(
        min_run_time=0.01, max_run_time=0.5, callback=lambda n, t: calls.append((n, t)))
    assert len(calls) == len(adaptive.raw_times) and adaptive.median > 0
    with pytest.raises(NotImplementedError, match="C\\+\\+"):
        B.Timer("x", language="c++")


def test_timer_passes_kernels_on_to_an_active_profiler():
    x = tidal.ones(32, 32)
    with tidal.profiler.profile() as prof:
        B.Timer("x @ x", globals={"x": x}).timeit(5)
    assert any(row["kernels"] for row in prof.key_averages().values())


# -- torch.random and torch.multiprocessing -----------------------------------------------------
def test_random_seed_state_and_fork_rng():
    compat.random.manual_seed(7)
    assert compat.random.initial_seed() == 7
    state = compat.random.get_rng_state()
    first = tidal.rand(4).numpy().copy()
    with compat.random.fork_rng():
        tidal.rand(100)
    after_fork = tidal.rand(4).numpy().copy()
    compat.random.set_rng_state(state)
    np.testing.assert_array_equal(tidal.rand(4).numpy(), first)
    np.testing.assert_array_equal(tidal.rand(4).numpy(), after_fork)  # the fork consumed nothing outside
    with compat.random.fork_rng(enabled=False):
        tidal.rand(3)
    assert isinstance(compat.random.seed(), int)


def _record(i: int, queue, scale: int) -> None:
    queue.put((i, i * scale, os.getpid()))


def _fail(i: int) -> None:
    if i == 1:
        raise ValueError("rank one failed")


def _exit(i: int) -> None:
    os._exit(3 if i == 0 else 0)


def test_spawn_runs_each_rank_and_reports_failures():
    mp = compat.multiprocessing
    assert mp.Process is multiprocessing.Process and mp.get_context is not None
    ctx = mp.get_context("fork")
    queue = ctx.SimpleQueue()
    mp.start_processes(_record, args=(queue, 10), nprocs=3, start_method="fork")
    got = sorted(queue.get() for _ in range(3))
    assert [g[:2] for g in got] == [(0, 0), (1, 10), (2, 20)] and os.getpid() not in {g[2] for g in got}
    with pytest.raises(mp.ProcessRaisedException, match="-- Process 1 terminated with the following error") as err:
        mp.start_processes(_fail, nprocs=2, start_method="fork")
    assert "ValueError: rank one failed" in str(err.value)
    with pytest.raises(mp.ProcessExitedException, match="process 0 terminated with exit code 3"):
        mp.start_processes(_exit, nprocs=2, start_method="fork")
    context = mp.start_processes(_record, args=(queue, 1), nprocs=1, join=False, start_method="fork")
    while not context.join(timeout=5):
        pass
    assert queue.get()[:2] == (0, 0)


def test_spawn_with_the_spawn_start_method():
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.SimpleQueue()
    compat.multiprocessing.spawn(queue.put, nprocs=1)  # the child calls queue.put(0): a fresh interpreter
    assert queue.get() == 0

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


@pytest.mark.benchmark(group="backward pass of the 2-layer transformer LM: program thread's issue time")
@pytest.mark.parametrize("replay", [False, True], ids=["engine", "backward replay"])
def test_backward_issue_time(benchmark, replay):
    from tidal.autograd import backward_replay
    from tidal.perf import models
    saved = backward_replay.enabled
    backward_replay.enabled = replay
    trainer = models.build("lm", tidal)
    for _ in range(4):  # (the second pass over the graph records it)
        trainer.step().item()

    def setup():
        trainer.optimizer.zero_grad()
        return (trainer.loss_fn(trainer.model(trainer.inputs), trainer.targets),), {}

    try:
        benchmark.pedantic(lambda loss: loss.backward(), setup=setup, rounds=30)
        tidal.sync()
    finally:
        backward_replay.enabled = saved
    if replay:
        assert backward_replay.stats()["replayed"] > 0

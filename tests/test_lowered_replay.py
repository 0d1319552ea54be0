"""Lowered backward replay (autograd/lowered_replay.py): a recorded pass runs as the kernels the VM ran for it.

Each case runs a program with the lowered path and without it (or with replay off) and asks for bitwise equal results;
the counters show which path ran, and that it was refused where it must be.
"""
import numpy as np
import pytest

import tidal
from tidal.autograd import backward_replay as br
from tidal.autograd import lowered_replay as lr
import test_backward_replay

_USABLE = lr.usable


@pytest.fixture
def replay(async_mode, fusion_settings):
    """Replay on in async mode with kernels compiled at once, no recordings from earlier tests."""
    saved = br.enabled
    tidal.vm.set_fusion(background_compile=False)
    br.forget()
    br.enabled = True
    yield br
    br.enabled = saved
    br.forget()


def _trained(name: str, on: bool, lowered: bool, monkeypatch, steps: int = 10) -> tuple:
    monkeypatch.setattr(lr, "usable", _USABLE if lowered else (lambda vm, places: False))
    return test_backward_replay._trained(name, on, steps)


@pytest.mark.parametrize("name", ["mlp", "cnn", "gpt", "lm"])
def test_training_runs_lowered_and_bitwise_as_on_the_engine(replay, monkeypatch, name):
    _trained(name, False, False, monkeypatch)  # (every kernel compiled first: NumPy's and numba's exp may differ)
    engine = _trained(name, False, False, monkeypatch)
    instructions = _trained(name, True, False, monkeypatch)
    before = br.stats()
    lowered = _trained(name, True, True, monkeypatch)
    after = br.stats()
    assert after["captured"] == before["captured"] + 1
    assert after["lowered"] >= before["lowered"] + 5  # passes 3.. replay; the first replay or two capture
    for run in (instructions, lowered):
        assert run[0] == engine[0]
        for a, b in zip(engine[1] + engine[2], run[1] + run[2]):
            assert np.array_equal(a, b)


def _loop(x0: tidal.Tensor) -> tidal.Tensor:
    x = x0
    for _ in range(4):
        y = (x * 1.5 + 0.5).relu().sum(0, keepdim=True)
        x = x + y * 0.25
    return x.sum()


def test_a_lowered_pass_counts_the_instructions_and_kernels_of_the_instruction_pass(replay):
    w = tidal.ones(3, 4, requires_grad=True)
    counts = []
    for _ in range(8):
        w.grad = None
        tidal.sync()
        before, lowered = tidal.vm.stats(), br.stats()["lowered"]
        _loop(w).backward()
        grad = w.grad.numpy().copy()
        after = tidal.vm.stats()
        counts.append((br.stats()["lowered"] - lowered, after["instructions"] - before["instructions"],
                       after["kernels"] - before["kernels"], grad))
    assert [c[0] for c in counts] == [0, 0, 0, 0, 1, 1, 1, 1]  # seen, recorded, replayed, captured, lowered...
    for ran_lowered, instructions, kernels, grad in counts[1:]:
        assert (instructions, kernels) == counts[0][1:3]
        np.testing.assert_array_equal(grad, counts[0][3])


def test_memory_lent_to_numpy_takes_the_instruction_path(replay):
    w = tidal.ones(6, requires_grad=True)
    for _ in range(6):
        w.grad = None
        ((w * w) * 3.0).sum().backward()
    before = br.stats()
    assert before["lowered"] >= 1
    host = w.detach().numpy()  # shares w's memory from now on: instructions touching it run at their push
    for step in range(4):
        w.grad = None
        host[:] = step  # the program writes the leaf's memory between passes
        ((w * w) * 3.0).sum().backward()
        np.testing.assert_array_equal(w.grad.numpy(), np.full(6, 6.0 * step, np.float32))
    assert br.stats()["lowered"] == before["lowered"]


def test_memory_lent_elsewhere_does_not_stop_the_lowered_path(replay):
    host = np.ones(4, np.float32)
    other = tidal.from_numpy(host)  # lent to NumPy for its whole life, but not part of the pass
    w = tidal.ones(6, requires_grad=True)
    before = br.stats()
    for _ in range(8):
        w.grad = None
        ((w * w) * 3.0).sum().backward()
        np.testing.assert_array_equal(w.grad.numpy(), np.full(6, 6.0, np.float32))
    assert br.stats()["lowered"] >= before["lowered"] + 3
    assert other.numpy() is not None


def test_sync_mode_takes_the_instruction_path(replay):
    w = tidal.ones(5, requires_grad=True)
    for _ in range(6):  # captured in async mode
        w.grad = None
        _loop(w).backward()
    expected = w.grad.numpy().copy()
    lowered = br.stats()["lowered"]
    assert lowered >= 1
    tidal.vm.set_mode("sync")
    for _ in range(3):
        w.grad = None
        _loop(w).backward()
        np.testing.assert_array_equal(w.grad.numpy(), expected)
    assert br.stats()["lowered"] == lowered


def test_pending_work_runs_before_the_lowered_pass(replay):
    w = tidal.ones(4, requires_grad=True)
    for step in range(8):
        w.grad = None
        loss = _loop(w * float(step + 1))  # the forward's tail is still pending when backward starts
        loss.backward()
        ref = None
        with tidal.no_grad():
            x = w.detach().clone().requires_grad_(True)
        br.enabled = False
        _loop(x * float(step + 1)).backward()
        ref = x.grad.numpy().copy()
        br.enabled = True
        np.testing.assert_array_equal(w.grad.numpy(), ref)
    assert br.stats()["lowered"] >= 2


def test_accumulating_into_grad_and_retain_graph_stay_right_lowered(replay):
    w = tidal.ones(2, 3, requires_grad=True)
    for step in range(1, 9):
        w.grad = None
        loss = _loop(w)
        loss.backward(retain_graph=True)
        loss.backward()  # accumulates into the same .grad, on the same graph
        once = None
        if step == 1:
            once = w.grad.numpy() / 2
            first = once
        np.testing.assert_array_equal(w.grad.numpy(), 2 * first)
    assert br.stats()["lowered"] >= 2

"""Window replay, where kernels run, back-pressure, pushes from many threads, errors at exit."""
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import tidal


@pytest.fixture
def replay_vm():
    """Async mode, compile-on-second-sight in the foreground, knobs restored afterwards."""
    saved, mode = tidal.vm.get_fusion(), tidal.vm.get_mode()
    tidal.vm.set_mode("async")
    tidal.vm.set_fusion(compile_after=1, background_compile=False)
    yield
    tidal.vm.set_fusion(**saved)
    tidal.vm.set_mode(mode)


def _step(x, w):
    # one window: an elementwise group feeding a sum, then a broadcast add (a second group)
    y = ((x * w + 0.5).relu() * 2.0).sum(0, keepdim=True)
    return x + y * 0.25


def _ref_step(x, w):
    y = (np.maximum(x * w + np.float32(0.5), 0) * np.float32(2.0)).sum(0, keepdims=True, dtype=np.float64)
    return x + y.astype(x.dtype) * np.asarray(0.25, x.dtype)


def _run(fn, *arrays):
    """fn on tensors made from `arrays`, synced; returns (result, stats of that one window)."""
    tensors = [tidal.tensor(a) for a in arrays]
    for t in tensors:
        t.numpy()
    tidal.vm.reset_stats()
    out = fn(*tensors).numpy()
    return out, tidal.vm.stats()


def _warm(fn, *arrays, times=4):
    for _ in range(times):
        _run(fn, *arrays)


def test_a_repeated_window_is_replayed_with_the_same_results(replay_vm):
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((6, 5), dtype=np.float32), rng.standard_normal(5, dtype=np.float32)
    _warm(_step, x, w)
    out, s = _run(_step, x, w)
    assert s["replays"] == 1
    np.testing.assert_allclose(out, _ref_step(x, w), rtol=1e-6)
    # fresh values through the same window: replayed again, still right
    x2 = rng.standard_normal((6, 5), dtype=np.float32)
    out, s = _run(_step, x2, w)
    assert s["replays"] == 1
    np.testing.assert_allclose(out, _ref_step(x2, w), rtol=1e-6)


def test_a_window_of_two_ops_is_replayed_and_a_lone_op_feeding_a_sum_runs_compiled(replay_vm):
    from tidal.vm import fusion
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal((64, 64), dtype=np.float32), rng.standard_normal((64, 64), dtype=np.float32)
    _warm(lambda a, b: (a + b).sum(), x, y)
    out, s = _run(lambda a, b: (a + b).sum(), x, y)
    assert s["replays"] == 1 and s["kernels"] == 1  # the add and its sum, one fused kernel from the template
    np.testing.assert_allclose(out, (x + y).sum(dtype=np.float64), rtol=1e-6)
    compiled = [e for e in fusion._programs.values() if e[4] == "fused[add+sum]"]
    assert any(e[3] for e in compiled)  # (compiled: the NumPy path stored the whole sum and reduced it apart)


def test_replay_allocates_only_what_the_program_keeps(replay_vm):
    x = np.linspace(-2, 2, 1000, dtype=np.float32)

    def chain(t):
        return (t * 2 + 1).clamp_min(0) * t + 0.5
    _warm(chain, x)
    out, s = _run(chain, x)
    assert s["replays"] == 1
    assert s["kernels"] == 1 and s["fused_away"] == 4
    assert s["allocations"] == 1 and s["allocations_avoided"] == 4
    np.testing.assert_array_equal(out, np.maximum(x * 2 + 1, 0) * x + np.float32(0.5))


def test_one_off_windows_past_the_bound_leave_the_working_set_replayed(replay_vm, monkeypatch):
    from tidal.vm import replay
    monkeypatch.setattr(replay, "MAX_TEMPLATES", 8)
    rng = np.random.default_rng(3)
    x, w = rng.standard_normal((6, 5), dtype=np.float32), rng.standard_normal(5, dtype=np.float32)
    rows = tidal.tensor(rng.standard_normal((400, 5), dtype=np.float32))
    _warm(_step, x, w)
    for k in range(40):  # windows never seen again: two ops on a row at a new offset each time
        (rows[k] * 2.0 + 1.0).numpy()
        out, s = _run(_step, x, w)  # the loop's own window, between them
        assert s["replays"] == 1
        np.testing.assert_allclose(out, _ref_step(x, w), rtol=1e-6)
    caches = [vm.windows.templates for vm in tidal.vm.machine.all_vms()]
    assert all(len(c) <= 8 for c in caches)
    # a window first seen after the flood still gets its template
    _warm(lambda a: (a * 3.0 - 1.0).exp(), x)
    out, s = _run(lambda a: (a * 3.0 - 1.0).exp(), x)
    assert s["replays"] == 1
    np.testing.assert_allclose(out, np.exp(x * np.float32(3) - np.float32(1)), rtol=1e-6)


@pytest.mark.parametrize("change", ["shape", "dtype", "op", "edge"])
def test_a_window_that_differs_is_not_replayed(replay_vm, change):
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((4, 3), dtype=np.float32), rng.standard_normal((4, 3), dtype=np.float32)

    def base(p, q):
        y = p * q
        return (y + p) * 2.0

    _warm(base, a, b)
    assert _run(base, a, b)[1]["replays"] == 1
    if change == "shape":
        a2, b2 = rng.standard_normal((5, 3), dtype=np.float32), rng.standard_normal((5, 3), dtype=np.float32)
        out, s = _run(base, a2, b2)
        expected = (a2 * b2 + a2) * np.float32(2.0)
    elif change == "dtype":
        a2, b2 = a.astype(np.float64), b.astype(np.float64)
        out, s = _run(base, a2, b2)
        expected = (a2 * b2 + a2) * 2.0
    elif change == "op":
        out, s = _run(lambda p, q: (p + q + p) * 2.0, a, b)
        expected = (a + b + a) * np.float32(2.0)
    else:  # the same ops, one input edge moved from p to q
        out, s = _run(lambda p, q: (p * q + q) * 2.0, a, b)
        expected = (a * b + b) * np.float32(2.0)
    assert s["replays"] == 0
    np.testing.assert_allclose(out, expected, rtol=1e-6)


def test_an_intermediate_the_program_keeps_is_not_dropped_by_replay(replay_vm):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    kept = []

    def chain(t, keep):
        y = t * 3.0
        if keep:
            kept.append(y)
        return (y + 1.0) * 2.0
    _warm(lambda t: chain(t, False), x)
    assert _run(lambda t: chain(t, False), x)[1]["replays"] == 1
    out, s = _run(lambda t: chain(t, True), x)
    assert s["replays"] == 0  # same signature, but the template drops y: fused afresh
    np.testing.assert_array_equal(kept[0].numpy(), x * 3)
    np.testing.assert_array_equal(out, (x * 3 + 1) * 2)


def test_replay_off_gives_the_same_results(replay_vm):
    x, w = np.ones((4, 4), np.float32), np.full(4, 0.5, np.float32)
    _warm(_step, x, w)
    with_replay = _run(_step, x, w)[0]
    tidal.vm.set_replay(False)
    try:
        out, s = _run(_step, x, w)
    finally:
        tidal.vm.set_replay(True)
    assert s["replays"] == 0
    np.testing.assert_array_equal(out, with_replay)


@pytest.fixture
def worker_only():
    """Every batch goes to the worker thread, with a small in-flight bound."""
    mode = tidal.vm.get_mode()
    tidal.vm.set_mode("async")
    tidal.vm.set_execution(inline_bytes=0, max_in_flight=256)
    yield
    tidal.vm.set_execution(inline_bytes=1 << 20, max_in_flight=16384)
    tidal.vm.set_mode(mode)


def test_a_loop_that_never_syncs_stays_within_the_in_flight_bound(worker_only):
    x = tidal.ones(16)
    tidal.vm.reset_stats()
    for _ in range(5000):
        y = (x * 1.0001 + 0.5).relu().sum(0, keepdim=True)
        x = x + y * 0.0
        assert tidal.vm.stats()["in_flight"] <= 256 + 64  # the queue's bound plus one window
    s = tidal.vm.stats()
    assert 0 < s["max_in_flight"] <= 256
    assert s["worker_batches"] > 0 and s["inline_batches"] == 0
    expected = np.ones(16, np.float32)
    for _ in range(5000):
        y = (np.maximum(expected * np.float32(1.0001) + np.float32(0.5), 0)).sum(0, keepdims=True)
        expected = expected + y * np.float32(0.0)
    np.testing.assert_allclose(x.numpy(), expected, rtol=1e-5)


def test_small_batches_run_on_the_calling_thread():
    mode = tidal.vm.get_mode()
    tidal.vm.set_mode("async")
    try:
        x = tidal.ones(8)
        x.numpy()
        tidal.vm.reset_stats()
        for _ in range(200):
            x = x * 1.5 - 0.25
        x.numpy()
        s = tidal.vm.stats()
        assert s["inline_batches"] > 0 and s["worker_batches"] == 0
    finally:
        tidal.vm.set_mode(mode)


@pytest.mark.parametrize("inline_bytes", [1 << 20, 0])
def test_pushes_from_many_threads_lose_nothing(inline_bytes):
    tidal.vm.set_execution(inline_bytes=inline_bytes)
    one = tidal.ones(64)
    results, errors = {}, []

    def work(k):
        try:
            acc = tidal.zeros(())
            for _ in range(300):
                acc = acc + one.sum() / 64
            results[k] = acc.item()
        except Exception as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)
    try:
        threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        tidal.vm.set_execution(inline_bytes=1 << 20)
    assert not errors
    assert results == {k: 300.0 for k in range(4)}


def test_an_error_nobody_synced_on_fails_the_process_at_exit(tmp_path):
    script = tmp_path / "unsynced.py"
    script.write_text(textwrap.dedent("""
        import tidal
        from tidal.ops.dispatch.kernel_launch import launch, register_kernel
        tidal.vm.set_mode("async")  # sync mode raises at the call instead

        @register_kernel("exploding_op", "cpu")
        def _kernel(ins, outs, attrs):
            raise ValueError("index 7 is out of bounds for dimension 0 with size 3")

        x = tidal.ones(3)
        y = launch("exploding_op", (x,), [((3,), x.dtype)])[0]
        print("script reached its end")
    """))
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert "script reached its end" in proc.stdout
    assert proc.returncode != 0
    assert "exploding_op" in proc.stderr and "out of bounds" in proc.stderr


def test_work_queued_at_exit_still_runs(tmp_path):
    out = tmp_path / "out.npy"
    script = tmp_path / "queued.py"
    script.write_text(textwrap.dedent(f"""
        import numpy as np, tidal
        from tidal.ops.dispatch.kernel_launch import launch, register_kernel

        @register_kernel("save_at_run", "cpu")
        def _kernel(ins, outs, attrs):
            np.save({str(out)!r}, ins[0])
            outs[0][...] = ins[0]

        x = tidal.ones(3) * 4
        y = launch("save_at_run", (x,), [((3,), x.dtype)])[0]
    """))
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_array_equal(np.load(out), [4.0, 4.0, 4.0])

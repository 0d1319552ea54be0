"""The virtual machine: modes, fusion, dead temporaries, allocator, errors, sync points."""
import ast
import gc
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import tidal
from tidal.ops.dispatch.kernel_launch import launch
from tidal.ops.dispatch.kernel_launch import register_kernel
from tidal.vm import machine

ROOT = pathlib.Path(tidal.__file__).parent


def chain(x):
    return (x * 2 + 1).clamp_min(0) * x + 0.5


def test_four_op_chain_is_one_kernel_and_one_allocation(async_mode, fusion_settings):
    x = tidal.tensor(np.linspace(-2, 2, 1000, dtype=np.float32))
    x.numpy()
    tidal.vm.reset_stats()
    y = chain(x)
    y.numpy()
    s = tidal.vm.stats()
    assert s["instructions"] == 5
    assert s["kernels"] == 1
    assert s["fused_away"] == 4
    assert s["allocations_avoided"] == 4
    assert s["allocations"] == 1
    xn = x.numpy()
    np.testing.assert_array_equal(y.numpy(), np.maximum(xn * 2 + 1, 0) * xn + np.float32(0.5))


def test_live_intermediates_are_written_out(async_mode):
    x = tidal.tensor([1.0, -2.0, 3.0])
    tidal.vm.reset_stats()
    a = x * 2
    b = a + 1
    c = b * x
    np.testing.assert_array_equal(c.numpy(), [3.0, 6.0, 21.0])
    np.testing.assert_array_equal(a.numpy(), [2.0, -4.0, 6.0])
    np.testing.assert_array_equal(b.numpy(), [3.0, -3.0, 7.0])
    assert tidal.vm.stats()["kernels"] == 1
    assert tidal.vm.stats()["allocations_avoided"] == 0


def test_fusion_off_runs_every_op(async_mode, fusion_settings):
    tidal.vm.set_fusion(enabled=False)
    x = tidal.tensor(np.arange(10, dtype=np.float32))
    x.numpy()
    tidal.vm.reset_stats()
    y = chain(x)
    y.numpy()
    assert tidal.vm.stats()["kernels"] == 5
    assert tidal.vm.stats()["fused_away"] == 0


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
def test_compiled_numpy_and_unfused_agree(async_mode, fusion_settings, dtype):
    rng = np.random.default_rng(0)
    xn = (rng.standard_normal((7, 5)) * 10).astype(dtype)
    yn = (rng.standard_normal((5,)) * 10).astype(dtype)
    results = []
    for enabled, compile_after in ((False, 2), (True, 1000), (True, 1)):
        tidal.vm.set_fusion(enabled=enabled, compile_after=compile_after, background_compile=False)
        x, y = tidal.tensor(xn), tidal.tensor(yn)
        z = tidal.minimum(x * 3 - y, x + 7) * y - x
        results.append(z.numpy().copy())
    np.testing.assert_array_equal(results[0], results[1])
    np.testing.assert_array_equal(results[0], results[2])
    ref = np.minimum(xn * 3 - yn, xn + 7) * yn - xn
    np.testing.assert_array_equal(results[0], ref)


def test_noncontiguous_and_broadcast_in_compiled_group(async_mode, fusion_settings):
    tidal.vm.set_fusion(compile_after=1, background_compile=False)
    base = np.arange(24, dtype=np.float64).reshape(4, 6)
    x = tidal.tensor(base)
    xt = x.transpose(0, 1) if hasattr(x, "transpose") else None
    if xt is None:
        pytest.skip("views not available")
    row = tidal.tensor(np.arange(4, dtype=np.float64))
    z = (xt * 2 + row) - 1
    np.testing.assert_array_equal(z.numpy(), (base.T * 2 + np.arange(4)) - 1)


def test_inplace_with_partly_overlapping_input_raises():
    x = tidal.tensor(np.arange(9, dtype=np.float32).reshape(3, 3))
    with pytest.raises(RuntimeError, match="some elements of the input tensor and the written-to tensor"):
        x.t().add_(x)
    y = tidal.tensor(np.arange(6, dtype=np.float32))
    y[:3].add_(y[3:])  # disjoint halves of one blob: allowed
    np.testing.assert_array_equal(y.numpy(), [3, 5, 7, 3, 4, 5])


def test_reads_after_write_through_another_view_see_the_write(async_mode, fusion_settings):
    tidal.vm.set_fusion(compile_after=1, background_compile=False)
    base = np.arange(9, dtype=np.float32).reshape(3, 3)
    x = tidal.tensor(base) * 1
    x.t().mul_(2)
    y = x + 1  # must not be fused elementwise with the write through the transposed view
    z = x.t() + 0
    np.testing.assert_array_equal(y.numpy(), base * 2 + 1)
    np.testing.assert_array_equal(z.numpy(), (base * 2).T)


def test_dead_result_is_never_computed(async_mode):
    x = tidal.tensor([1.0, 2.0])
    x.numpy()
    tidal.vm.reset_stats()
    x * 2  # the result is dropped at once
    y = x + 1
    y.numpy()
    s = tidal.vm.stats()
    assert s["kernels"] == 1
    assert s["allocations"] == 1


def test_sync_and_async_give_identical_results():
    rng = np.random.default_rng(1)
    xn = rng.standard_normal((33, 17)).astype(np.float32)
    saved = tidal.vm.get_mode()
    out = {}
    try:
        for mode in ("sync", "async"):
            tidal.vm.set_mode(mode)
            x = tidal.tensor(xn)
            out[mode] = (tidal.exp(x) * x - tidal.tanh(x) / (x * x + 1)).numpy().copy()
    finally:
        tidal.vm.set_mode(saved)
    np.testing.assert_array_equal(out["sync"], out["async"])


def test_set_mode_rejects_unknown():
    with pytest.raises(ValueError, match="set_mode: mode must be 'sync' or 'async'"):
        tidal.vm.set_mode("fast")


@register_kernel("test_failing_op", "cpu")
def _failing_kernel(ins, outs, attrs):
    raise IndexError("index 7 is out of bounds for dimension 0 with size 3")


@register_kernel("test_copy_op", "cpu")
def _copy_kernel(ins, outs, attrs):
    outs[0][...] = ins[0]


def test_kernel_error_is_raised_at_next_sync_and_vm_recovers():
    a = tidal.tensor([1.0, 2.0, 3.0])
    b = a * 10
    b.numpy()
    with pytest.raises(IndexError, match="test_failing_op: index 7 is out of bounds"):
        (bad,) = launch("test_failing_op", (a,), [((3,), a.dtype)])  # sync mode raises here
        tidal.sync()  # async mode raises at the next sync point
    if tidal.vm.get_mode() == "sync":
        return
    # earlier results are intact and new ops work
    np.testing.assert_array_equal(b.numpy(), [10.0, 20.0, 30.0])
    c = b + a
    np.testing.assert_array_equal(c.numpy(), [11.0, 22.0, 33.0])
    # reading the failed op's output reports its error again
    with pytest.raises(IndexError):
        bad.numpy()


def test_consumer_of_failed_output_fails_too():
    a = tidal.tensor([1.0, 2.0, 3.0])
    with pytest.raises(IndexError, match="test_failing_op"):
        (bad,) = launch("test_failing_op", (a,), [((3,), a.dtype)])
        (copied,) = launch("test_copy_op", (bad,), [((3,), a.dtype)])
        copied.numpy()
    np.testing.assert_array_equal((a + 1).numpy(), [2.0, 3.0, 4.0])


def test_memory_stays_flat_in_a_long_async_loop(async_mode):
    x = tidal.tensor(np.ones(20000, np.float32))  # allocator-counted blobs (small ones are NumPy's)
    y = tidal.tensor(np.ones(20000, np.float32))
    tidal.sync()
    gc.collect()
    used = []
    for i in range(3000):
        y = y * 0.5 + x
        if i % 500 == 0:
            y.numpy()
            used.append(tidal.vm.memory_stats()["bytes_in_use"])
    tidal.sync()
    gc.collect()
    used.append(tidal.vm.memory_stats()["bytes_in_use"])
    assert 0 < max(used) <= 3 * 81920 and used[-1] <= used[1]  # a few live results, never growing
    np.testing.assert_allclose(y.numpy(), 2.0, rtol=1e-6)


def test_numpy_view_keeps_memory_after_tensor_dies():
    a = tidal.tensor(np.full(1000, 7.0, np.float32)) + 0
    arr = a.numpy()
    del a
    gc.collect()
    b = tidal.tensor(np.zeros(1000, np.float32)) + 0
    b.numpy()
    np.testing.assert_array_equal(arr, 7.0)


def test_allocator_reuses_cached_blocks():
    x = tidal.tensor(np.ones(1 << 15, np.float32))  # past the CPU's small blobs (NumPy's memory)
    (x + 1).numpy()
    tidal.sync()
    tidal.vm.reset_stats()
    for _ in range(5):
        (x + 1).numpy()
    s = tidal.vm.memory_stats()
    assert s["allocations"] == 5
    assert s["cache_hits"] == 5


def test_size_classes_bound_waste():
    from tidal.vm.allocator import size_class
    for n in (1, 511, 512, 513, 1000, 4097, 10**6, 10**7 + 3):
        c = size_class(n)
        assert c >= n
        assert c <= max(512, n * 1.25 + 1)


def test_sync_points():
    x = tidal.tensor([3.0]) * 2
    assert x.item() == 6.0
    assert bool(x > 5)
    assert "6." in repr(x)
    assert x.tolist() == [6.0]
    tidal.sync()


def test_vm_knows_no_op():
    forbidden = ("ops", "tensor", "autograd", "nn", "optim", "compat")
    for path in (ROOT / "vm").glob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level >= 2:
                assert (node.module or "").split(".")[0] not in forbidden, f"{path.name} imports {node.module}"
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                parts = node.module.split(".")
                assert not (parts[0] == "tidal" and len(parts) > 1 and parts[1] in forbidden), path.name


def test_import_is_light():
    # import time itself is a benchmark (perf/), never a timed assertion
    code = "import sys, tidal; print([m for m in ('numba', 'zmq', 'cupy', 'torch') if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_mode_env_var_validated():
    code = "import tidal"
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={"TIDAL_VM_MODE": "bogus", "PATH": ""})
    assert res.returncode != 0
    assert "TIDAL_VM_MODE must be 'sync' or 'async'" in res.stderr


def test_machine_stats_reset():
    (tidal.tensor([1.0]) + 1).numpy()
    tidal.vm.reset_stats()
    s = tidal.vm.stats()
    assert s["instructions"] == 0 and s["kernels"] == 0
    assert machine.get_mode() in ("sync", "async")


def test_background_compile_switches_kernels_without_changing_results(async_mode, fusion_settings):
    import time
    tidal.vm.set_fusion(compile_after=1, background_compile=True, compile_heat=0)
    xn = np.linspace(-3, 3, 301).astype(np.float32)
    x = tidal.tensor(xn)
    expected = (np.maximum(xn * 3 + 2, 0) - xn) * np.float32(0.25)
    codegen = tidal.vm.codegen

    def kernels():  # ready keys of kernels (not of the warm-up or of special-function ufuncs)
        return len([k for k in codegen.compiler.ready if isinstance(k, tuple) and isinstance(k[0], codegen.Program)])

    deadline = time.monotonic() + 60
    compiled = kernels()
    while True:
        y = (((x * 3 + 2).clamp_min(0) - x) * 0.25).numpy()
        np.testing.assert_array_equal(y, expected)
        if kernels() > compiled or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert kernels() > compiled
    np.testing.assert_array_equal((((x * 3 + 2).clamp_min(0) - x) * 0.25).numpy(), expected)


@pytest.mark.parametrize("seconds_per_run, runs_before", [(0.0, 3), (1.0, 1)], ids=["short-runs", "long-runs"])
def test_background_compile_starts_once_a_group_is_hot(seconds_per_run, runs_before, async_mode, fusion_settings,
                                                        monkeypatch):
    # heat = NumPy seconds spent on a call key, each run counted as at least heat_floor: short runs
    # compile after compile_heat / heat_floor runs, long ones after compile_heat seconds
    import itertools
    codegen = tidal.vm.codegen
    clock = itertools.count(0.0, seconds_per_run)
    monkeypatch.setattr(codegen, "_clock", lambda: next(clock))
    monkeypatch.setattr(codegen, "_heat", {})  # (the other case heated the same call key)
    requested = []
    monkeypatch.setattr(codegen.compiler, "request", lambda key, *args, **kwargs: requested.append(key))
    tidal.vm.set_fusion(compile_after=1, background_compile=True, compile_heat=2.5 * codegen.heat_floor)
    xn = np.linspace(-1, 1, 7).astype(np.float32)
    x = tidal.tensor(xn)
    first_request = None
    for run in range(6):
        y = ((x * 5.25 - 1.5).abs() * 0.75).numpy()
        np.testing.assert_allclose(y, np.abs(xn * np.float32(5.25) - np.float32(1.5)) * np.float32(0.75), rtol=1e-6)
        if requested and first_request is None:
            first_request = run
    assert first_request == runs_before
    assert all(k == requested[0] for k in requested)  # one call key: the program's


def _stored_program_runs(monkeypatch, tmp_path, programs, numba_imported: bool, heat_floors: int = 100) -> list:
    """Compile `programs` (functions of no argument) into an empty disk cache in the foreground, then forget
    the loaded kernels as a fresh process would, and run them in turns with background compiling: the run
    (count of turns) at which each call key was requested, and whether it went to the compile process."""
    import itertools
    codegen = tidal.vm.codegen
    monkeypatch.setenv("TIDAL_CACHE_DIR", str(tmp_path))
    tidal.vm.set_fusion(compile_after=1, background_compile=False)
    for _ in range(2):
        for run in programs:
            run()
    assert list((tmp_path / "kernels" / "__pycache__").glob("*.nbi"))  # what the next process finds
    for name in ("_ready_calls", "_heat", "_stored_keys", "_cache_listing"):
        monkeypatch.setattr(codegen, name, {})
    monkeypatch.setattr(codegen, "_clock", lambda c=itertools.count(0.0, 0.0): next(c))  # each run: heat_floor
    monkeypatch.setattr(codegen, "_numba_imported", lambda: numba_imported)
    requested = []
    monkeypatch.setattr(codegen.compiler, "request", lambda key, load, remote, first=False:
                        requested.append((len(runs), key, remote)))
    floor = codegen.heat_floor
    tidal.vm.set_fusion(compile_after=1, background_compile=True, compile_heat=heat_floors * floor)
    monkeypatch.setattr(codegen, "load_heat", 2.5 * floor)
    monkeypatch.setattr(codegen, "numba_heat", heat_floors * floor)
    runs: list = []
    for turn in range(8):
        for run in programs:
            run()
        runs.append(turn)
    return requested


def test_a_kernel_in_the_disk_cache_is_loaded_after_little_heat(tmp_path, async_mode, fusion_settings, monkeypatch):
    # a stored kernel costs a load (milliseconds), not a compile: bought at load_heat (3 runs at the floor),
    # not compile_heat (100 runs), and loaded by this process's compiler thread (no compile process)
    xn = np.linspace(-1, 1, 9).astype(np.float32)
    x = tidal.tensor(xn)
    expected = np.abs(xn * np.float32(4.75) - np.float32(0.5)) * np.float32(1.25)

    def program():  # (a program no other test builds: its kernel is not loaded in this process yet)
        np.testing.assert_allclose(((x * 4.75 - 0.5).abs().arctan().neg() * 1.25).numpy(), -np.arctan(expected / 1.25) * 1.25,
                                   rtol=1e-6)
    requested = _stored_program_runs(monkeypatch, tmp_path, [program], numba_imported=True)
    assert requested[0][0] == 3  # (the mock keeps no pending set: each later run asks again)
    assert all(key == requested[0][1] and remote is None for _, key, remote in requested)


def test_stored_kernels_share_the_price_of_numbas_import(tmp_path, async_mode, fusion_settings, monkeypatch):
    # before numba is imported, a stored kernel also waits for numba's import to pay off: the NumPy time of
    # every stored key heats one shared key up to numba_heat (12 floors here). Alone, each program would
    # wait 12 turns; the two together pay it in 6, then both load
    xn = np.linspace(-1, 1, 9).astype(np.float32)
    x = tidal.tensor(xn)
    programs = [lambda: ((x * 1.5 - 0.25).abs().arcsinh() * 0.5).numpy(),
                lambda: ((x * 2.5 + 0.25).abs().arcsinh().neg() - 0.5).numpy()]
    requested = _stored_program_runs(monkeypatch, tmp_path, programs, numba_imported=False, heat_floors=12)
    first = {}
    for turn, key, remote in requested:
        first.setdefault(key, turn)
        assert remote is None
    assert sorted(first.values()) == [6, 6]


@register_kernel("test_slow_copy", "cpu")
def _slow_copy_kernel(ins, outs, attrs):
    import time
    time.sleep(0.05)
    outs[0][...] = ins[0] + 1


def test_cross_stream_reader_waits_for_writer(async_mode):
    from tidal.vm import Instruction
    a = tidal.tensor(np.zeros(1000, np.float32)) + 0
    a.numpy()
    b = tidal.zeros(1000)
    b.numpy()
    # a slow write on the compute stream, then a read of it on another stream
    a._vm.push(Instruction("test_slow_copy", _slow_copy_kernel, (a._v,), (b._v,)))
    c = tidal.zeros(1000)
    c.numpy()
    a._vm.push(Instruction("test_copy_op", _copy_kernel, (b._v,), (c._v,), stream="side"))
    tidal.sync()
    np.testing.assert_array_equal(c.numpy(), 1.0)


def test_a_burst_of_independent_ops_runs_each_alone_without_temporaries(async_mode, fusion_settings):
    # more independent results than a compiled group may store: one NumPy program would compute
    # each as a temporary and copy it out; alone, each ufunc writes its result in place
    x = tidal.tensor(np.linspace(-2, 2, 1000, dtype=np.float32))
    x.numpy()
    n = 9
    for _ in range(3):  # the window's first sight, then its replays
        tidal.vm.reset_stats()
        keep = [x + float(k) for k in range(n)]
        got = [t.numpy() for t in keep]
        s = tidal.vm.stats()
        assert s["kernels"] == n and s["fused_away"] == 0 and s["allocations"] == n
        for k, g in enumerate(got):
            np.testing.assert_array_equal(g, x.numpy() + np.float32(k))

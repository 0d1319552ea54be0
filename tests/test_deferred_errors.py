"""Deferred kernel errors: an index checked by the kernel (its values computed on the VM) fails at the next
sync point, at interpreter exit or on `tidal.sync()`, never silently; the error has torch's type and
message, names the op and the user's line that issued it, and its traceback is about as short as torch's.
Compared with torch 2.13 raising the same error at the call."""
from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import traceback

import numpy as np
import pytest

import tidal

torch = pytest.importorskip("torch")


@pytest.fixture(autouse=True)
def async_mode():
    """Deferral is what async mode does; sync mode computes the index first and checks it at the call."""
    mode = tidal.vm.get_mode()
    tidal.vm.set_mode("async")
    yield
    tidal.vm.set_mode(mode)


def _on_vm(lib, values, dtype=None):
    """An index tensor whose values come from an instruction still queued on the VM (tidal)."""
    t = lib.tensor(values) if dtype is None else lib.tensor(values, dtype=dtype)
    return t * 1


# op name the error names, and the call; each call on one line (the line a deferred error must name)
CASES = {
    "gather": ("gather", lambda L: L.zeros(3, 4).gather(1, _on_vm(L, [[0, 4]]))),
    "gather_negative": ("gather", lambda L: L.gather(L.zeros(3, 4), 0, _on_vm(L, [[-1, 0, 0, 0]]))),
    "index_select": ("index_select", lambda L: L.zeros(3, 4).index_select(0, _on_vm(L, [3]))),
    "embedding": ("embedding", lambda L: L.nn.functional.embedding(_on_vm(L, [[1, 10]]), L.zeros(10, 3))),
    "getitem": ("getitem", lambda L: L.zeros(3, 4)[_on_vm(L, [0, 5])]),
    "setitem": ("index_put", lambda L: L.zeros(3, 4).__setitem__(_on_vm(L, [0, 5]), 1.0)),
    "index_put_": ("index_put", lambda L: L.zeros(3, 4).index_put_((_on_vm(L, [3]),), L.ones(1))),
    "scatter_": ("scatter", lambda L: L.zeros(3, 4).scatter_(0, _on_vm(L, [[5]]), 1.0)),
    "scatter_add": ("scatter", lambda L: L.zeros(3, 4).scatter_add(1, _on_vm(L, [[7]]), L.ones(1, 1))),
    "index_add_": ("index_add", lambda L: L.zeros(3, 4).index_add_(0, _on_vm(L, [3]), L.ones(1, 4))),
    "take": ("take", lambda L: L.take(L.zeros(2, 4), _on_vm(L, [8]))),
}


def _torch_error(call):
    with pytest.raises(Exception) as info:
        call(torch)
    return type(info.value), str(info.value)


@pytest.mark.parametrize("case", list(CASES))
def test_sync_reraises_with_torchs_error_naming_the_op_and_line(case):
    op, call = CASES[case]
    kind, text = _torch_error(call)
    call(tidal)  # queued: the index is not known at the call
    with pytest.raises(kind) as info:
        tidal.sync()
    message = str(info.value)
    assert message.startswith(f"{op}: {text} (issued at ")
    assert f"at {__file__}:{call.__code__.co_firstlineno}, in <lambda>" in message
    if sys.version_info >= (3, 11):  # the issuing line's source, shown under the message (exception notes)
        assert f'"{case}": (' in info.value.__notes__[0]
    tidal.sync()  # reported once


def test_unsynced_error_fails_the_process_at_exit_naming_op_and_line(tmp_path):
    script = tmp_path / "unsynced_gather.py"
    script.write_text(textwrap.dedent("""
        import tidal
        tidal.vm.set_mode("async")

        def pick(x, idx):
            return x.gather(1, idx * 2)  # line 6: the index is computed on the VM, never synced

        out = pick(tidal.zeros(3, 4), tidal.tensor([[1, 2]]))
        print("script reached its end")
    """))
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert "script reached its end" in proc.stdout
    assert proc.returncode != 0
    assert "RuntimeError: gather: index 4 is out of bounds for dimension 1 with size 4" in proc.stderr
    assert f"at {script}:6, in pick" in proc.stderr
    if sys.version_info >= (3, 11):  # the issuing line's source, printed (exception notes)
        assert "    return x.gather(1, idx * 2)  # line 6" in proc.stderr


def test_unsynced_error_in_a_module_call_names_the_users_line(tmp_path):
    script = tmp_path / "unsynced_embedding.py"
    script.write_text(textwrap.dedent("""
        import tidal
        tidal.vm.set_mode("async")
        emb = tidal.nn.Embedding(4, 2)
        ids = tidal.tensor([1, 2]) * 2
        vectors = emb(ids)  # line 6
    """))
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0
    assert "IndexError: embedding: index out of range in self" in proc.stderr
    assert f"at {script}:6, in <module>" in proc.stderr


def _gather_then_read(lib):
    out = lib.zeros(3, 4).gather(1, _on_vm(lib, [[1, 2]]) * 2)
    return out.tolist()


def _gather_then_sync(lib):
    out = lib.zeros(3, 4).gather(1, _on_vm(lib, [[1, 2]]) * 2)
    (tidal.sync if lib is tidal else (lambda: None))()
    return out


@pytest.mark.parametrize("how, extra", [(_gather_then_read, 4), (_gather_then_sync, 2)])
def test_traceback_is_about_as_deep_as_torchs(how, extra):
    # `extra`: the sync point's own frames (tolist -> _host_array -> _sync -> wait_blob; sync -> synchronize)
    depth = {}
    for lib in (torch, tidal):
        with pytest.raises(RuntimeError) as info:
            how(lib)
        depth[lib] = len(traceback.extract_tb(info.value.__traceback__))
        printed = "".join(traceback.format_exception(info.value))
        assert printed.count("Traceback (most recent call last)") == 1  # no chain through the worker
    assert depth[torch] <= depth[tidal] <= depth[torch] + extra


def test_runtime_stays_usable_after_an_error():
    x = np.arange(12.0).reshape(3, 4)
    bad = tidal.tensor(x).gather(1, _on_vm(tidal, [[0, 9]]))
    kept = tidal.tensor(x) * 3  # issued after the failing op, unrelated to it
    with pytest.raises(RuntimeError, match="index 9 is out of bounds"):
        tidal.sync()
    good = tidal.tensor(x).gather(1, _on_vm(tidal, [[3, 0], [1, 1]]))
    want = torch.tensor(x).gather(1, torch.tensor([[3, 0], [1, 1]]))
    np.testing.assert_array_equal(good.numpy(), want.numpy())
    np.testing.assert_array_equal(kept.numpy(), x * 3)
    assert (tidal.tensor(x) @ tidal.tensor(x).T).sum().item() == float((x @ x.T).sum())
    tidal.sync()


def test_failures_after_the_reported_one_are_not_raised_again_at_later_lines():
    # torch raises at the failing call, so no later op of the program runs to fail: once a sync point reports a
    # failure, the failures this thread's later ops met (here a second bad gather on the same line, as one
    # grid_sample's several gathers did) are not raised at later, unrelated sync points
    x = tidal.arange(10.0)
    idx = _on_vm(tidal, [0, 1, 2]) * 100
    out = x[idx] + x[idx + 1]
    with pytest.raises(IndexError, match="index 100 is out of bounds"):
        tidal.sync()
    assert (x * 2).sum().item() == 90.0
    tidal.sync()
    with pytest.raises(IndexError, match="index 100 is out of bounds"):  # a read of the failed result still raises
        out.tolist()


def test_reading_a_failed_result_or_what_depends_on_it_names_the_failed_op():
    bad = tidal.zeros(3, 4).gather(1, _on_vm(tidal, [[4]]))
    line = sys._getframe().f_lineno - 1
    later = (bad + 1).sum()
    for t in (later, bad, later):  # every read of it, each time; the elementwise op is not blamed
        with pytest.raises(RuntimeError) as info:
            t.item() if t is later else t.tolist()
        assert str(info.value).startswith("gather: index 4 is out of bounds for dimension 1 with size 4")
        assert f"{__file__}:{line}" in str(info.value)
    acc = tidal.ones(())
    assert acc.item() == 1.0
    acc += later  # depends on the failed result: does not run; the target keeps the values it holds
    assert acc.item() == 1.0
    tidal.sync()  # reported already


def test_in_place_target_keeps_its_values_when_the_index_is_bad():
    x = tidal.ones(3, 4)
    x.index_fill_(1, _on_vm(tidal, [4]), 2.0)
    with pytest.raises(IndexError, match="index_fill: index 4 is out of bounds"):
        tidal.sync()
    assert x.sum().item() == 12.0


def test_another_threads_sync_does_not_raise_this_threads_error():
    issued, checked = threading.Event(), threading.Event()
    seen = {}

    def worker():
        out = tidal.zeros(3, 4).gather(1, _on_vm(tidal, [[0, 6]]))
        issued.set()
        checked.wait(30)
        try:
            out.tolist()
        except RuntimeError as exc:
            seen["worker"] = str(exc)

    t = threading.Thread(target=worker)
    t.start()
    try:
        assert issued.wait(30)
        assert tidal.ones(5).sum().item() == 5.0  # the main thread's own tensor: no foreign error
        tidal.sync()
    finally:
        checked.set()
        t.join()
    assert seen["worker"].startswith("gather: index 6 is out of bounds for dimension 1 with size 4")
    tidal.sync()


def test_an_ended_threads_unsynced_error_goes_to_the_next_sync():
    def worker():
        tidal.zeros(3, 4).gather(1, _on_vm(tidal, [[0, 7]]))

    t = threading.Thread(target=worker)
    t.start()
    t.join()
    with pytest.raises(RuntimeError, match=r"gather: index 7 is out of bounds .* in worker\)"):
        tidal.sync()


def test_sync_mode_raises_at_the_call():
    tidal.vm.set_mode("sync")
    kind, text = _torch_error(CASES["gather"][1])
    with pytest.raises(kind) as info:
        CASES["gather"][1](tidal)
    assert text in str(info.value)


def test_a_failure_of_unknown_origin_keeps_the_kernels_traceback_and_can_be_forgotten():
    from tidal.ops.dispatch.kernel_launch import launch
    from tidal.ops.dispatch.kernel_launch import register_kernel
    from tidal.vm import get_vm
    raised = []

    @register_kernel("test_deferred_failing_op", "cpu")
    def _kernel(ins, outs, attrs):
        raised.append(ValueError("bad values"))
        raise raised[-1]

    x = tidal.ones(2)
    launch("test_deferred_failing_op", (x,), [((2,), x.dtype)])
    with pytest.raises(ValueError, match="^test_deferred_failing_op: bad values$") as info:
        tidal.sync()
    assert info.value.__cause__ is raised[0]  # no issuing line recorded: the kernel's frames are the clue
    launch("test_deferred_failing_op", (x,), [((2,), x.dtype)])
    vm = get_vm(x.device)
    vm.flush()
    for stream in vm.streams.values():
        stream.wait(stream.pushed)
    assert vm.error is not None and vm.error[0].exc is raised[1]
    vm.forget_error(raised[1])  # what a collective's Work.wait does once it raised the error itself
    tidal.sync()


def test_the_issuing_line_is_captured_only_for_checks_the_kernel_does(monkeypatch):
    import tidal.ops.dispatch.kernel_launch as dispatch
    calls = []
    real = dispatch.issuing_site
    monkeypatch.setattr(dispatch, "issuing_site", lambda: calls.append(1) or real())
    x, known = tidal.zeros(3, 4), tidal.tensor([[0, 1]])
    tidal.sync()
    y = (x + 1) * 2  # elementwise: never
    (y @ x.T).sum(0)  # other ops: never
    x.gather(1, known)  # the index is known at the call and checked there
    x[known]
    assert calls == []
    x.gather(1, known * 1)  # the index is still being computed: the kernel checks it
    x[known * 1]
    assert len(calls) == 2
    tidal.sync()


def test_a_large_computed_index_is_checked_by_the_kernel_while_a_worker_runs():
    # NumPy gives up the GIL to check more than 500 values, and the busy worker would keep it: the check waits for
    # the kernel (the error at the next sync, naming the line); with the worker idle it is at the call, as torch's
    import importlib
    ids = np.arange(importlib.import_module("tidal.ops.indexing.scatter").GIL_KEPT_ELEMENTS + 1) % 7
    ids[-1] = 9
    ready = tidal.tensor(ids)
    weight = tidal.zeros(8, 2)
    tidal.sync()
    with pytest.raises(IndexError, match="index out of range in self"):
        tidal.nn.functional.embedding(ready, weight)  # the worker is idle: checked here
    big = tidal.ones(600, 600)
    for _ in range(8):  # queued products keep the worker busy while the next line issues
        big = big @ big * 1e-3
    big._vm.flush()
    assert big._vm.running()
    tidal.nn.functional.embedding(ready, weight)  # line checked by the kernel
    line = sys._getframe().f_lineno - 1
    with pytest.raises(IndexError) as info:
        tidal.sync()
    assert "embedding: index out of range in self" in str(info.value)
    assert f"at {__file__}:{line}" in str(info.value)

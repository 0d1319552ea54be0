"""The profiler: per-op host and kernel statistics, fusion counts, Chrome trace."""
import json

import numpy as np

import tidal


def test_profile_table_and_trace(tmp_path):
    saved = tidal.vm.get_mode()
    tidal.vm.set_mode("async")  # fusion happens in async mode only
    try:
        _profile_and_check(tmp_path)
    finally:
        tidal.vm.set_mode(saved)


def _profile_and_check(tmp_path):
    x = tidal.tensor(np.linspace(-1, 1, 1000, dtype=np.float32))
    zero = tidal.zeros(())
    zero.item()
    with tidal.profiler.profile() as prof:
        y = tidal.maximum(x * 2 + 1, zero) * x
        with tidal.profiler.record_function("my_region"):
            s = y.sum()
        s.item()
    stats = prof.key_averages()
    assert stats["maximum"]["calls"] == 1
    assert stats["mul"]["calls"] == 2 and stats["add"]["calls"] == 1
    assert stats["my_region"]["calls"] == 1
    fused = [name for name in stats if name.startswith("fused[")]
    assert fused, stats.keys()
    # add, maximum, the two muls and the trailing sum: one kernel (the sum joins unless reductions stay apart)
    joined = 4 if tidal.vm.get_fusion()["reductions"] else 3
    assert stats[fused[0]]["kernels"] == 1 and stats[fused[0]]["fused_away"] == joined
    assert stats[fused[0]]["bytes"] >= 4000
    assert all(v["host_us"] >= 0 for v in stats.values())
    table = prof.table()
    assert "kernel us" in table and "maximum" in table
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(path)
    events = json.loads(path.read_text())["traceEvents"]
    tracks = {e["tid"] for e in events}
    assert "host" in tracks and "stream:compute" in tracks
    # leaving the profiler restores the original methods
    assert tidal.Tensor.__add__.__name__ != "timed"
    assert tidal.maximum.__name__ != "timed"


def test_profile_counts_replayed_windows_and_where_batches_ran():
    mode, saved = tidal.vm.get_mode(), tidal.vm.get_fusion()
    tidal.vm.set_mode("async")
    tidal.vm.set_fusion(compile_after=1, background_compile=False)
    try:
        x = tidal.ones(64, 64)
        for _ in range(4):  # the window's template is recorded once its kernel is final
            ((x * 2 + 1).relu() * 3).sum(0).numpy()
        with tidal.profiler.profile() as prof:
            y = ((x * 2 + 1).relu() * 3).sum(0)
            np.testing.assert_array_equal(y.numpy(), np.full(64, 64 * 9, np.float32))
    finally:
        tidal.vm.set_fusion(**saved)
        tidal.vm.set_mode(mode)
    assert prof.vm_stats["replays"] == 1 and prof.vm_stats["kernels"] == 1
    assert prof.vm_stats["inline_batches"] == 1 and prof.vm_stats["worker_batches"] == 0
    assert "1 windows replayed" in prof.table()

"""Collective-order checking (TIDAL_COMM_CHECK=1) on real ranks: ranks that issue different
collectives at the same point get a clear error on every rank, naming both calls and their call
sites, instead of a deadlock; the group still works afterwards. The rank side is check_ranks.py."""
import re

import pytest

import check_ranks as K
from comm_ranks import RankPool


@pytest.fixture(scope="module")
def checked():
    pool = RankPool(2, env={"TIDAL_COMM_CHECK": "1"})
    yield pool
    pool.close()


def _both_fail(results: list) -> str:
    """The one message every rank raised (ranks report the same mismatch); the group works after it."""
    types = {r["type"] for r in results}
    messages = {r["message"] for r in results}
    assert types == {"CollectiveMismatchError"}, results
    assert len(messages) == 1, messages
    for r in results:
        assert r["after"] == [3.0, 3.0, 3.0]  # 1 + 2: the next collective matches and runs
    return messages.pop()


@pytest.mark.timeout(60)
def test_mismatched_op_names_both_calls_and_sites(checked):
    results = checked.run(K.mismatch, "op", timeout=30)
    message = _both_fail(results)
    assert re.fullmatch(rf"collective mismatch at call #\d+ in group \[0, 1\]: rank 0 called "
                        rf"all_reduce\(float32\[4, 4\], SUM\) at \S*tests/check_ranks\.py:{results[0]['line']} but "
                        rf"rank 1 called broadcast\(float32\[4\], src=0\) at \S*tests/check_ranks\.py:"
                        rf"{results[1]['line']}", message), message


@pytest.mark.timeout(60)
@pytest.mark.parametrize("kind, first, second", [
    ("shape", "all_reduce(float32[4], SUM)", "all_reduce(float32[5], SUM)"),
    ("dtype", "all_reduce(float32[3], SUM)", "all_reduce(float64[3], SUM)"),
    ("reduce_op", "all_reduce(float32[3], SUM)", "all_reduce(float32[3], MAX)"),
    ("root", "broadcast(float32[2], src=0)", "broadcast(float32[2], src=1)"),
    ("barrier", "barrier()", "all_gather(float32[2])"),
    ("async", "all_reduce(float32[2], SUM)", "reduce_scatter_tensor(float32[2] -> float32[1], SUM)"),
])
def test_mismatch_kinds(checked, kind, first, second):
    message = _both_fail(checked.run(K.mismatch, kind, timeout=30))
    assert f"rank 0 called {first} at " in message and f"but rank 1 called {second} at " in message


@pytest.mark.timeout(60)
def test_all_to_all_split_sizes_checked_pairwise(checked):
    message = _both_fail(checked.run(K.mismatch, "splits", timeout=30))
    assert re.search(r"all_to_all_single at \S*tests/check_ranks\.py:\d+: ", message), message
    assert "rank 0 sends 3 elements to rank 1 but rank 1 expects 2 from rank 0" in message


@pytest.mark.timeout(60)
def test_mismatch_in_a_subgroup(checked):
    results = checked.run(K.mismatch_in_subgroup, timeout=30)
    message = _both_fail(results)
    assert message.startswith("collective mismatch at call #2 in group [0, 1]: rank 0 called "
                              "all_reduce(float32[2], SUM) at ")
    assert "but rank 1 called reduce(float32[2], SUM, dst=1) at " in message


@pytest.mark.timeout(60)
def test_collective_against_a_control_call():
    pool = RankPool(2, env={"TIDAL_COMM_CHECK": "1"})  # its own: new_group on one rank only leaves a mark
    try:
        first, second = pool.run(K.mismatch_with_control_call, timeout=30)
    finally:
        pool.close()
    assert first["type"] == "CollectiveMismatchError"
    assert "rank 0 called all_reduce(float32[2], SUM) at " in first["message"]
    assert "another rank made a different control call" in first["message"]
    assert second["type"] in ("CommError", "CollectiveMismatchError")  # new_group's side: the control plane's error
    assert "disagree" in second["message"]


@pytest.mark.timeout(60)
def test_agreeing_sequence_passes(checked):
    failures = checked.run(K.agreeing_sequence, timeout=30)
    assert failures == [[], []]


@pytest.mark.timeout(60)
def test_check_mode_on_and_off(checked):
    assert checked.run(K.check_mode, timeout=30) == [{"enabled": True, "verified": ["all_reduce"]}] * 2
    plain = RankPool(2)
    try:
        assert plain.run(K.check_mode, timeout=30) == [{"enabled": False, "verified": []}] * 2
    finally:
        plain.close()

"""torch.distributed.algorithms.join on 2 CPU ranks, against torch (gloo, torchrun): a custom Joinable with uneven
iteration counts, its post hook, throw_on_early_termination and enable=False (scripts/join_counter.py); DDP under
model.join() and Join([ddp]) with uneven inputs, both divide_by_initial_world_size modes and no_sync steps
and Join([ddp, ZeroRedundancyOptimizer]) (scripts/ddp_join.py). Every rank's losses and final state are compared."""
import numpy as np
import pytest

from script_runs import against_torch

pytestmark = pytest.mark.timeout(300)


def test_custom_joinable_like_torch(tmp_path):
    expected, got = against_torch(tmp_path, "join_counter", torch_ranks=2)
    assert got.pop("framework") != "torch" and expected.pop("framework") == "torch"
    assert got == expected
    ranks = got["ranks"]
    assert ranks[0]["count"] == 6.0 and ranks[1]["count"] == 8.0 and ranks[0]["max_count"] == 8.0


def test_ddp_join_like_torch(tmp_path):
    expected, got = against_torch(tmp_path, "ddp_join", torch_ranks=2)
    for mine, theirs in zip(got["ranks"], expected["ranks"]):
        for run in ("initial", "by_running", "bare", "zero"):
            np.testing.assert_allclose(mine[run]["losses"], theirs[run]["losses"], rtol=1e-4, atol=1e-5)
            np.testing.assert_allclose(mine[run]["state"], theirs[run]["state"], rtol=1e-4, atol=1e-5)
    # the post hook: both ranks end with the last joiner's model
    assert got["ranks"][0]["initial"]["state"] == got["ranks"][1]["initial"]["state"]

"""torch.distributed.optim.ZeroRedundancyOptimizer on 2 CPU ranks with DDP, against torch (torchrun, gloo): the
parameter partition, losses and weights of Adam with sharded state, torch's error before consolidation, the
consolidated state_dict (global indices, state values, param groups), and load_state_dict giving every rank its
shard back (scripts/zero_optimizer.py). Join([ddp, zero]) is in test_distributed_join."""
import numpy as np
import pytest

from script_runs import against_torch

pytestmark = pytest.mark.timeout(300)


def test_zero_redundancy_optimizer_like_torch(tmp_path):
    expected, got = against_torch(tmp_path, "zero_optimizer", torch_ranks=2)
    for mine, theirs in zip(got["ranks"], expected["ranks"]):
        assert mine["local_params"] == theirs["local_params"]
        assert mine["unconsolidated"] == theirs["unconsolidated"]
        assert mine["groups"] == theirs["groups"]
        assert mine["reloaded"] == mine["state"] and theirs["reloaded"] == theirs["state"]  # (load, gather again)
        np.testing.assert_allclose(mine["losses"], theirs["losses"], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(mine["weights"], theirs["weights"], rtol=1e-5, atol=1e-5)
        assert mine["state"].keys() == theirs["state"].keys()
        for index, state in theirs["state"].items():
            assert mine["state"][index].keys() == state.keys()
            np.testing.assert_allclose([mine["state"][index][k] for k in state], list(state.values()),
                                       rtol=1e-4, atol=1e-5)

"""torch.distributed.nn.functional (differentiable collectives) on 2 tidal ranks against real torch's 2 ranks:
every rank's input gradient through all_reduce, all_gather (a contrastive loss over all ranks' rows),
reduce_scatter, broadcast and all_to_all (tests/scripts/dist_nn_functional.py)."""
import numpy as np
import pytest

import script_runs


@pytest.mark.timeout(2 * script_runs.TIMEOUT_S)
def test_differentiable_collectives_on_2_ranks_follow_torch(tmp_path):
    expected, got = script_runs.against_torch(tmp_path, "dist_nn_functional", torch_ranks=2)
    assert expected["framework"] == "torch" and got["framework"] != "torch"
    assert len(got["ranks"]) == len(expected["ranks"]) == 2
    for rank, (mine, want) in enumerate(zip(got["ranks"], expected["ranks"])):
        assert mine.keys() == want.keys()
        for key in want:
            np.testing.assert_allclose(mine[key], want[key], rtol=1e-5, atol=1e-6, err_msg=f"rank {rank} {key}")

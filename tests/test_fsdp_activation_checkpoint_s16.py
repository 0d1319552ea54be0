"""FSDP2 (fully_shard) with activation checkpointing on 2 ranks against torchrun on 2 ranks (gloo): blocks wrapped by
checkpoint_wrapper and then sharded (torchtitan's order) failed in tidal, the recomputation in backward meeting
the block's sharded DTensor parameters ("expected all tensors to be global tensors"); fully_shard-ed blocks called
through utils.checkpoint and reshard_after_forward=False too. Losses and final parameters equal torch's."""
import numpy as np
import pytest

import script_runs



@pytest.mark.timeout(2 * script_runs.TIMEOUT_S)
def test_fully_shard_with_activation_checkpointing_as_torch(tmp_path):
    expected, got = script_runs.against_torch(tmp_path, "fsdp_activation_checkpoint", torch_ranks=2)
    assert expected.pop("framework") == "torch" and got.pop("framework") != "torch"
    assert len(got["losses"]) == 9 and len(got["sums"]) == len(expected["sums"]) == 3 * 12
    np.testing.assert_allclose(got["losses"], expected["losses"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got["sums"], expected["sums"], rtol=1e-5, atol=1e-5)

"""Acceptance: tests/scripts/fsdp_tp_train.py, a torchrun-style script with init_device_mesh, fully_shard,
parallelize_module and a dcp save/load resume, runs unmodified on 2 ranks under
`python -m tidal.comm.launch -m tidal.compat` and prints the losses real torch prints for it in one process
(a 1-rank mesh: the full batch, whose loss and gradient the 2 ranks' averaged halves equal)."""
import os

import numpy as np
import pytest

import script_runs


@pytest.mark.timeout(2 * script_runs.TIMEOUT_S)
def test_fsdp_tp_script_on_2_ranks_follows_torch(tmp_path):
    expected, got = script_runs.against_torch(tmp_path, "fsdp_tp_train")
    assert expected.pop("framework") == "torch" and got.pop("framework") != "torch"   # the runner really swapped
    assert got["world_size"] == 2 and expected["world_size"] == 1
    assert got["placements"] == expected["placements"] and got["all_dtensors"] and expected["all_dtensors"]
    # 5 FSDP steps, 3 more after the checkpoint resume, 4 tensor-parallel steps
    assert len(got["losses"]) == 12
    np.testing.assert_allclose(got["losses"], expected["losses"], rtol=1e-5, atol=1e-6)
    # each rank wrote its own shards
    assert sorted(os.listdir(tmp_path / "tidal" / "fsdp_ckpt")) == [".metadata", "__0_0.distcp", "__1_0.distcp"]

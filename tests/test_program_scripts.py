"""Acceptance of the program-level torch surface (issue 17): unmodified scripts in tests/scripts/ run under
`python -m tidal.compat` and print what real torch prints for them. per_sample_checkpoint.py uses
torch.func per-sample gradients (vmap(grad(functional_call))) and utils.checkpoint/checkpoint_sequential;
spawn_ddp.py starts DDP ranks with torch.multiprocessing.spawn and gloo (fully_shard's script is
test_fsdp_script.py's)."""
import numpy as np
import pytest

from script_runs import TIMEOUT_S, run_both


@pytest.mark.timeout(2 * TIMEOUT_S)
def test_per_sample_gradients_and_checkpointing_script(tmp_path):
    theirs, ours = run_both("per_sample_checkpoint", tmp_path)
    np.testing.assert_allclose(ours["losses"], theirs["losses"], rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(ours["first_norms"], theirs["first_norms"], rtol=1e-5)
    assert len(set(np.round(ours["first_norms"], 6))) > 1    # per-sample norms differ: not a batch gradient


@pytest.mark.timeout(2 * TIMEOUT_S)
def test_mp_spawn_ddp_script(tmp_path):
    theirs, ours = run_both("spawn_ddp", tmp_path)
    np.testing.assert_allclose(ours["losses"], theirs["losses"], rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(ours["weight_sums"], theirs["weight_sums"], rtol=1e-5, atol=1e-6)
    assert ours["losses"][-1] < 0.5 * ours["losses"][0]

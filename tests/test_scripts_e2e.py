"""Acceptance: classic PyTorch programs in tests/scripts/ run unmodified under `python -m tidal.compat` and follow
real torch's per-step losses.

Each script starts from NumPy-made weights and data, so both runs see identical inputs; it prints its losses (and
a few extras) as JSON on the last line.
"""
import numpy as np
import pytest

from script_runs import TIMEOUT_S, against_torch, check_losses, run_both


@pytest.mark.parametrize("name", ["mlp_regression", "mnist_cnn", "vae", "lstm_language_model"])
def test_script_follows_torch(name, tmp_path):
    theirs, ours = run_both(name, tmp_path)
    check_losses(theirs, ours)
    for key in set(theirs) - {"losses"}:  # final metrics: mse, accuracy, decoded sample mean
        np.testing.assert_allclose(ours[key], theirs[key], rtol=1e-3, atol=1e-4, err_msg=key)


def test_char_gpt_checkpoint_resume_and_sampling(tmp_path):
    theirs, ours = run_both("char_gpt", tmp_path)
    # steps 10.. run on fresh objects restored with torch.load: they only match if the checkpoint round-trips
    check_losses(theirs, ours)
    assert ours["resumed_at"] == theirs["resumed_at"] == 10
    assert ours["tied"] and theirs["tied"]
    assert ours["group_sizes"] == theirs["group_sizes"]
    # multinomial draws come from each framework's own RNG: compare shape and alphabet, not the text
    assert ours["vocab"] == theirs["vocab"]
    assert len(ours["sample"]) == len(theirs["sample"]) == 25
    assert set(ours["sample"]) <= set(ours["vocab"])


@pytest.mark.timeout(2 * TIMEOUT_S)
def test_ddp_script_under_the_launcher_follows_torchrun(tmp_path):
    """A torchrun-style DDP script (init_process_group("gloo"), DistributedSampler, DistributedDataParallel,
    SGD) runs unmodified on two ranks under `tidal.comm.launch -m tidal.compat` and prints torchrun's numbers."""
    expected, got = against_torch(tmp_path, "ddp_train", torch_ranks=2)
    assert expected.pop("framework") == "torch" and got.pop("framework") != "torch"  # the runner really swapped
    assert got["world_size"] == expected["world_size"] == 2
    assert got["ranks_agree"] and expected["ranks_agree"]  # DDP broadcast rank 0's weights and kept them equal
    losses = np.array(got["losses"])
    np.testing.assert_allclose(losses, expected["losses"], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got["checksum"], expected["checksum"], rtol=1e-4, atol=1e-5)
    assert losses[-3:].mean() < 0.5 * losses[:3].mean(), f"loss did not decrease: {losses}"

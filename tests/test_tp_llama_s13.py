"""Tensor parallelism laid out as pytorch/examples' distributed/tensor_parallelism/fsdp_tp_example.py lays out its
llama2 blocks (vocab-parallel embedding, sequence-parallel LayerNorms, attention on DTensors), and group_norm of a
DTensor: tests/scripts/tp_embedding_attention.py on 2 ranks under `python -m tidal.comm.launch -m tidal.compat`
must print the losses and values real torch prints for the same model unparallelized (torch's CPU attention kernel
has no DTensor sharding rule)."""
import numpy as np
import pytest

import script_runs


@pytest.mark.timeout(2 * script_runs.TIMEOUT_S)
def test_tensor_parallel_llama_block_on_2_ranks_follows_torch(tmp_path):
    expected, got = script_runs.against_torch(tmp_path, "tp_embedding_attention", torch_env={"PLAIN": "1"})
    assert expected["framework"] == "torch" and got["framework"] != "torch"
    assert (got["world_size"], got["parallel"], expected["world_size"], expected["parallel"]) == (2, True, 1, False)
    # every step's loss: the gradients reached the embedding, the norms and the attention (they did not)
    np.testing.assert_allclose(got["losses"], expected["losses"], rtol=1e-5, atol=1e-6)
    for mine, theirs_ in zip(got["group_norm"], expected["group_norm"]):  # group_norm's values and input gradient
        np.testing.assert_allclose(mine, theirs_, rtol=1e-5, atol=1e-6)


@pytest.mark.timeout(2 * script_runs.TIMEOUT_S)
def test_batch_norm_of_dtensors_on_2_ranks_follows_torch(tmp_path):
    """Values, gradients (they were lost: requires_grad False), running statistics and eval mode, against real
    torch's own 2 ranks (torch.distributed.run, gloo)."""
    expected, got = script_runs.against_torch(tmp_path, "dtensor_batch_norm", torch_ranks=2)
    assert expected["framework"] == "torch" and got["framework"] != "torch"
    assert got["results"].keys() == expected["results"].keys()
    for placement, want in expected["results"].items():
        mine = got["results"][placement]
        assert mine[-1] is want[-1] is True, placement  # the result takes part in autograd
        for a, b in zip(mine[:-1], want[:-1]):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg=placement)

"""Tensor parallelism laid out as pytorch/examples' distributed/tensor_parallelism/fsdp_tp_example.py lays out its
llama2 blocks (vocab-parallel embedding, sequence-parallel LayerNorms, attention on DTensors), and group_norm of a
DTensor: tests/scripts/tp_embedding_attention.py on 2 ranks under `python -m tidal.comm.launch -m tidal.compat`
must print the losses and values real torch prints for the same model unparallelized (torch's CPU attention kernel
has no DTensor sharding rule)."""
import json
import os
import socket
import subprocess
import sys

import numpy as np
import pytest

import torch_reference

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scripts", "tp_embedding_attention.py")
TIMEOUT_S = 120


def _start(args: list, cwd, env: dict | None = None) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, *args], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, **(env or {})})


def _finish(proc: subprocess.Popen, label: str) -> dict:
    try:
        out, err = proc.communicate(timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        pytest.fail(f"{label} ran past {TIMEOUT_S} s")
    if proc.returncode != 0:
        pytest.fail(f"{label} failed ({proc.returncode}):\n{out[-2000:]}\n{err[-4000:]}")
    return json.loads(out.strip().splitlines()[-1])


@pytest.mark.timeout(2 * TIMEOUT_S)
def test_tensor_parallel_llama_block_on_2_ranks_follows_torch(tmp_path):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    (tmp_path / "torch").mkdir()
    (tmp_path / "tidal").mkdir()
    run_key = torch_reference.key("tp_embedding_attention", "plain")
    expected = torch_reference.lookup(run_key)
    theirs = None if expected is not None else _start(
        [SCRIPT], tmp_path / "torch", {"RANK": "0", "LOCAL_RANK": "0", "WORLD_SIZE": "1", "PLAIN": "1",
                                       "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)})
    ours = _start(["-m", "tidal.comm.launch", "--nproc-per-node", "2", "--no-prefix", "-m", "tidal.compat", SCRIPT],
                  tmp_path / "tidal")
    if expected is None:
        expected = torch_reference.store(run_key, _finish(theirs, "torch"))
    expected, got = dict(expected), _finish(ours, "tidal.comm.launch")
    assert expected["framework"] == "torch" and got["framework"] != "torch"
    assert (got["world_size"], got["parallel"], expected["world_size"], expected["parallel"]) == (2, True, 1, False)
    # every step's loss: the gradients reached the embedding, the norms and the attention (they did not)
    np.testing.assert_allclose(got["losses"], expected["losses"], rtol=1e-5, atol=1e-6)
    for mine, theirs_ in zip(got["group_norm"], expected["group_norm"]):  # group_norm's values and input gradient
        np.testing.assert_allclose(mine, theirs_, rtol=1e-5, atol=1e-6)


BATCH_NORM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scripts", "dtensor_batch_norm.py")


@pytest.mark.timeout(2 * TIMEOUT_S)
def test_batch_norm_of_dtensors_on_2_ranks_follows_torch(tmp_path):
    """Values, gradients (they were lost: requires_grad False), running statistics and eval mode, against real
    torch's own 2 ranks (torch.distributed.run, gloo)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    (tmp_path / "torch").mkdir()
    (tmp_path / "tidal").mkdir()
    run_key = torch_reference.key("dtensor_batch_norm", "2 ranks")
    expected = torch_reference.lookup(run_key)
    theirs = None if expected is not None else _start(
        ["-m", "torch.distributed.run", "--nproc-per-node", "2", "--master-port", str(port), BATCH_NORM],
        tmp_path / "torch")
    ours = _start(["-m", "tidal.comm.launch", "--nproc-per-node", "2", "--no-prefix", "-m", "tidal.compat",
                   BATCH_NORM], tmp_path / "tidal")
    if expected is None:
        expected = torch_reference.store(run_key, _finish(theirs, "torch"))
    got = _finish(ours, "tidal.comm.launch")
    assert expected["framework"] == "torch" and got["framework"] != "torch"
    assert got["results"].keys() == expected["results"].keys()
    for placement, want in expected["results"].items():
        mine = got["results"][placement]
        assert mine[-1] is want[-1] is True, placement  # the result takes part in autograd
        for a, b in zip(mine[:-1], want[:-1]):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg=placement)

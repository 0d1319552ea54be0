"""Acceptance: tests/scripts/fsdp_tp_train.py, a torchrun-style script with init_device_mesh, fully_shard,
parallelize_module and a dcp save/load resume, runs unmodified on 2 ranks under
`python -m tidal.comm.launch -m tidal.compat` and prints the losses real torch prints for it in one process
(a 1-rank mesh: the full batch, whose loss and gradient the 2 ranks' averaged halves equal)."""
import json
import os
import socket
import subprocess
import sys

import numpy as np
import pytest

import torch_reference

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scripts", "fsdp_tp_train.py")
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
def test_fsdp_tp_script_on_2_ranks_follows_torch(tmp_path):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    (tmp_path / "torch").mkdir()
    (tmp_path / "tidal").mkdir()
    run_key = torch_reference.key("fsdp_tp_train", "1 rank")  # (torch's result, from the other VM mode's pass)
    expected = torch_reference.lookup(run_key)
    theirs = None if expected is not None else _start(
        [SCRIPT], tmp_path / "torch", {"RANK": "0", "LOCAL_RANK": "0", "WORLD_SIZE": "1",
                                       "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)})
    ours = _start(["-m", "tidal.comm.launch", "--nproc-per-node", "2", "--no-prefix", "-m", "tidal.compat", SCRIPT],
                  tmp_path / "tidal")
    if expected is None:
        expected = torch_reference.store(run_key, _finish(theirs, "torch"))
    expected, got = dict(expected), _finish(ours, "tidal.comm.launch")
    assert expected.pop("framework") == "torch" and got.pop("framework") != "torch"   # the runner really swapped
    assert got["world_size"] == 2 and expected["world_size"] == 1
    assert got["placements"] == expected["placements"] and got["all_dtensors"] and expected["all_dtensors"]
    # 5 FSDP steps, 3 more after the checkpoint resume, 4 tensor-parallel steps
    assert len(got["losses"]) == 12
    np.testing.assert_allclose(got["losses"], expected["losses"], rtol=1e-5, atol=1e-6)
    # each rank wrote its own shards
    assert sorted(os.listdir(tmp_path / "tidal" / "fsdp_ckpt")) == [".metadata", "__0_0.distcp", "__1_0.distcp"]

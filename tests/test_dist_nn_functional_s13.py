"""torch.distributed.nn.functional (differentiable collectives) on 2 tidal ranks against real torch's 2 ranks:
every rank's input gradient through all_reduce, all_gather (a contrastive loss over all ranks' rows),
reduce_scatter, broadcast and all_to_all (tests/scripts/dist_nn_functional.py)."""
import json
import os
import socket
import subprocess
import sys

import numpy as np
import pytest

import torch_reference

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scripts", "dist_nn_functional.py")
TIMEOUT_S = 120


def _start(args: list, cwd) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, *args], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


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
def test_differentiable_collectives_on_2_ranks_follow_torch(tmp_path):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    (tmp_path / "torch").mkdir()
    (tmp_path / "tidal").mkdir()
    run_key = torch_reference.key("dist_nn_functional", "2 ranks")
    expected = torch_reference.lookup(run_key)
    theirs = None if expected is not None else _start(
        ["-m", "torch.distributed.run", "--nproc-per-node", "2", "--master-port", str(port), SCRIPT],
        tmp_path / "torch")
    ours = _start(["-m", "tidal.comm.launch", "--nproc-per-node", "2", "--no-prefix", "-m", "tidal.compat", SCRIPT],
                  tmp_path / "tidal")
    if expected is None:
        expected = torch_reference.store(run_key, _finish(theirs, "torch"))
    got = _finish(ours, "tidal.comm.launch")
    assert expected["framework"] == "torch" and got["framework"] != "torch"
    assert len(got["ranks"]) == len(expected["ranks"]) == 2
    for rank, (mine, want) in enumerate(zip(got["ranks"], expected["ranks"])):
        assert mine.keys() == want.keys()
        for key in want:
            np.testing.assert_allclose(mine[key], want[key], rtol=1e-5, atol=1e-6, err_msg=f"rank {rank} {key}")

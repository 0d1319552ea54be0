"""Acceptance: a torchrun-style DDP script (tests/scripts/ddp_train.py: init_process_group("gloo"),
DistributedSampler, DistributedDataParallel, SGD) runs unmodified on two ranks under
`python -m tidal.comm.launch -m tidal.compat` and prints the numbers real torch prints under torchrun."""
import importlib.util
import json
import os
import subprocess
import sys

import numpy as np
import pytest

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scripts", "ddp_train.py")
TIMEOUT_S = 90


def _missing(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is None
    except ModuleNotFoundError:
        return True


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
    lines = out.strip().splitlines()
    assert lines[-2].startswith("final loss "), out
    return json.loads(lines[-1])


@pytest.mark.timeout(2 * TIMEOUT_S)
@pytest.mark.skipif(_missing("tidal.nn.parallel") or _missing("tidal.utils.data.distributed"),
                    reason="needs tidal.nn.parallel and tidal.utils.data.distributed")
def test_ddp_script_under_the_launcher_follows_torchrun(tmp_path):
    theirs = _start(["-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", SCRIPT], tmp_path)
    ours = _start(["-m", "tidal.comm.launch", "--nproc-per-node", "2", "--no-prefix", "-m", "tidal.compat", SCRIPT],
                  tmp_path)
    expected, got = _finish(theirs, "torchrun"), _finish(ours, "tidal.comm.launch")
    assert expected.pop("framework") == "torch" and got.pop("framework") != "torch"  # the runner really swapped
    assert got["world_size"] == expected["world_size"] == 2
    assert got["ranks_agree"] and expected["ranks_agree"]  # DDP broadcast rank 0's weights and kept them equal
    losses = np.array(got["losses"])
    np.testing.assert_allclose(losses, expected["losses"], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got["checksum"], expected["checksum"], rtol=1e-4, atol=1e-5)
    assert losses[-3:].mean() < 0.5 * losses[:3].mean(), f"loss did not decrease: {losses}"

"""Run a script from tests/scripts under tidal (`python -m tidal.compat`, or on 2 ranks under `python -m
tidal.comm.launch -m tidal.compat`) and under real torch, each printing one JSON line last; torch's answer is kept
by torch_reference (the other VM mode's pass reuses it)."""
import json
import os
import socket
import subprocess
import sys

import numpy as np
import pytest

import torch_reference

SCRIPTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scripts")
TIMEOUT_S = 120


def start(args: list, cwd, env: dict | None = None) -> subprocess.Popen:
    """Launch one run of a script (`python args...`); the runs of a test go at once to halve its wall time."""
    return subprocess.Popen([sys.executable, *args], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, **(env or {})})


def finish(proc: subprocess.Popen, label: str, again=None) -> dict:
    """Wait for a run and parse the JSON on its last output line; `again()`, if given, starts a second try of a
    run that failed (torch's references only: its gloo teardown can abort a finished rank at exit)."""
    try:
        out, err = proc.communicate(timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        pytest.fail(f"{label} ran past {TIMEOUT_S} s")
    if proc.returncode != 0 and again is not None:
        return finish(again(), label)
    if proc.returncode != 0:
        pytest.fail(f"{label} failed ({proc.returncode}):\n{out[-2000:]}\n{err[-4000:]}")
    return json.loads(out.strip().splitlines()[-1])


def run_both(name: str, tmp_path) -> tuple[dict, dict]:
    """(torch's result, tidal's) for tests/scripts/<name>.py run in one process, by real torch (or that run's
    result from the other VM mode's pass) and under `python -m tidal.compat`; their "framework" keys checked."""
    script = os.path.join(SCRIPTS, name + ".py")
    run_key = torch_reference.key(name)
    theirs = torch_reference.lookup(run_key)
    with_torch = start([script], tmp_path) if theirs is None else None
    with_tidal = start(["-m", "tidal.compat", script], tmp_path)
    if theirs is None:
        theirs = torch_reference.store(run_key, finish(with_torch, f"torch {name}"))
    theirs, ours = dict(theirs), finish(with_tidal, f"tidal {name}")
    assert theirs.pop("framework") == "torch" and ours.pop("framework") != "torch"  # the runner really swapped
    return theirs, ours


def check_losses(theirs: dict, ours: dict) -> None:
    """Same curve step by step, and training made progress."""
    expected, got = np.array(theirs["losses"]), np.array(ours["losses"])
    assert got.shape == expected.shape and len(got) >= 10
    np.testing.assert_allclose(got, expected, rtol=1e-3, atol=1e-4)
    assert got[-3:].mean() < 0.9 * got[:3].mean(), f"loss did not decrease: {got}"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def against_torch(tmp_path, name: str, torch_ranks: int = 1, torch_env: dict | None = None) -> tuple[dict, dict]:
    """(torch's JSON, tidal's JSON) for tests/scripts/<name>.py: tidal on 2 ranks in tmp_path/tidal; torch in
    tmp_path/torch in one process (a 1-rank world, `torch_env` added) or, with `torch_ranks` 2, under torchrun."""
    script = os.path.join(SCRIPTS, f"{name}.py")
    (tmp_path / "torch").mkdir()
    (tmp_path / "tidal").mkdir()
    variant = "1 rank" if torch_ranks == 1 else f"{torch_ranks} ranks"
    run_key = torch_reference.key(name, variant + "".join(f" {k}={v}" for k, v in sorted((torch_env or {}).items())))
    expected = torch_reference.lookup(run_key)

    def torch_run() -> subprocess.Popen:
        if torch_ranks == 1:
            env = {"RANK": "0", "LOCAL_RANK": "0", "WORLD_SIZE": "1", "MASTER_ADDR": "127.0.0.1",
                   "MASTER_PORT": str(_free_port()), **(torch_env or {})}
            return start([script], tmp_path / "torch", env)
        return start(["-m", "torch.distributed.run", "--nproc-per-node", str(torch_ranks), "--master-port",
                      str(_free_port()), script], tmp_path / "torch", torch_env)
    theirs = torch_run() if expected is None else None
    ours = start(["-m", "tidal.comm.launch", "--nproc-per-node", "2", "--no-prefix", "-m", "tidal.compat", script],
                 tmp_path / "tidal")
    if expected is None:
        expected = torch_reference.store(run_key, finish(theirs, "torch", again=torch_run))
    return dict(expected), finish(ours, "tidal.comm.launch")

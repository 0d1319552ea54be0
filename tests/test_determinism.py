"""Bitwise determinism run to run under use_deterministic_algorithms (issue 15)."""
import subprocess
import sys

import tidal.compat as tc

PROGRAM = r"""
import sys
import numpy as np
import tidal.compat as torch
if sys.argv[1] == "1":
    torch.use_deterministic_algorithms(True)
torch.manual_seed(0)
x = torch.randn(64, 257)
w = torch.randn(257, 33, requires_grad=True)
out = []
for step in range(12):
    h = torch.tanh(x @ w * 0.5 + 0.25).exp()  # a fused group with transcendentals
    loss = (h.sum(1) / (h * h + 1).sum(1)).mean()  # fused reductions
    loss.backward()
    with torch.no_grad():
        w -= 0.01 * w.grad
        w.grad = None
    out.append(loss.detach().numpy().tobytes().hex())
print(w.detach().numpy().tobytes().hex()[:4096], *out)
"""


def _run(deterministic: str, cache) -> str:
    done = subprocess.run([sys.executable, "-c", PROGRAM, deterministic], capture_output=True, text=True,
                          timeout=600, env={**__import__("os").environ, "TIDAL_CACHE_DIR": str(cache)})
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_same_program_gives_bitwise_equal_results_in_fresh_processes(tmp_path):
    # each run starts with an empty kernel cache: compiled kernels replace NumPy ones during the run
    first = _run("1", tmp_path / "a")
    second = _run("1", tmp_path / "b")
    assert first == second


def test_flag_turns_background_compilation_off_and_back():
    import tidal
    before = tidal.vm.get_fusion()["background_compile"]
    try:
        tc.use_deterministic_algorithms(True)
        assert tidal.vm.get_fusion()["background_compile"] is False
        assert tc.are_deterministic_algorithms_enabled()
    finally:
        tc.use_deterministic_algorithms(False)
    assert tidal.vm.get_fusion()["background_compile"] is before

"""Cold start: the first steps of a fresh model in a fresh process, tidal with an empty kernel cache.

    python -m tidal.perf.cold {tidal|torch} [--steps N] [--quick]   # prints one JSON line

A newcomer's first minutes: tidal runs each new fused group with NumPy while its kernel compiles
in the background (numba), so the first steps pay for compilation only where it is in the way.
Two figures: "import_build" (import the framework, build the tiny GPT and its optimizer) and
"first_steps" (the first N synced training steps). tidal gets a new, empty TIDAL_CACHE_DIR.
"""
from __future__ import annotations

import argparse
import functools
import importlib
import json
import os
import subprocess
import sys
import tempfile
import time

FIRST_STEPS = 20


def measure(lib_name: str, steps: int, quick: bool) -> dict:
    """Both figures, in this process (which should be fresh)."""
    t0 = time.perf_counter()
    lib = importlib.import_module(lib_name)
    from . import models
    trainer = models.build("gpt", lib, quick)
    t1 = time.perf_counter()
    for _ in range(steps):
        loss = trainer.step()
    float(loss.detach())
    return {"import_build": t1 - t0, "first_steps": time.perf_counter() - t1}


@functools.lru_cache(maxsize=None)
def measure_in_subprocess(lib_name: str, steps: int = FIRST_STEPS, quick: bool = False,
                          timeout: float = 900) -> dict:
    """`measure` in a fresh interpreter; tidal with an empty kernel cache of its own."""
    cmd = [sys.executable, "-m", "tidal.perf.cold", lib_name, "--steps", str(steps)] + (["--quick"] if quick else [])
    with tempfile.TemporaryDirectory(prefix="tidal-cold-") as cache:
        env = {**os.environ, "TIDAL_CACHE_DIR": cache}
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    if done.returncode != 0:
        raise RuntimeError(f"cold-start probe {lib_name} failed: {done.stderr.strip().splitlines()[-1:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> None:
    """Command-line entry: print the figures of one framework as JSON."""
    parser = argparse.ArgumentParser(prog="python -m tidal.perf.cold", description=__doc__.splitlines()[0])
    parser.add_argument("lib", choices=["tidal", "torch"])
    parser.add_argument("--steps", type=int, default=FIRST_STEPS)
    parser.add_argument("--quick", action="store_true", help="the small batch of --quick runs")
    args = parser.parse_args(argv)
    print(json.dumps(measure(args.lib, args.steps, args.quick)))


if __name__ == "__main__":
    main()

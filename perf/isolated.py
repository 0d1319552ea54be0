"""One case measured for one competitor in a process of its own.

    python -m tidal.perf.isolated GROUP "CASE NAME" "COLUMN" [--quick]   # prints one JSON line

Training steps run this way: tidal's parallel kernels and torch's both use GNU OpenMP, and in one process they
share torch's libgomp (numba's OpenMP layer binds to the copy torch loaded first). That one runtime counts both
frameworks' threads; past the core count it stops spinning between parallel loops, so each loop waits for a
sleeping thread: torch's two-thread 6-op loop at 256x256 took 266-396 us after tidal's kernels had run in the
process, 43 us before. A fresh process per competitor measures each framework as its users run it.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys

from .cases import Case, build_cases
from .competitors import Competitor
from .timing import measure


def measure_isolated(case: Case, comp: Competitor, quick: bool, cpu: list | None = None,
                     timeout: float = 600) -> float:
    """`measure(case, comp)` in a fresh process (its CPU seconds per op appended to `cpu`)."""
    cmd = [sys.executable, "-m", "tidal.perf.isolated", case.group, case.name, comp.column] + (["--quick"] if quick else [])
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines()
        raise RuntimeError(lines[-1] if lines else f"exit status {done.returncode}")
    figure = json.loads(done.stdout.strip().splitlines()[-1])
    if cpu is not None and figure["cpu"] is not None:
        cpu.append(figure["cpu"])
    return figure["value"]


def main(argv: list[str] | None = None) -> None:
    """Measure the named case for the named competitor here and print {"value", "cpu"} as JSON."""
    parser = argparse.ArgumentParser(prog="python -m tidal.perf.isolated")
    parser.add_argument("group")
    parser.add_argument("case")
    parser.add_argument("column")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    case = next(c for c in build_cases(quick=args.quick, only=args.group) if c.name == args.case)
    comp = next(c for c in case.competitors if c.column == args.column)
    cpu: list = []
    value = measure(case, comp, args.quick, cpu)
    print(json.dumps({"value": value, "cpu": cpu[0] if cpu else None}))


if __name__ == "__main__":
    main()

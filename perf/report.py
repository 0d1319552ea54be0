"""The report CLI: run the cases, print a Markdown table of ratios, save it (and a PNG plot).

    python -m tidal.perf [--quick] [--only a,b,...] [--out DIR]
"""
from __future__ import annotations

import argparse
import importlib.metadata
import os
import platform
import shutil
import sys
import time
from dataclasses import dataclass, field

from .cases import GROUPS, Case, build_cases
from .timing import measure
from .isolated import measure_isolated

DEFAULT_OUT = "perf-results"


@dataclass
class Result:
    """A case's figures per column (None where the competitor failed, with the error kept)."""

    case: Case
    values: dict = field(default_factory=dict)
    errors: dict = field(default_factory=dict)
    cpu: dict = field(default_factory=dict)  # CPU seconds per op (all threads), timed cases


# -- running -----------------------------------------------------------------------------------

class Progress:
    """A one-line progress bar on stderr (one line per step when stderr is not a terminal)."""

    def __init__(self, total: int, stream=None):
        self.total, self.done = total, 0
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()

    def step(self, label: str) -> None:
        """Announce the next measurement."""
        self.done += 1
        filled = 20 * self.done // max(self.total, 1)
        line = f"[{'#' * filled}{'.' * (20 - filled)}] {self.done:>3}/{self.total} {label}"
        if self.tty:
            width = shutil.get_terminal_size().columns - 1
            self.stream.write("\r" + line[:width].ljust(width))
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def close(self) -> None:
        """End the bar's line."""
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()


def run_cases(cases: list[Case], quick: bool, progress: Progress | None = None) -> list[Result]:
    """Measure every runnable case for each of its competitors, in order, in this process."""
    results = []
    for case in cases:
        result = Result(case)
        if case.skip is None:
            for comp in case.competitors:
                if progress:
                    progress.step(f"{case.id} · {comp.column}")
                try:
                    cpu: list = []
                    run = measure_isolated if case.isolated else measure
                    result.values[comp.column] = run(case, comp, quick, cpu)
                    if cpu:
                        result.cpu[comp.column] = cpu[0]
                except Exception as exc:  # noqa: BLE001 - a failing competitor is reported, the run goes on
                    result.values[comp.column] = None
                    result.errors[comp.column] = f"{type(exc).__name__}: {exc}".splitlines()[0][:200]
        results.append(result)
    if progress:
        progress.close()
    return results


# -- describing the machine --------------------------------------------------------------------

def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def machine_lines() -> list[str]:
    """The machine and software the figures were measured on, one fact per line."""
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    versions = [f"Python {platform.python_version()}"]
    for dist, name in (("numpy", "NumPy"), ("torch", "torch"), ("numba", "numba"), ("cupy-cuda12x", "CuPy"),
                       ("tidal", "tidal")):
        version = _version(dist)
        if version:
            versions.append(f"{name} {version}")
    if "torch" in sys.modules:
        versions.append(f"torch default threads {sys.modules['torch'].get_num_threads()}")
    from ..vm import intra_op
    versions.append(f"tidal kernel threads {intra_op.get_threads(allowed_only=False)} (vm/intra_op.py; they drop "
                    "under other processes' load)")
    return [f"CPU: {_cpu_model()}, {os.cpu_count()} logical cores ({usable} usable)",
            f"OS: {platform.platform()}",
            "versions: " + ", ".join(versions)]


def _load() -> str:
    return f"{os.getloadavg()[0]:.1f}" if hasattr(os, "getloadavg") else "?"


# -- formatting --------------------------------------------------------------------------------

def format_value(value: float | None, unit: str) -> str:
    """A time in s/ms/µs/ns or a size in B/KiB/MiB/GiB, three significant digits."""
    if value is None:
        return "error"
    if unit == "B":
        scales = ((1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB"), (1, "B"))
    else:
        scales = ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns"))
    scale, name = next(((s, n) for s, n in scales if abs(value) >= s), scales[-1])
    return f"{value / scale:.3g} {name}"


def format_ratio(tidal: float | None, other: float | None) -> str:
    """tidal's figure over a competitor's, or an em dash when either is missing."""
    if tidal is None or not other:
        return "—"
    ratio = tidal / other
    return f"{ratio:.3g}"


def group_columns(results: list[Result]) -> list[str]:
    """The competitor columns of a group, tidal first, in first-seen order."""
    columns: list[str] = []
    for result in results:
        for comp in result.case.competitors:
            if comp.column not in columns:
                columns.append(comp.column)
    return ["tidal"] + [c for c in columns if c != "tidal"]


def group_table(results: list[Result]) -> list[str]:
    """Markdown lines of one group's table: figures, then tidal/competitor ratios."""
    columns = group_columns(results)
    others = columns[1:]
    timed = any(r.cpu for r in results)
    cpu_heads = [f"cpu tidal/{c}" for c in others] if timed else []
    lines = ["| case | " + " | ".join(columns) + " | " + " | ".join([f"tidal/{c}" for c in others] + cpu_heads) + " |",
             "|:--|" + "--:|" * (len(columns) + len(others) + len(cpu_heads))]
    for result in results:
        if result.case.skip is not None:
            continue
        values, unit = result.values, result.case.unit
        cells = [format_value(values[c], unit) if c in values else "—" for c in columns]
        cells += [format_ratio(values.get("tidal"), values.get(c)) for c in others]
        if timed:
            cells += [format_ratio(result.cpu.get("tidal"), result.cpu.get(c)) for c in others]
        lines.append(f"| {result.case.name} | " + " | ".join(cells) + " |")
    return lines


def markdown(results: list[Result], header: list[str]) -> str:
    """The whole report: a header of facts, then one section per group."""
    out = ["# tidal perf report", ""] + [f"- {line}" for line in header]
    for group, title in GROUPS.items():
        members = [r for r in results if r.case.group == group]
        if not members:
            continue
        out += ["", f"## {group}. {title}"]
        if any(r.case.skip is None for r in members):
            out += [""] + group_table(members)
        notes = [f"- skipped {r.case.name}: {r.case.skip}" for r in members if r.case.skip is not None]
        notes += [f"- {column} failed on {r.case.name}: {error}" for r in members for column, error in r.errors.items()]
        if notes:
            out += [""] + notes
    return "\n".join(out) + "\n"


def plot(results: list[Result], path: str) -> bool:
    """A horizontal bar chart of every tidal/competitor ratio (log scale); False without matplotlib."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    rows = [r for r in results if r.case.skip is None and r.values.get("tidal")]
    columns = sorted({c for r in rows for c, v in r.values.items() if c != "tidal" and v})
    if not rows or not columns:
        return False
    height = 0.8 / len(columns)
    fig, ax = plt.subplots(figsize=(10, 0.25 * len(rows) * len(columns) + 1.5))
    for k, column in enumerate(columns):
        ys = [i + k * height for i, r in enumerate(rows) if r.values.get(column)]
        ratios = [r.values["tidal"] / r.values[column] for r in rows if r.values.get(column)]
        ax.barh(ys, ratios, height=height, label=f"tidal / {column}")
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.set_xscale("log")
    ax.set_yticks([i + 0.4 - height / 2 for i in range(len(rows))])
    ax.set_yticklabels([r.case.id for r in rows], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("ratio (below 1: tidal is faster or smaller)")
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


# -- the command -------------------------------------------------------------------------------

def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The CLI's options."""
    parser = argparse.ArgumentParser(prog="python -m tidal.perf",
                                     description="Benchmark tidal against NumPy and PyTorch in one run.")
    parser.add_argument("--quick", action="store_true", help="tiny sizes and short sampling (a smoke run)")
    parser.add_argument("--only", metavar="GROUPS",
                        help="comma-separated case groups: " + "; ".join(f"{g}: {t}" for g, t in GROUPS.items()))
    parser.add_argument("--out", metavar="DIR", default=DEFAULT_OUT,
                        help=f"where perf.md (and perf.png with matplotlib) go (default: ./{DEFAULT_OUT})")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Run the selected cases, print the report, write DIR/perf.md and DIR/perf.png."""
    args = parse_args(argv)
    try:
        cases = build_cases(quick=args.quick, only=args.only)
    except ValueError as exc:
        print(f"python -m tidal.perf: {exc}", file=sys.stderr)
        return 2
    load_before, start = _load(), time.perf_counter()
    progress = Progress(sum(len(c.competitors) for c in cases if c.skip is None))
    results = run_cases(cases, args.quick, progress)
    elapsed = time.perf_counter() - start
    load_after = _load()
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    busy = any(x != "?" and float(x) > cores for x in (load_before, load_after))
    header = machine_lines() + [
        f"load average (1 min): {load_before} at start, {load_after} at end"
        + (" (above the usable core count: the machine was shared and figures are noisy)" if busy else ""),
        f"run: {'quick' if args.quick else 'default'} sizes, groups {args.only or ','.join(GROUPS)}, {elapsed:.0f} s",
        "method: every figure is the median of repeated calls after warmup; competitors run in the same "
        "process and run; ratios below 1 mean tidal is faster (or uses less memory)"]
    report = markdown(results, header)
    print(report, end="")
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "perf.md"), "w", encoding="utf-8") as f:
        f.write(report)
    plot(results, os.path.join(args.out, "perf.png"))
    return 0

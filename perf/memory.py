"""Peak memory of training, measured in a fresh process per framework.

    python -m tidal.perf.memory {tidal|torch} {mlp|cnn|gpt} [--quick]   # prints one JSON line

Two figures per run, both growths over the resting state (model, optimizer, batch built):
- "rss_growth": the process's peak resident memory while running the first steps of a fresh
  model, minus its resident memory before them (the peak is reset through /proc/self/clear_refs;
  where that is refused, ru_maxrss is used instead, which can under-count);
- "alloc_peak": the peak of tensor memory during one warm step with the gradients dropped
  beforehand: tidal's allocator counter (`tidal.vm.memory_stats()['peak_bytes']`, in size
  classes), torch's allocation events from `torch.profiler` with `profile_memory=True`.
tracemalloc sees neither framework's buffers, hence these two.
"""
from __future__ import annotations

import argparse
import functools
import importlib
import json
import resource
import subprocess
import sys

FIRST_STEPS = 3


def _status_kib(field: str) -> int | None:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def _reset_peak_rss() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # 5: reset the peak resident set size to the current one
        return True
    except OSError:
        return False


def rss_growth(step) -> int:
    """Bytes the resident set grows by, at its peak, while `step()` runs FIRST_STEPS times."""
    reset = _reset_peak_rss()
    before = _status_kib("VmRSS") if reset else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    for _ in range(FIRST_STEPS):
        step()
    peak = _status_kib("VmHWM") if reset else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return max(0, peak - before) * 1024


def tidal_alloc_peak(trainer) -> int:
    """Peak bytes tidal's allocator holds for tensors during one step, over what it held before."""
    import tidal

    trainer.zero_grad()
    tidal.vm.reset_stats()
    rest = tidal.vm.memory_stats()["bytes_in_use"]
    trainer.step()
    tidal.sync()
    return tidal.vm.memory_stats()["peak_bytes"] - rest


def torch_alloc_peak(trainer) -> int:
    """Peak of torch's CPU allocations during one step, from the profiler's memory events."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    trainer.zero_grad()  # so freeing old gradients (allocated before profiling) is not missed
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        trainer.step()
    events = sorted((e for e in prof.profiler.kineto_results.events() if e.name() == "[memory]"),
                    key=lambda e: e.start_ns())
    total = peak = 0
    for event in events:
        if event.device_type() == torch.autograd.DeviceType.CPU:
            total += event.nbytes()
            peak = max(peak, total)
    return peak


def measure(lib_name: str, model: str, quick: bool) -> dict:
    """Both figures for one framework and model, in this process (which should be fresh)."""
    from . import models

    lib = importlib.import_module(lib_name)
    if lib_name == "tidal":  # count every tensor: small blobs otherwise take NumPy's memory, uncounted
        from ..vm.cpu import CpuBackend
        CpuBackend.small_bytes = -1
    trainer = models.build(model, lib, quick)
    sync = lib.sync if lib_name == "tidal" else (lambda: None)

    def step():
        trainer.step()
        sync()
    out = {"rss_growth": rss_growth(step)}
    out["alloc_peak"] = tidal_alloc_peak(trainer) if lib_name == "tidal" else torch_alloc_peak(trainer)
    return out


@functools.lru_cache(maxsize=None)
def measure_in_subprocess(lib_name: str, model: str, quick: bool, timeout: float = 300) -> dict:
    """`measure` in a fresh interpreter, so one framework's memory never counts for another."""
    cmd = [sys.executable, "-m", "tidal.perf.memory", lib_name, model] + (["--quick"] if quick else [])
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"memory probe {lib_name}/{model} failed: {done.stderr.strip().splitlines()[-1:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> None:
    """Command-line entry: print the figures of one framework and model as JSON."""
    parser = argparse.ArgumentParser(prog="python -m tidal.perf.memory", description=__doc__.splitlines()[0])
    parser.add_argument("lib", choices=["tidal", "torch"])
    parser.add_argument("model", choices=["mlp", "cnn", "gpt", "lm"])
    parser.add_argument("--quick", action="store_true", help="the small batch of --quick runs")
    args = parser.parse_args(argv)
    print(json.dumps(measure(args.lib, args.model, args.quick)))


if __name__ == "__main__":
    main()

"""Resident memory over a long run with no sync point at all, and over a training loop.

    python -m tidal.perf.rss [--ops 1000000] [--steps 300]   # prints one JSON line

The VM bounds the instructions waiting for its workers, so a loop that never syncs must run in
flat memory: this reports the resident set after warm-up and at the end of each fifth of the run,
their largest growth over the warm-up figure (in percent), and the VM's in-flight high-water mark.
"""
from __future__ import annotations

import argparse
import json

from .memory import _status_kib


def _rss() -> int:
    return (_status_kib("VmRSS") or 0) * 1024


def _track(run_chunk, chunks: int) -> dict:
    run_chunk()  # warm-up: kernels compiled, caches filled
    base = _rss()
    points = []
    for _ in range(chunks):
        run_chunk()
        points.append(_rss())
    growth = max(points) - base
    return {"rss_after_warmup": base, "rss_points": points, "max_growth_pct": round(100 * growth / base, 2)}


def no_sync_loop(ops: int, chunks: int = 5) -> dict:
    """The dependent 6-op loop on (64, 64), `ops` ops in all, never synced until the very end."""
    import tidal

    tidal.vm.set_execution(inline_bytes=0)  # everything through the worker queue: the bounded path
    x = tidal.ones(64, 64)
    state = {"x": x}
    steps = max(1, ops // 6 // (chunks + 1))

    def chunk():
        x = state["x"]
        for _ in range(steps):
            y = (x * 1.0001 + 0.5).relu().sum(0, keepdim=True)
            x = x + y * 0.0
        state["x"] = x
    out = _track(chunk, chunks)
    out["max_in_flight"] = tidal.vm.stats()["max_in_flight"]
    tidal.sync()
    tidal.vm.set_execution(inline_bytes=1 << 20)
    return out


def training_loop(steps: int, chunks: int = 5) -> dict:
    """The MLP training step, `steps` steps in all, synced only through the loss every step."""
    import tidal

    from .models import build
    trainer = build("mlp", tidal)
    per_chunk = max(1, steps // (chunks + 1))

    def chunk():
        for _ in range(per_chunk):
            trainer.step()
    return _track(chunk, chunks)


def main(argv: list[str] | None = None) -> int:
    """Run both measurements and print them as one JSON line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=1_000_000)
    parser.add_argument("--steps", type=int, default=300)
    args = parser.parse_args(argv)
    print(json.dumps({"no_sync_loop": no_sync_loop(args.ops), "training_loop": training_loop(args.steps)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

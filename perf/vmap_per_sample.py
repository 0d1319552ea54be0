"""Per-sample gradients of a small MLP (vmap(grad(loss)), 64 samples): vmap's whole-function loop, its batching
rules, and torch.func; and the plain-op costs vmap must leave alone (`a + b`, a loop of 6 small ops).

    python -m tidal.perf.vmap_per_sample [--repeat 7]

Each figure is the best of `--repeat` runs, in milliseconds: wall (perf_counter) and CPU (process_time, every
thread of the process). The rules line says whether the batched run fell back to the loop (it does for grad inside
vmap until func/transforms.py takes s18_vmap_transforms.patch).
"""
from __future__ import annotations

import argparse
import importlib
import time
import warnings

import numpy as np


def _best(fn, repeat: int) -> tuple:
    fn()
    walls, cpus = [], []
    for _ in range(repeat):
        c, w = time.process_time(), time.perf_counter()
        fn()
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c)
    return min(walls) * 1e3, min(cpus) * 1e3


def _mlp_loss(F, kind: str):
    def loss(p, x, y):
        h = F.relu(F.linear(x, p["W1"], p["b1"]))
        out = F.linear(h, p["W2"], p["b2"])
        if kind == "ce":
            return F.cross_entropy(out.unsqueeze(0), y.unsqueeze(0))
        return F.mse_loss(out, y)
    return loss


def per_sample_grads(repeat: int, kind: str) -> dict:
    """{name: (wall ms, cpu ms)} for loop, rules and torch."""
    import torch
    import tidal
    from tidal.func import grad, vmap
    vmap_module = importlib.import_module("tidal.func.vmap")
    r = np.random.default_rng(0)
    shapes = {"W1": (32, 16), "b1": (32,), "W2": (10, 32), "b2": (10,)}
    params = {k: r.standard_normal(s).astype(np.float32) for k, s in shapes.items()}
    x = r.standard_normal((64, 16)).astype(np.float32)
    y = r.integers(0, 10, 64) if kind == "ce" else r.standard_normal((64, 10)).astype(np.float32)
    tp = {k: torch.tensor(v) for k, v in params.items()}
    dp = {k: tidal.tensor(v) for k, v in params.items()}
    tx, ty, dx, dy = torch.tensor(x), torch.tensor(y), tidal.tensor(x), tidal.tensor(y)
    tf = torch.func.vmap(torch.func.grad(_mlp_loss(torch.nn.functional, kind)), in_dims=(None, 0, 0))
    df = vmap(grad(_mlp_loss(tidal.nn.functional, kind)), in_dims=(None, 0, 0))

    def ours():
        for g in df(dp, dx, dy).values():
            g.numpy()
    out = {"torch.func": _best(lambda: tf(tp, tx, ty), repeat)}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        vmap_module._warned.clear()
        out["tidal rules"] = _best(ours, repeat)
    fell = [str(w.message) for w in caught if "batched run stopped" in str(w.message)]
    saved = vmap_module.RULES_ON[0]
    vmap_module.RULES_ON[0] = False
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out["tidal loop"] = _best(ours, repeat)
    finally:
        vmap_module.RULES_ON[0] = saved
    out["fell back"] = fell[0][:160] if fell else ""
    return out


def plain_ops(repeat: int) -> dict:
    """{name: (wall us, cpu us)} per call of `a + b` and per iteration of a 6-op loop on small tensors."""
    import tidal
    a, b = tidal.ones(64), tidal.ones(64)

    def add():
        for _ in range(2000):
            a + b
        tidal.sync()

    def six():
        y = tidal.ones(64)
        for _ in range(500):
            y = ((y * 0.5 + a) - b).relu().exp().neg()
        y.numpy()
    w, c = _best(add, repeat)
    w6, c6 = _best(six, repeat)
    return {"a + b": (w / 2000 * 1e3, c / 2000 * 1e3), "6-op loop iteration": (w6 / 500 * 1e3, c6 / 500 * 1e3)}


def main() -> None:
    """Print the measurements."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    repeat = parser.parse_args().repeat
    for name, (w, c) in plain_ops(repeat).items():
        print(f"{name:24s} wall {w:8.2f} us   cpu {c:8.2f} us")
    for kind in ("mse", "ce"):
        res = per_sample_grads(repeat, kind)
        fell = res.pop("fell back")
        for name, (w, c) in res.items():
            print(f"per-sample grads ({kind}) {name:12s} wall {w:8.2f} ms   cpu {c:8.2f} ms")
        if fell:
            print(f"  (the rules run fell back to the loop: {fell})")


if __name__ == "__main__":
    main()

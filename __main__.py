"""`python -m tidal`: a short tour — tensors, ops, a tiny model trained, the VM's counters."""
from __future__ import annotations

import time

import tidal


def _section(title: str) -> None:
    print(f"\n== {title} " + "=" * max(0, 60 - len(title)))


def tour() -> None:
    """Create tensors, run ops, fit a linear model by gradient descent, print VM statistics."""
    tidal.manual_seed(0)
    _section("tensors")
    x = tidal.arange(6, dtype=tidal.float32).reshape(2, 3)
    print("x =", x)
    print("x.T @ x =", x.T @ x)
    print("softmax(x, dim=1) =", tidal.softmax(x, dim=1))
    print("x[:, 1:] * 10 =", x[:, 1:] * 10)

    _section("a tiny model: linear regression by gradient descent")
    n, d = 256, 4
    true_w = tidal.tensor([[2.0], [-1.0], [0.5], [3.0]])
    features = tidal.randn(n, d)
    target = features @ true_w + 0.1 * tidal.randn(n, 1)
    w = tidal.zeros(d, 1)
    lr = 0.1
    tidal.vm.reset_stats()
    start = time.perf_counter()
    for step in range(100):
        err = features @ w - target                  # forward
        grad = features.T @ err * (2.0 / n)          # d(mean squared error)/dw
        w -= lr * grad                               # update (fuses into one kernel)
        if step % 25 == 0:
            print(f"step {step:3d}  loss {(err * err).mean().item():.5f}")
    elapsed = time.perf_counter() - start
    print("learned w =", w.reshape(-1))
    print(f"100 steps in {elapsed * 1e3:.1f} ms")

    _section("the virtual machine")
    stats = tidal.vm.stats()
    width = max(len(k) for k in stats)
    for key, value in stats.items():
        print(f"  {key:<{width}}  {value}")
    print(f"  mode: {tidal.vm.get_mode()}, fusion: {tidal.vm.get_fusion()}")


if __name__ == "__main__":
    tour()

"""`python -m tidal`: a short tour: tensors, ops, a tiny model trained, the VM's counters."""
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

    _section("a tiny model: an MLP classifier trained with AdamW")
    n, classes = 512, 3
    centers = tidal.randn(classes, 2) * 3
    labels = tidal.randint(0, classes, (n,))
    points = centers[labels] + tidal.randn(n, 2)
    model = tidal.nn.Sequential(tidal.nn.Linear(2, 32), tidal.nn.GELU(), tidal.nn.Linear(32, classes))
    print(model)
    opt = tidal.optim.AdamW(model.parameters(), lr=0.05)
    loss_fn = tidal.nn.CrossEntropyLoss()
    tidal.vm.reset_stats()
    start = time.perf_counter()
    for step in range(60):
        opt.zero_grad()
        loss = loss_fn(model(points), labels)
        loss.backward()
        opt.step()
        if step % 15 == 0 or step == 59:
            print(f"step {step:3d}  loss {loss.item():.4f}")
    elapsed = time.perf_counter() - start
    with tidal.no_grad():
        accuracy = (model(points).argmax(dim=1) == labels).float().mean().item()
    print(f"accuracy {accuracy:.3f}; 60 steps in {elapsed * 1e3:.0f} ms (first steps include compiling kernels)")

    _section("the virtual machine")
    stats = tidal.vm.stats()
    width = max(len(k) for k in stats)
    for key, value in stats.items():
        print(f"  {key:<{width}}  {value}")
    print(f"  mode: {tidal.vm.get_mode()}, fusion: {tidal.vm.get_fusion()}")


if __name__ == "__main__":
    tour()

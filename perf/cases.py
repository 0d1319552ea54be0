"""Every benchmark case, defined once: the report CLI and the pytest-benchmark files both use it.

A case has a group letter (a: tiny-op dispatch, b: elementwise chains, c: training steps,
d: peak memory, e: CUDA), a name, its competitors, and a `build` that gives, for one
competitor, either a `Bench` to time or (memory cases) a function returning bytes.
Shapes and data are identical across competitors; only the runtime differs.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from . import models
from .competitors import Competitor, cpu_competitors, cuda_skip_reason, gpu_competitors
from . import cold
from .memory import measure_in_subprocess

GROUPS = {
    "a": "tiny-op dispatch overhead (time per op)",
    "b": "elementwise chains, float32 (time per chain)",
    "c": "one training step (time per step)",
    "d": "peak memory of training",
    "e": "CUDA: launch overhead and fused chains",
    "f": "dependent small-op loops (time per step)",
    "g": "cold start: first steps of a fresh process, empty kernel cache (seconds in all)",
    "h": "data loading (time per batch)",
}


@dataclass
class Bench:
    """What one competitor times: `run()` does `per_call` operations; `after()` (untimed) drains
    work the call left queued, so the next call starts from an idle runtime."""

    run: Callable[[], object]
    per_call: int = 1
    after: Callable[[], object] | None = None


@dataclass
class Case:
    """One row of the report: the same work for every competitor."""

    group: str
    name: str
    competitors: tuple[Competitor, ...]
    build: Callable[[Competitor], object]  # -> Bench (time) or a () -> bytes callable (memory)
    unit: str = "s"                        # "s": seconds per op; "B": bytes
    warmup: int = 2
    min_repeat: int = 5
    min_time: float = 0.2                  # keep sampling until this much time was spent
    compile_now: bool = False              # tidal compiles fused kernels in the foreground
    probe: bool = False                    # build gives a () -> figure callable (in `unit`), not a Bench
    skip: str | None = None                # why the case cannot run here
    isolated: bool = False                 # each competitor measured in a fresh process (perf/isolated.py)

    @property
    def id(self) -> str:
        """A short identifier for pytest and filters."""
        return f"{self.group}: {self.name}"


# -- a: tiny ops -------------------------------------------------------------------------------

def _full(lib, n):
    return lib.full((n,), 1.5, dtype=lib.float32)


TINY_OPS = {  # number of tensor inputs -> (op name, fn(lib, n, *inputs))
    0: ("full", _full),
    1: ("neg", lambda lib, n, a: -a),
    2: ("add", lambda lib, n, a, b: a + b),
    3: ("where", lambda lib, n, c, a, b: lib.where(c, a, b)),
}


def _tiny_inputs(arity: int, n: int) -> list[np.ndarray]:
    rng = np.random.default_rng(arity)
    floats = [rng.standard_normal(n, dtype=np.float32) for _ in range(min(arity, 2))]
    return ([rng.random(n) < 0.5] if arity == 3 else []) + floats


def tiny_op_bench(arity: int, n: int, metric: str, per_call: int) -> Callable[[Competitor], Bench]:
    """`metric` "enqueue": the host cost of issuing `per_call` ops (results kept, work drained
    untimed afterwards); "synced": op then wait for it, `per_call` times."""
    op = TINY_OPS[arity][1]
    host = _tiny_inputs(arity, n)

    def build(comp: Competitor) -> Bench:
        lib, sync = comp.module, comp.sync
        args = [comp.array(h) for h in host]
        if metric == "enqueue":
            return Bench(lambda: [op(lib, n, *args) for _ in range(per_call)], per_call, after=sync)

        def synced():
            for _ in range(per_call):
                out = op(lib, n, *args)
                sync()
            return out
        return Bench(synced, per_call)
    return build


def _size_label(n: int) -> str:
    return f"{n // 1_000_000}M" if n >= 1_000_000 else f"{n // 1000}k" if n >= 1000 else str(n)


def _tiny_cases(quick: bool) -> list[Case]:
    sizes = (1, 1_000) if quick else (1, 1_000, 1_000_000)
    cases = []
    for arity, (op_name, _) in TINY_OPS.items():
        for n in sizes:
            per_call = (10 if quick else 20) if n >= 1_000_000 else (50 if quick else 200)
            for metric, mode in (("enqueue", "async"), ("synced", "async"), ("synced", "sync")):
                name = f"{op_name} ({arity} in), n={_size_label(n)}, {metric} [{mode}]"
                cases.append(Case("a", name, cpu_competitors(mode), tiny_op_bench(arity, n, metric, per_call)))
    return cases


# -- b: elementwise chains ---------------------------------------------------------------------

def _relu(lib, y, x):
    return lib.maximum(y, lib.float32(0)) if lib.__name__ in ("numpy", "cupy") else lib.clamp_min(y, 0)


CHAIN_STEPS = (  # step k of an elementwise chain: fn(lib, y, x); the 4-op chain is relu(x*2+1)*x
    lambda lib, y, x: y * 2,
    lambda lib, y, x: y + 1,
    _relu,
    lambda lib, y, x: y * x,
    lambda lib, y, x: y + 0.5,
    lambda lib, y, x: y * y,
    lambda lib, y, x: y - x,
    lambda lib, y, x: y * 0.5,
)


def chain(lib, x, length: int):
    """The first `length` steps of CHAIN_STEPS applied to x."""
    y = x
    for step in CHAIN_STEPS[:length]:
        y = step(lib, y, x)
    return y


def chain_bench(length: int, n: int) -> Callable[[Competitor], Bench]:
    """One chain of `length` ops on n float32, synced; the result is alive until the sync."""
    host = np.random.default_rng(0).standard_normal(n, dtype=np.float32)

    def build(comp: Competitor) -> Bench:
        lib, sync, x = comp.module, comp.sync, comp.array(host)

        def run():
            y = chain(lib, x, length)
            sync()
            return y
        return Bench(run)
    return build


def gelu_tanh(lib, x):
    """GELU's tanh form written as 7 elementwise ops (a transcendental chain: numba's float32 tanh is
    slower than NumPy's and torch's vectorized loops, so tidal runs this group on NumPy, in pieces)."""
    return x * 0.5 * (lib.tanh((x + x * x * x * 0.044715) * 0.7978845608) + 1)


def gelu_tanh_bench(n: int) -> Callable[[Competitor], Bench]:
    """gelu_tanh on n float32, synced."""
    host = np.random.default_rng(0).standard_normal(n, dtype=np.float32)

    def build(comp: Competitor) -> Bench:
        lib, sync, x = comp.module, comp.sync, comp.array(host)

        def run():
            y = gelu_tanh(lib, x)
            sync()
            return y
        return Bench(run)
    return build


def _chain_cases(quick: bool) -> list[Case]:
    n = 100_000 if quick else 10_000_000
    timing = dict(warmup=3, min_repeat=5, min_time=0.05 if quick else 0.5, compile_now=True)
    return [Case("b", f"{length}-op chain, n={_size_label(n)}", cpu_competitors("async"), chain_bench(length, n),
                 **timing) for length in (2, 4, 8)] + \
        [Case("b", f"tanh GELU as 9 ops, n={_size_label(n)}", cpu_competitors("async"), gelu_tanh_bench(n), **timing)]


# -- c: training steps -------------------------------------------------------------------------

def train_bench(model: str, quick: bool) -> Callable[[Competitor], Bench]:
    """One synced training step (zero_grad, forward, loss, backward, optimizer step)."""
    def build(comp: Competitor) -> Bench:
        trainer, sync = models.build(model, comp.module, quick), comp.sync

        def run():
            loss = trainer.step()
            sync()
            return loss
        return Bench(run)
    return build


def _train_cases(quick: bool) -> list[Case]:
    # tidal on one kernel thread beside its default: what intra-op parallelism (vm/intra_op.py) buys
    comps = cpu_competitors("async", numpy=False) + (Competitor("tidal 1 thread", "tidal", vm_mode="async", threads=1),)
    return [Case("c", f"{models.TITLES[m]}, batch {models.batch_size(m, quick)}",
                 comps, train_bench(m, quick), warmup=3, min_repeat=3,
                 min_time=0.05 if quick else 1.0, compile_now=True, isolated=True)
            for m in models.MODELS]


# -- d: peak memory ----------------------------------------------------------------------------

def memory_probe(model: str, metric: str, quick: bool) -> Callable[[Competitor], Callable[[], float]]:
    """Bytes, measured in a fresh process per framework (see perf/memory.py)."""
    def build(comp: Competitor) -> Callable[[], float]:
        return lambda: measure_in_subprocess(comp.lib, model, quick)[metric]
    return build


def _memory_cases(quick: bool) -> list[Case]:
    comps = tuple(c for c in cpu_competitors("async", numpy=False) if c.threads is None)
    cases = []
    for m in models.MODELS:
        for metric, what in (("alloc_peak", "tensor memory peak over rest, one step"),
                             ("rss_growth", "peak RSS growth, first steps of a fresh model")):
            cases.append(Case("d", f"{models.TITLES[m]}: {what}", comps, memory_probe(m, metric, quick),
                              unit="B", warmup=0, min_repeat=1, min_time=0))
    return cases


# -- f: dependent loops ------------------------------------------------------------------------

LOOP_SHAPES = ((1,), (64, 64), (256, 256))


def _loop_step(lib, x):
    # y = relu(x * 1.0001 + 0.5).sum(0, keepdim=True); x = x + y * 0: six ops, each needing the last
    if lib.__name__ == "numpy":
        y = np.maximum(x * np.float32(1.0001) + np.float32(0.5), np.float32(0)).sum(0, keepdims=True)
        return x + y * np.float32(0.0)
    y = (x * 1.0001 + 0.5).relu().sum(0, keepdim=True)
    return x + y * 0.0


def loop_bench(shape: tuple, steps: int, grad: bool) -> Callable[[Competitor], Bench]:
    """`steps` steps of the dependent 6-op loop, then a sync; with `grad`, the loop starts from a
    leaf that requires grad and ends with a backward through the steps."""
    host = np.ones(shape, np.float32)

    def build(comp: Competitor) -> Bench:
        lib, sync = comp.module, comp.sync
        x0 = comp.array(host)
        if grad:
            x0.requires_grad_(True)

        def run():
            x = x0
            for _ in range(steps):
                x = _loop_step(lib, x)
            if grad:
                x.sum().backward()
                x0.grad = None
            sync()
            return x
        return Bench(run, steps)
    return build


def _loop_cases(quick: bool) -> list[Case]:
    steps = 10 if quick else 50
    cases = [Case("f", f"6-op loop, {'x'.join(map(str, shape))}", cpu_competitors("async"),
                  loop_bench(shape, steps, False), warmup=3, compile_now=True, min_time=0.05 if quick else 0.5)
             for shape in LOOP_SHAPES]
    cases += [Case("f", f"6-op loop with grad, backward every 10 steps, {'x'.join(map(str, shape))}",
                   cpu_competitors("async", numpy=False), loop_bench(shape, 10, True), warmup=3,
                   compile_now=True, min_time=0.05 if quick else 0.5)
              for shape in LOOP_SHAPES[:2]]
    return cases


# -- g: cold start ------------------------------------------------------------------------------

def _cold_cases(quick: bool) -> list[Case]:
    comps = tuple(c for c in cpu_competitors("async", numpy=False) if c.threads is None)
    steps = 3 if quick else cold.FIRST_STEPS
    return [Case("g", f"{models.TITLES['gpt']}: first {steps} steps, {what}", comps,
                 lambda comp, key=key: lambda: cold.measure_in_subprocess(comp.lib, steps, quick)[key],
                 warmup=0, min_repeat=1, min_time=0, probe=True)
            for key, what in (("first_steps", "steps"), ("import_build", "import and build"))]


# -- e: CUDA -----------------------------------------------------------------------------------

def _gpu_cases(quick: bool) -> list[Case]:
    skip = cuda_skip_reason()
    comps = gpu_competitors()
    n = 100_000 if quick else 10_000_000
    return [Case("e", "add (2 in), n=1, enqueue (launch overhead)", comps, tiny_op_bench(2, 1, "enqueue", 200),
                 skip=skip),
            Case("e", "add (2 in), n=1, synced", comps, tiny_op_bench(2, 1, "synced", 200), skip=skip),
            Case("e", f"4-op chain, n={_size_label(n)}", comps, chain_bench(4, n), warmup=3, compile_now=True,
                 skip=skip)]


# -- h: data loading ----------------------------------------------------------------------------

def loader_bench(rows: int, batch: int) -> Callable[[Competitor], Bench]:
    """An epoch of a shuffled DataLoader over a TensorDataset of MNIST-shaped rows and int64 labels."""
    rng = np.random.default_rng(0)
    images, labels = rng.standard_normal((rows, 1, 28, 28), dtype=np.float32), rng.integers(0, 10, rows)

    def build(comp: Competitor) -> Bench:
        lib = comp.module
        data = lib.utils.data.TensorDataset(comp.array(images), comp.array(labels))

        def run():
            for x, y in lib.utils.data.DataLoader(data, batch_size=batch, shuffle=True):
                pass
            comp.sync()
            return x
        return Bench(run, rows // batch)
    return build


def stack_bench(count: int) -> Callable[[Competitor], Bench]:
    """torch.stack of `count` rows taken from one tensor (a collate of per-sample tensors)."""
    host = np.random.default_rng(0).standard_normal((count, 1, 28, 28), dtype=np.float32)

    def build(comp: Competitor) -> Bench:
        lib, whole = comp.module, comp.array(host)
        rows = [whole[k] for k in range(count)]

        def run():
            out = lib.stack(rows)
            comp.sync()
            return out
        return Bench(run)
    return build


def _data_cases(quick: bool) -> list[Case]:
    comps = cpu_competitors("async", numpy=False)
    rows = 1280 if quick else 12800
    return [Case("h", f"DataLoader over a TensorDataset, {rows} rows (1, 28, 28), batch 64, shuffled", comps,
                 loader_bench(rows, 64), warmup=1, min_repeat=3, min_time=0.05 if quick else 0.5),
            Case("h", "stack of 64 rows (1, 28, 28)", comps, stack_bench(64), min_time=0.05 if quick else 0.3)]


_BUILDERS = {"a": _tiny_cases, "b": _chain_cases, "c": _train_cases, "d": _memory_cases, "e": _gpu_cases,
             "f": _loop_cases, "g": _cold_cases, "h": _data_cases}


def build_cases(quick: bool = False, only: str | None = None) -> list[Case]:
    """Every case of the groups in `only` (e.g. "a,c"; all when None), at default or quick sizes."""
    groups = list(GROUPS) if not only else [g.strip() for g in only.split(",") if g.strip()]
    unknown = [g for g in groups if g not in GROUPS]
    if unknown:
        raise ValueError(f"unknown case group(s) {', '.join(unknown)}; expected some of {', '.join(GROUPS)}")
    return [case for g in groups for case in _BUILDERS[g](quick)]

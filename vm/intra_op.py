"""Intra-op parallelism: whether a CPU kernel may split its work over several threads.

Large kernels run numba `parallel=True` loops (generated elementwise kernels, row kernels) and products run
single-threaded BLAS calls on slices of the result inside such loops (ops/linalg/gemm_kernels.py), so ONE pool --
numba's OpenMP (or TBB) threads -- serves every kernel, as torch's one OpenMP pool does. Two pools do not mix
on few cores: OpenBLAS's threads spin for a while after each product, and a numba loop started meanwhile
waits for a core (a GELU after a product: 1.1 ms alone, 5 ms after one; OpenBLAS called from numba's threads
without being told to stay on one thread: 100x slower). A kernel goes parallel only when:
- the thread count (`TIDAL_NUM_THREADS`, `set_threads`; default: the usable cores) is above 1;
- numba's threading layer takes calls from several threads at once (omp or tbb; its workqueue layer aborts
  the process when the program's thread and a stream's worker both start a loop);
- this process did not fork from one whose pool had started: GNU OpenMP kills a forked child that uses it
  (DataLoader workers), so a child runs every kernel serially.
The VM knows no op: kernels ask `parallel()` and pick their variant, and call `enter()` before running it.
"""
from __future__ import annotations

import os
import sys
import threading
import time

CORES = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
_threads = max(int(os.environ.get("TIDAL_NUM_THREADS", "0") or 0), 0) or CORES
_layer_ok = None   # whether numba has a thread-safe threading layer (checked once, when first asked)
_forked = False    # a child forked from this process: serial kernels only
_on_change: list = []  # callbacks run when parallel kernels are switched on or off (caches forget kernels)
_applied = threading.local()  # the count this thread last gave numba
_thread = threading.local()  # `stream`: set on a stream's worker thread (vm/machine.py), that stream
# GNU OpenMP gives every thread that starts a parallel loop a pool of its own and counts all their threads: past the
# core count it stops spinning between loops ("throttled"), and each loop then waits for a sleeping thread, which this
# virtual machine wakes on its next 4 ms tick (the LM step 9 -> 13 ms). So one thread starts teams: a stream's worker
# once one runs kernels (the program's thread, which runs small batches inline, then runs its kernels on one thread),
# else the program's thread (sync mode); the compiler thread's warm-up calls run on one thread too.
_worker_seen = False


def set_threads(n: int) -> None:
    """Run parallel kernels on at most `n` threads (1: every kernel serial)."""
    global _threads
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"set_threads: expected a positive int, got {n!r}")
    was = parallel()
    _threads = n
    if parallel() != was:
        for callback in _on_change:
            callback()


def get_threads(allowed_only: bool = True) -> int:
    """The thread count parallel kernels use (1 where they cannot run in parallel, unless not `allowed_only`:
    then the count set)."""
    return _threads if not allowed_only or parallel() else 1


def enter() -> int:
    """Before a parallel kernel on this thread: the threads it may use now, set as numba's count (which numba
    keeps per thread): none beyond the cores other processes left free, as for BLAS (vm/blas_threads.py), and on a
    stream's worker one core fewer while the program's thread issues ops (no thread waits for the stream). A
    parallel loop waits for its slowest thread: with two busy processes beside it, a GELU on both cores took 8 ms
    where one core takes 0.4. (The worker's cut, A/B in one process: the tiny GPT's step 0.94-0.98x, the LM's
    within noise; it had measured no better while the program's thread still waited for the GIL at its index
    checks, see ops/scatter.computed_values.) The slices a kernel splits its work in stay fixed by the thread count
    set: the same bits on any number of threads."""
    global _worker_seen
    count = _threads
    stream = getattr(_thread, "stream", None)
    if stream is not None:
        _worker_seen = True
        if not stream._waiters:
            count = min(count, CORES - 1)
    elif _worker_seen:
        count = 1  # once a stream's worker runs kernels, it alone starts teams (see _worker_seen)
    busy = others_busy()
    if busy >= 0.5:
        count = min(count, CORES - round(busy))
    count = max(count, 1)
    if getattr(_applied, "count", 0) != count:
        import numba
        numba.set_num_threads(min(count, numba.config.NUMBA_NUM_THREADS))
        _applied.count = count
    return count


def serial_here() -> None:
    """Run this thread's parallel loops on one thread (a thread that only warms kernels up: no pool of its own)."""
    if getattr(_applied, "count", 0) != 1:
        import numba
        numba.set_num_threads(1)
        _applied.count = 1


def _safe_layer() -> bool:
    # numba picks tbb, then omp, then workqueue; only the first two are safe for concurrent callers
    import importlib

    import numba
    from numba.np.ufunc import parallel as numba_parallel
    if numba_parallel._is_initialized:  # the program's own numba code started a pool already
        return numba.threading_layer() in ("omp", "tbb")
    # (GNU OpenMP's own spin before its threads sleep is kept, as torch's: with 10k rounds instead of its 300k the
    # GPT step took 24 instead of 30 ms of CPU, but on this virtual machine a core left idle is woken on the next
    # 4 ms tick, and steps spread over 12-16 ms where they held at 15.4-15.9)
    for pool in ("tbbpool", "omppool"):
        try:
            importlib.import_module(f"numba.np.ufunc.{pool}")
        except Exception:  # noqa: BLE001 - the library is missing or does not load: try the next
            continue
        if numba.config.THREADING_LAYER == "default":
            numba.config.THREADING_LAYER = "threadsafe"
        return numba.config.THREADING_LAYER in ("threadsafe", "safe", "omp", "tbb")
    return False


def parallel() -> bool:
    """Whether kernels may use their parallel variants in this process now. Before numba is loaded the
    answer is optimistic (the threading layer is checked once numba is there: a parallel kernel is only
    called after `parallel()` said yes with numba loaded, see codegen.launch_compiled)."""
    global _layer_ok
    if _threads <= 1 or _forked:
        return False
    if _layer_ok is None:
        if "numba" not in sys.modules:
            return True
        _layer_ok = _safe_layer()
        if not _layer_ok:
            for callback in _on_change:
                callback()
    return _layer_ok


# -- other processes' load ----------------------------------------------------------------------
SAMPLE_S = 0.5  # how often the load is re-read
_HZ = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
_sample = [0.0, 0, 0, 0.0]  # when, the machine's busy ticks, this process's ticks, others' busy cores; None: no /proc


def _ticks() -> tuple:
    """(busy ticks of the whole machine, steal included; this process's user + system ticks)."""
    with open("/proc/stat", "rb") as f:
        fields = [int(v) for v in f.readline().split()[1:9]]  # user nice system idle iowait irq softirq steal
    with open("/proc/self/stat", "rb") as f:
        own = f.read()
    own_fields = own[own.rindex(b")") + 2:].split()  # (the command name may hold spaces)
    return sum(fields) - fields[3] - fields[4], int(own_fields[11]) + int(own_fields[12])


def others_busy() -> float:
    """The cores other processes kept busy over the last sample (re-read at most every SAMPLE_S; 0 where
    the machine does not tell)."""
    global _sample
    sample = _sample
    if sample is None:
        return 0.0
    now = time.monotonic()
    if now - sample[0] < SAMPLE_S:
        return sample[3]
    try:
        busy, own = _ticks()
    except (OSError, ValueError, IndexError):
        _sample = None
        return 0.0
    others = 0.0
    if sample[0]:
        others = max((busy - sample[1]) - (own - sample[2]), 0) / ((now - sample[0]) * _HZ)
    _sample = [now, busy, own, others]
    return others


# -- which variant a kernel runs -------------------------------------------------------------
PARALLEL_ELEMENTS = 1 << 15  # from this many elements a kernel goes parallel (torch's grain size)


def wide(elements: int) -> bool:
    """Whether a kernel over `elements` elements should take its parallel variant (then call `enter()`)."""
    return elements >= PARALLEL_ELEMENTS and parallel()


def pick(elements: int, serial, threaded):
    """The variant of a kernel over `elements` elements to call now: `threaded` (this thread's count entered) where
    it should split over threads, else `serial`."""
    if wide(elements):
        enter()
        return threaded
    return serial


def on_change(callback) -> None:
    """Run `callback` whenever parallel kernels are switched on or off (set_threads, a forked child)."""
    _on_change.append(callback)


def _after_fork_in_child() -> None:
    global _forked
    was = parallel() if _layer_ok else False
    _forked = True
    if was:
        for callback in _on_change:
            callback()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)

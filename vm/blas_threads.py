"""How many threads the BLAS under NumPy may use: fewer while something else needs a core.

OpenBLAS's threaded GEMM synchronizes its threads once per block; when one of them waits for a
core, a product runs many times slower than on fewer threads. Three things lower the count:
- the compiler (vm/codegen.py) holds one thread while it works: the first 20 steps of the tiny GPT
  took 13-15 s with one BLAS thread and 50-95 s with two while kernels compiled beside them;
- a product on a stream's worker thread while the program's thread issues ops (async mode) holds one
  thread fewer than the default (`hold_for_product`): the worker's BLAS threads and the issuing thread were
  one runnable thread more than cores. On the project's 2-core machine with another process busy, the
  tiny GPT's products averaged 5.2 ms on the worker against 0.2-0.6 ms alone, and its step time varied
  5x from run to run; on a quiet machine the rule moves the training steps by a few percent either way.
  A product while the program waits for the worker (a sync point), or on the program's own thread
  (sync mode, batches run at the call), keeps every thread;
- other processes: a product runs on no more threads than the cores other processes left free over the
  last half second (Linux's /proc: their busy time and the hypervisor's steal). With two other
  processes busy on the 2-core machine, the tiny GPT's products took 8.4 ms on two threads (its step
  470 ms, torch's 32 ms); a DataLoader's worker processes load a machine the same way.
BLAS runs on the fewest threads any holder asks for. The count is the library's global setting: the
program's own NumPy products made meanwhile use it too. Where NumPy links another BLAS (Accelerate,
MKL) nothing is found and holds change nothing. `TIDAL_BLAS_WORKER_THREADS` sets the worker count.
"""
from __future__ import annotations

import ctypes
import glob
import os
import threading
import time

from . import intra_op
from .intra_op import CORES as _CORES, _thread, others_busy

_SETTERS = ("scipy_openblas_set_num_threads64_", "scipy_openblas_set_num_threads", "openblas_set_num_threads64_",
            "openblas_set_num_threads")
_lock = threading.Lock()
_holds: list = []  # the thread counts holders asked for
_setter = None  # the BLAS library's thread-count setter; False where none was found
_default = 0    # its thread count before the first hold


def _find_setter():
    # NumPy's wheels bundle OpenBLAS in numpy.libs (Linux) or numpy/.dylibs (macOS)
    import numpy
    root = os.path.dirname(numpy.__file__)
    for path in glob.glob(os.path.join(root + ".libs", "*openblas*")) + glob.glob(os.path.join(root, ".dylibs", "*openblas*")):
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for name in _SETTERS:
            setter = getattr(lib, name, None)
            if setter is not None:
                getter = getattr(lib, name.replace("set_", "get_"), None)
                return setter, (getter() if getter is not None else os.cpu_count() or 1)
    return False, 0


def _found() -> bool:
    """Whether there is a BLAS thread count to steer (looked up once; call under _lock)."""
    global _setter, _default
    if _setter is None:
        _setter, _default = _find_setter()
    return bool(_setter)


def hold(threads: int = 1) -> None:
    """Run BLAS on at most `threads` threads until the matching `release(threads)`."""
    with _lock:
        _found()
        _holds.append(threads)
        if _setter:
            _setter(max(min(_holds), 1))


def release(threads: int = 1) -> None:
    """End one `hold(threads)`; BLAS gets back the fewest threads still held, else its default."""
    with _lock:
        _holds.remove(threads)
        if _setter:
            _setter(max(min(_holds), 1) if _holds else _default)


def issuer_running() -> bool:
    """Whether this thread is a stream's worker while no thread waits for that stream: the program's own
    thread is then busy issuing ops, and a product leaves it a core. At a sync point it waits, and products may use
    every core."""
    stream = getattr(_thread, "stream", None)
    return stream is not None and not stream._waiters


def hold_for_product() -> int | None:
    """Before a BLAS call: hold fewer threads than the default where they would wait for a core (one
    fewer on a stream's worker while the program's thread issues ops; no more than other processes left
    cores free); the count held (give it to `release` after the call), or None."""
    if _setter is None:
        with _lock:
            _found()
    if not _setter:
        return None
    threads = _default
    if intra_op.parallel():
        # kernels run on numba's threads (vm/intra_op.py): OpenBLAS's own pool, woken by a product here, would spin
        # beside them for a tenth of a second and stall their loops (a product beside it took 10x its time)
        threads = 1
    elif issuer_running():
        threads = int(os.environ.get("TIDAL_BLAS_WORKER_THREADS", max(_default - 1, 1)))
    threads = max(min(threads, _CORES - round(others_busy())), 1)
    if threads >= _default:
        return None
    hold(threads)
    return threads

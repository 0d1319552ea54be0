"""Matrix products on a VM worker thread leave a core to the thread that issues ops.

In async mode a stream's worker thread runs kernels while the program's own thread goes on issuing ops
in Python. A product NumPy hands to OpenBLAS runs on as many threads as there are cores: with the
program's thread that is one runnable thread more than cores. OpenBLAS's threads synchronise once per
block, so each wait for a core stalls the whole product: on this project's 2-core machine, with another
process busy, the tiny GPT's products averaged 5.2 ms on the worker against 0.2-0.6 ms alone, and its step
time varied 5x from run to run. On a quiet machine the rule changes the training steps by a few percent
either way (a per-step sync lets products at the sync use every thread). A product on a worker thread
therefore runs on one thread fewer (at least one; `TIDAL_BLAS_WORKER_THREADS` sets the count) while
the program's thread runs; a product run while the program waits for the worker (a sync point), or on
the program's own thread (sync mode, batches run at the call), keeps them all. The count is OpenBLAS's
global setting, changed for the product and restored after it: the program's own NumPy products made
at that moment use it too. Found through ctypes in the OpenBLAS that NumPy's wheels bundle; with another
BLAS nothing changes.
"""
from __future__ import annotations

import ctypes
import glob
import os

import numpy as np

from ..vm.machine import issuer_running

_control = None  # (get, set, count for workers) once looked up; () when there is no OpenBLAS to steer


def _lookup() -> tuple:
    global _control
    _control = ()
    root = os.path.dirname(np.__file__)
    for path in glob.glob(os.path.join(root, "..", "numpy.libs", "*openblas*")) + \
            glob.glob(os.path.join(root, ".dylibs", "*openblas*")):
        try:
            lib = ctypes.CDLL(path)  # already loaded by NumPy: the same library
        except OSError:
            continue
        for name in ("scipy_openblas{}64_", "openblas{}64_", "openblas{}"):
            get = getattr(lib, name.format("_get_num_threads"), None)
            put = getattr(lib, name.format("_set_num_threads"), None)
            if get is not None and put is not None:
                default = get()
                want = int(os.environ.get("TIDAL_BLAS_WORKER_THREADS", max(default - 1, 1)))
                _control = (get, put, want)
                return _control
    return _control


def enter() -> int | None:
    """Before a product: on a worker thread while the program's thread runs, lower OpenBLAS's thread count;
    the count to restore, or None."""
    if not issuer_running():
        return None
    control = _control if _control is not None else _lookup()
    if not control:
        return None
    get, put, want = control
    have = get()
    if have <= want:
        return None
    put(want)
    return have


def leave(saved: int | None) -> None:
    """After the product: give OpenBLAS back the count `enter` found."""
    if saved is not None:
        _control[1](saved)

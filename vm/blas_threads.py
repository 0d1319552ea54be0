"""How many threads the BLAS under NumPy may use, lowered while another process holds a core.

OpenBLAS's threaded GEMM synchronizes its threads once per block; when one of them waits for a
core (the compile process is busy, or the machine is loaded) a product runs many times slower
than on one thread: the first 20 steps of the tiny GPT took 13-15 s with one BLAS thread and
50-95 s with two while kernels compiled beside them. The compiler `hold()`s one thread while it works.
"""
from __future__ import annotations

import ctypes
import glob
import os
import threading

_SETTERS = ("scipy_openblas_set_num_threads64_", "scipy_openblas_set_num_threads", "openblas_set_num_threads64_",
            "openblas_set_num_threads")
_lock = threading.Lock()
_holders = 0
_setter = None  # the BLAS library's thread-count setter; False where none was found
_default = 0    # its thread count before the first hold


def _find_setter():
    # NumPy's wheels bundle OpenBLAS in numpy.libs (Linux) or numpy/.dylibs (macOS); where NumPy
    # links another BLAS (Accelerate, MKL) nothing is found and holds change nothing
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


def hold() -> None:
    """Run BLAS on one thread until the matching `release()`."""
    global _holders, _setter, _default
    with _lock:
        if _setter is None:
            _setter, _default = _find_setter()
        _holders += 1
        if _holders == 1 and _setter:
            _setter(1)


def release() -> None:
    """End one `hold()`; BLAS gets its threads back when none is left."""
    global _holders
    with _lock:
        _holders -= 1
        if _holders == 0 and _setter:
            _setter(_default)

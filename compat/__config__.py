"""torch.__config__: what this build is made of and how it runs in parallel (bug-report scripts print them)."""
from __future__ import annotations

import os
import platform
import sys

from ._runtime import get_num_interop_threads
from ._runtime import get_num_threads

__all__ = ["show", "parallel_info", "cxx_flags"]


def show() -> str:
    """How tidal is built: the Python, NumPy and Numba it runs on (tidal has no C++ build)."""
    import numpy
    lines = ["tidal (an eager runtime with PyTorch's API) built with:",
             f"  - Python {platform.python_version()} ({sys.platform})", f"  - NumPy {numpy.__version__}"]
    try:
        from importlib.metadata import version
        lines.append(f"  - Numba {version('numba')}")
    except Exception:  # noqa: BLE001 - numba's metadata is optional here
        pass
    return "\n".join(lines) + "\n"


def parallel_info() -> str:
    """Threads: tidal's intra-op and inter-op counts, the machine's, and the environment variables torch lists."""
    env = "".join(f"\t{k} : {os.environ.get(k, '[not set]')}\n" for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"))
    return (f"ATen/Parallel:\n\tat::get_num_threads() : {get_num_threads()}\n"
            f"\tat::get_num_interop_threads() : {get_num_interop_threads()}\n"
            f"std::thread::hardware_concurrency() : {os.cpu_count()}\nEnvironment variables:\n{env}"
            "ATen parallel backend: tidal VM workers\n")


def cxx_flags() -> str:
    """The C++ flags of the build (tidal has none)."""
    return ""

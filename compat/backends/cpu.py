"""torch.backends.cpu: the vector instruction set kernels may use."""
from __future__ import annotations

__all__ = ["get_cpu_capability"]


def get_cpu_capability() -> str:
    """'AVX512', 'AVX2' or 'DEFAULT', from the CPU's flags (/proc/cpuinfo where there is one)."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((line.split(":", 1)[1].split() for line in f if line.startswith("flags")), [])
    except OSError:
        flags = []
    if "avx512f" in flags and "avx512bw" in flags:
        return "AVX512"
    return "AVX2" if "avx2" in flags else "DEFAULT"

"""torch.backends.cudnn: settable flags; cuDNN is never available under tidal."""
from __future__ import annotations

import contextlib
from typing import Iterator

enabled = True
benchmark = False
benchmark_limit = 10
deterministic = False
allow_tf32 = True


def is_available() -> bool:
    """False: tidal does not use cuDNN."""
    return False


def version() -> None:
    """None: no cuDNN library is loaded."""
    return None


def is_acceptable(tensor) -> bool:
    """False: no tensor can use cuDNN."""
    return False


@contextlib.contextmanager
def flags(enabled: bool = False, benchmark: bool = False, benchmark_limit: int = 10, deterministic: bool = False,
          allow_tf32: bool = True, fp32_precision: str = "none", depthwise_kernel: str = "auto") -> Iterator[None]:
    """Set the flags inside a `with` block and restore them after (the last two are accepted and ignored)."""
    names = ("enabled", "benchmark", "benchmark_limit", "deterministic", "allow_tf32")
    module = globals()
    saved = {name: module[name] for name in names}
    module.update(zip(names, (enabled, benchmark, benchmark_limit, deterministic, allow_tf32)))
    try:
        yield
    finally:
        module.update(saved)

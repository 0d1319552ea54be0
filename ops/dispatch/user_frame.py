"""Where a warning points: the user's line that called into tidal.

Ops are reached through wrappers of varying depth (the public-function wrapper, `out=` handling, autocast,
Tensor methods calling functions), so a fixed `stacklevel` points into tidal on some paths; torch's warnings
point at the user's call on all of them.
"""
from __future__ import annotations

import sys

__all__ = ["user_stacklevel"]


def user_stacklevel() -> int:
    """The `stacklevel` (for warnings.warn called by the caller of this function) of the first frame outside
    tidal."""
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_globals.get("__name__", "").startswith("tidal."):
        frame, level = frame.f_back, level + 1
    return level

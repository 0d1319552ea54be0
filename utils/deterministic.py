"""torch.utils.deterministic: `fill_uninitialized_memory` (default True), read by tidal's factories while
use_deterministic_algorithms(True) is in force (ops/factories/uninitialized.py)."""
from __future__ import annotations

import sys
import types

from ..ops.factories import uninitialized

__all__ = ["fill_uninitialized_memory"]


class _DeterministicModule(types.ModuleType):
    """The module, with `fill_uninitialized_memory` a property over the factories' switch (as torch's)."""

    @property
    def fill_uninitialized_memory(self) -> bool:
        """Whether deterministic mode fills uninitialized memory (NaN, the integer maximum, True)."""
        return uninitialized.STATE["fill"]

    @fill_uninitialized_memory.setter
    def fill_uninitialized_memory(self, mode: bool) -> None:
        if not isinstance(mode, bool):
            raise RuntimeError(f"expected a bool, but got {type(mode).__name__}")
        uninitialized.STATE["fill"] = mode


sys.modules[__name__].__class__ = _DeterministicModule

"""tidal.fx.passes.infra: the pass interface (PassBase, PassResult) and PassManager (torch.fx.passes.infra)."""
from __future__ import annotations

from . import pass_base, pass_manager

__all__ = ["pass_base", "pass_manager"]

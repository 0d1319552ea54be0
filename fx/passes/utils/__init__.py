"""tidal.fx.passes.utils: the match record subgraph rewriting hands to filters (matcher_utils.InternalMatch)."""
from __future__ import annotations

from . import matcher_utils

__all__ = ["matcher_utils"]

"""tidal.fx.passes.utils: the match record subgraph rewriting hands to filters (matcher_utils.InternalMatch),
and partitioners' helpers (common: HolderModule, lift_subgraph_as_module)."""
from __future__ import annotations

from . import common, matcher_utils
from .common import HolderModule, lift_subgraph_as_module

__all__ = ["common", "matcher_utils", "HolderModule", "lift_subgraph_as_module"]

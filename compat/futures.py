"""torch.futures: Future, collect_all and wait_all (tidal.utils.futures)."""
from ..utils.futures import Future, collect_all, wait_all

__all__ = ["Future", "collect_all", "wait_all"]

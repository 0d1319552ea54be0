"""tidal.utils: the data-loading library (tidal.utils.data)."""
from . import data, hooks

__all__ = ["data", "hooks"]

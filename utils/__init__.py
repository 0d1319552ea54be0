"""tidal.utils: the data-loading library (tidal.utils.data)."""
from . import data

__all__ = ["data"]

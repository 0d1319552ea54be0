"""tidal.utils: the data-loading library (tidal.utils.data)."""
from . import data, hooks
from .tensor_swap import swap_tensors

__all__ = ["data", "hooks", "swap_tensors"]

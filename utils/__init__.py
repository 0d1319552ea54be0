"""tidal.utils: the data-loading library (tidal.utils.data)."""
from . import data, hooks, hub, model_zoo
from .tensor_swap import swap_tensors

__all__ = ["data", "hooks", "hub", "model_zoo", "swap_tensors"]

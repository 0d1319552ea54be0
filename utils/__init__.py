"""tidal.utils: the data-loading library (tidal.utils.data)."""
from . import _pytree, data, dlpack, hooks, hub, model_zoo  # (torch.utils._pytree/.dlpack: loaded with torch)
from .tensor_swap import swap_tensors

__all__ = ["data", "dlpack", "hooks", "hub", "model_zoo", "swap_tensors"]

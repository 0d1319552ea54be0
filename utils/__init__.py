"""tidal.utils: the data-loading library (tidal.utils.data)."""
# (torch.utils._pytree/.dlpack: loaded with torch)
from . import _pytree, data, deterministic, dlpack, hooks, hub, model_zoo
from .tensor_swap import swap_tensors

__all__ = ["data", "deterministic", "dlpack", "hooks", "hub", "model_zoo", "swap_tensors"]

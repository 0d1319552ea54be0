"""torch.masked: the masked reductions of tidal.ops.masked_reductions under PyTorch's names."""
from __future__ import annotations

from ..ops import masked_reductions as _reductions
from ..ops.masked_reductions import MASKED

__all__ = list(MASKED)
globals().update({_name: getattr(_reductions, _name) for _name in __all__})

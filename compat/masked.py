"""torch.masked: the masked reductions of tidal.ops.reductions.masked under PyTorch's names."""
from __future__ import annotations

from ..ops.reductions import masked as _reductions
from ..ops.reductions.masked import MASKED

__all__ = list(MASKED)
globals().update({_name: getattr(_reductions, _name) for _name in __all__})

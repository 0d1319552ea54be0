"""torch.special: the special functions of tidal.ops.special_functions under PyTorch's names."""
from __future__ import annotations

from ..ops import special_functions as _functions
from ..ops.special_functions import SPECIAL

__all__ = list(SPECIAL)
globals().update({_name: getattr(_functions, _name) for _name in __all__})

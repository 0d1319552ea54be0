"""torch.special: the special functions of tidal.ops.special_functions under PyTorch's names."""
from __future__ import annotations

from ..ops import special_functions as _functions
from ..ops.out_args import with_out
from ..ops.special_functions import SPECIAL

__all__ = list(SPECIAL)
# torch.special's functions all take out=: those whose tidal op has none get it (result cast to out's dtype)
globals().update({_name: with_out(_name, getattr(_functions, _name), "cast") for _name in __all__})

"""torch.special: the special functions of tidal.ops.elementwise.special_functions under PyTorch's names."""
from __future__ import annotations

from ..ops.elementwise import special_functions as _functions
from ..ops.dispatch.out_args import with_out
from ..ops.elementwise.special_functions import SPECIAL

__all__ = list(SPECIAL)
# torch.special's functions all take out=: those whose tidal op has none get it (result cast to out's dtype)
globals().update({_name: with_out(_name, getattr(_functions, _name), "cast") for _name in __all__})

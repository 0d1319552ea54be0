"""torch.__future__: the module-conversion switches (kept in nn/future_flags.py, which nn.Module reads)."""
from __future__ import annotations

from ..nn.future_flags import (get_overwrite_module_params_on_conversion, get_swap_module_params_on_conversion,
                               set_overwrite_module_params_on_conversion, set_swap_module_params_on_conversion)

__all__ = ["set_overwrite_module_params_on_conversion", "get_overwrite_module_params_on_conversion",
           "set_swap_module_params_on_conversion", "get_swap_module_params_on_conversion"]

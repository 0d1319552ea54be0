"""torch.__future__'s switches for behaviour torch will change, read by nn.Module's conversions (to, cuda, half...)."""
from __future__ import annotations

__all__ = ["set_overwrite_module_params_on_conversion", "get_overwrite_module_params_on_conversion",
           "set_swap_module_params_on_conversion", "get_swap_module_params_on_conversion"]

_FLAGS = {"overwrite": False, "swap": False}


def set_overwrite_module_params_on_conversion(value: bool) -> None:
    """Whether a module's conversions give it new Parameter objects (instead of converting them in place)."""
    _FLAGS["overwrite"] = value


def get_overwrite_module_params_on_conversion() -> bool:
    """See set_overwrite_module_params_on_conversion."""
    return _FLAGS["overwrite"]


def set_swap_module_params_on_conversion(value: bool) -> None:
    """Whether conversions swap each parameter's contents with its converted copy (utils.swap_tensors), keeping
    the Parameter object (tidal keeps it in every case unless overwrite is set)."""
    _FLAGS["swap"] = value


def get_swap_module_params_on_conversion() -> bool:
    """See set_swap_module_params_on_conversion."""
    return _FLAGS["swap"]

"""tidal.nn: modules, parameters, containers, the functional layer, initializers and utilities."""
from __future__ import annotations

from . import attention, common_types, functional, grad, init, utils
from .containers import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential
from .module import Module
from .modules import *  # noqa: F401,F403
from .modules import __all__ as _modules_all
from .parameter import Buffer, Parameter

__all__ = ["Module", "Parameter", "Buffer", "Sequential", "ModuleList", "ModuleDict", "ParameterList",
           "ParameterDict", "attention", "common_types", "factory_kwargs", "functional", "grad", "init", "utils", "parallel"] + list(_modules_all)


def factory_kwargs(kwargs: dict | None) -> dict:
    """The factory arguments (device, dtype, memory_format) in `kwargs`, merged with its `factory_kwargs`."""
    if kwargs is None:
        return {}
    simple = {"device", "dtype", "memory_format"}
    unexpected = kwargs.keys() - (simple | {"factory_kwargs"})
    if unexpected:
        raise TypeError(f"unexpected kwargs {unexpected}")
    out = dict(kwargs.get("factory_kwargs", {}))
    for key in simple & kwargs.keys():
        if key in out:
            raise TypeError(f"{key} specified twice, in **kwargs and in factory_kwargs")
        out[key] = kwargs[key]
    return out


def __getattr__(name: str):
    # tidal.nn.parallel imports the comm package: load it on first use
    if name == "parallel":
        import importlib
        module = importlib.import_module(".parallel", __name__)  # nn.parallel (it loads comm) on first use
        globals()[name] = module
        return module
    raise AttributeError(f"module 'tidal.nn' has no attribute '{name}'")

"""tidal.nn: modules, parameters, containers, the functional layer, initializers and utilities."""
from __future__ import annotations

from . import attention, functional, grad, init, utils
from .containers import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential
from .module import Module
from .modules import *  # noqa: F401,F403
from .modules import __all__ as _modules_all
from .parameter import Buffer, Parameter

__all__ = ["Module", "Parameter", "Buffer", "Sequential", "ModuleList", "ModuleDict", "ParameterList",
           "ParameterDict", "attention", "functional", "grad", "init", "utils", "parallel"] + list(_modules_all)


def __getattr__(name: str):
    # tidal.nn.parallel imports the comm package: load it on first use
    if name == "parallel":
        import importlib
        module = importlib.import_module(".parallel", __name__)
        globals()[name] = module
        return module
    raise AttributeError(f"module 'tidal.nn' has no attribute '{name}'")

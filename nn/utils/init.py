"""torch.nn.utils.init: skip_init, a module built without its initialization mattering."""
from __future__ import annotations

import inspect

from ..module import Module

__all__ = ["skip_init"]


def skip_init(module_cls, *args, **kwargs):
    """Instantiate `module_cls(*args, **kwargs)` whose parameter values are left unspecified.

    torch builds it on the meta device and allocates empty storage; tidal has no meta device, so
    the module is built on the target device directly (its values are whatever construction made,
    which torch's contract, 'uninitialized', allows)."""
    if not (isinstance(module_cls, type) and issubclass(module_cls, Module)):
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    kwargs["device"] = kwargs.get("device", "cpu")
    return module_cls(*args, **kwargs)

"""The op library: each op declared once, dispatched at the call, run as VM instructions.

Every module here exports its public functions in `__all__` and the Tensor methods it
defines in `METHODS`; this file binds the methods onto Tensor.
"""
from __future__ import annotations

from ..tensor import Tensor
from . import (activations, conv, conversion, creation, indexing, linalg, math_api, pool, random, reduce, scan,
               shape_ops, sorting, views)
from . import extra  # last: it builds on reduce, linalg and the rest

MODULES = (math_api, conversion, creation, views, shape_ops, reduce, scan, linalg, sorting, indexing, random,
           activations, conv, pool, extra)

__all__: list = []
for _mod in MODULES:
    for _name in _mod.__all__:
        globals()[_name] = getattr(_mod, _name)
    __all__ += list(_mod.__all__)
    for _name, _fn in _mod.METHODS.items():
        setattr(Tensor, _name, _fn)

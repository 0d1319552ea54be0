"""torch.utils.swap_tensors: two tensor objects exchange everything they are (data, dtype, device, autograd
state, Python attributes and class), so every reference to one now sees the other's contents."""
from __future__ import annotations

import weakref

from ..tensor import Tensor

__all__ = ["swap_tensors"]

_UNSET = object()
_SLOTS = ("_v", "dtype", "device", "_vm", "_retains_grad", "_hooks", "_name")


def swap_tensors(t1: Tensor, t2: Tensor) -> None:
    """Swap the contents of `t1` and `t2` in place (torch's refusals: non-tensors, weak references)."""
    if not isinstance(t1, Tensor) or not isinstance(t2, Tensor):
        raise TypeError(f"Expected (t1, t2) to be Tensors, but got ({type(t1).__name__}, {type(t2).__name__})")
    for name, t in (("t1", t1), ("t2", t2)):
        if weakref.getweakrefcount(t):
            raise RuntimeError(f"Cannot swap {name} because it has weakref associated with it")
    if t1 is t2:
        return
    for name in _SLOTS:
        a, b = getattr(t1, name, _UNSET), getattr(t2, name, _UNSET)
        for t, value in ((t1, b), (t2, a)):
            if value is _UNSET:
                try:
                    delattr(t, name)
                except AttributeError:
                    pass
            else:
                setattr(t, name, value)
    d1, d2 = dict(t1.__dict__), dict(t2.__dict__)
    t1.__dict__.clear()
    t1.__dict__.update(d2)
    t2.__dict__.clear()
    t2.__dict__.update(d1)
    if type(t1) is not type(t2):
        t1.__class__, t2.__class__ = type(t2), type(t1)

"""Tensors in a graph for forward AD's sake alone (`_fw_only`): `requires_grad` reports False for them, as torch's.

Kept here, below forward_ad and function (both mark such tensors), weakly: once the last dual level exits they become
plain tensors (requires_grad False, no grad_fn), so later ops on them record nothing.
"""
from __future__ import annotations

import weakref

from ..tensor import Tensor

_marked: list = []  # weak references to the tensors marked while levels are live


def mark_fw_only(t: Tensor) -> None:
    """Mark `t` as in a graph for forward AD's sake alone: `requires_grad` reports False, as torch's."""
    t.__dict__["_fw_only"] = True
    _marked.append(weakref.ref(t))
    if len(_marked) >= 4096 and not len(_marked) & 4095:  # a long level: forget the tensors already freed
        _marked[:] = [ref for ref in _marked if ref() is not None]


def unmark_all() -> None:
    """Make every marked tensor still alive a plain tensor (the last dual level exited)."""
    marked = _marked[:]
    _marked.clear()
    for ref in marked:
        t = ref()
        if t is not None and t.__dict__.pop("_fw_only", None):
            for key in ("_requires_grad", "grad_fn", "_output_nr", "_fw_levels"):  # (class defaults: a leaf)
                t.__dict__.pop(key, None)

"""Operands a Tensor's Python operators do not take: torch's binary operators turn the op's TypeError into
NotImplemented, so Python tries the reflected method and then gives its own error ("unsupported operand
type(s) for +: 'Tensor' and 'str'"), or falls back to identity for == and != (`t == None` is False, so
`t in [None, t]` works). A NumPy array operand then goes to NumPy, whose result `Tensor.__array_wrap__` makes a
tensor again (`t + np.ones(2)` is a float64 tensor in torch); torch's == alone reads the array as a tensor."""
from __future__ import annotations

import numpy as np

from ...tensor import Tensor
from ..factories.from_data import as_tensor

__all__ = ["operand_not_implemented"]


def operand_not_implemented(fn, arrays: bool = False):
    """`fn(self, other)` as a binary operator: NotImplemented where it raises TypeError (with `arrays`, a NumPy
    array operand is read as a tensor first). An unbound call on something that is not a Tensor keeps its
    error (torch's descriptor check comes first)."""
    def method(self, other):
        if not isinstance(self, Tensor):
            return fn(self, other)
        try:
            return fn(self, other)
        except TypeError:
            if arrays and isinstance(other, np.ndarray):
                return fn(self, as_tensor(other))
            return NotImplemented
    method.__name__ = method.__qualname__ = getattr(fn, "__name__", "operator")
    method.__doc__ = fn.__doc__
    return method

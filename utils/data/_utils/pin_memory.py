"""torch.utils.data._utils.pin_memory: page-locking a batch's tensors, walking its structure as collation does."""
from __future__ import annotations

import collections.abc
import copy

__all__ = ["pin_memory"]


def pin_memory(data: object, device: object = None) -> object:
    """`data` with every tensor (anything with `pin_memory`) pinned; containers keep their types."""
    if hasattr(data, "pin_memory"):
        return data.pin_memory()
    if isinstance(data, (str, bytes)):
        return data
    if isinstance(data, collections.abc.Mapping):
        pinned = {k: pin_memory(v, device) for k, v in data.items()}
        try:
            if isinstance(data, collections.abc.MutableMapping):
                clone = copy.copy(data)  # (the mapping may carry more than its items)
                clone.update(pinned)
                return clone
            return type(data)(pinned)
        except TypeError:
            return pinned
    if isinstance(data, tuple):
        if hasattr(data, "_fields"):  # a namedtuple
            return type(data)(*(pin_memory(v, device) for v in data))
        return type(data)(pin_memory(v, device) for v in data)
    if isinstance(data, collections.abc.Sequence):
        pinned = [pin_memory(v, device) for v in data]
        try:
            if isinstance(data, collections.abc.MutableSequence):
                clone = copy.copy(data)
                for i, v in enumerate(pinned):
                    clone[i] = v
                return clone
            return type(data)(pinned)
        except TypeError:
            return pinned
    return data

"""torch.utils.data._utils.pin_memory: page-locking a batch's tensors, walking its structure as collation does."""
from __future__ import annotations

import collections.abc

from .._collate import _rebuild_mapping, _rebuild_sequence

__all__ = ["pin_memory"]


def pin_memory(data: object, device: object = None) -> object:
    """`data` with every tensor (anything with `pin_memory`) pinned; containers keep their types."""
    if hasattr(data, "pin_memory"):
        return data.pin_memory()
    if isinstance(data, (str, bytes)):
        return data
    if isinstance(data, collections.abc.Mapping):
        return _rebuild_mapping(data, {k: pin_memory(v, device) for k, v in data.items()})
    if isinstance(data, tuple):
        if hasattr(data, "_fields"):  # a namedtuple
            return type(data)(*(pin_memory(v, device) for v in data))
        return type(data)(pin_memory(v, device) for v in data)
    if isinstance(data, collections.abc.Sequence):
        return _rebuild_sequence(data, [pin_memory(v, device) for v in data])
    return data

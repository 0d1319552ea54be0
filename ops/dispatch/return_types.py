"""Named-tuple results (max, sort, topk, median...): one class per op, printing like torch.return_types.<op>.

`return_type("sort", ("values", "indices"))` makes the class once; asking again returns the same
class. The classes are attributes of this module (`return_types.sort`), so results pickle.
"""
from __future__ import annotations

import collections

from ...tensor import dtype as _dt

_TYPES: dict = {}


def _repr(self) -> str:
    body = ",\n".join(f"{field}={value!r}" for field, value in zip(self._fields, self))
    return f"{_dt.repr_namespace[0]}.return_types.{type(self).__name__}(\n{body})"


def return_type(name: str, fields: tuple = ("values", "indices")) -> type:
    """The namedtuple class `name` with `fields` (made on first use), printing as tidal.return_types.<name>
    (torch.return_types.<name> under compat.install(), as x.dtype does)."""
    cls = _TYPES.get(name)
    if cls is None:
        base = collections.namedtuple(name, fields)
        cls = _TYPES[name] = type(name, (base,), {"__slots__": (), "__repr__": _repr, "__module__": __name__})
    elif cls._fields != tuple(fields):
        raise ValueError(f"return type {name} already has fields {cls._fields}, not {tuple(fields)}")
    return cls


def __getattr__(name: str) -> type:
    # module attributes for the classes made so far (a function, so `max`, `min`... don't shadow builtins here)
    try:
        return _TYPES[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None

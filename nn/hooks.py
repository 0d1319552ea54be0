"""Hook handles, and the result type of load_state_dict."""
from __future__ import annotations

import itertools
from collections import namedtuple

__all__ = ["RemovableHandle", "IncompatibleKeys"]

_handle_ids = itertools.count()


class RemovableHandle:
    """Returned by `register_*_hook`; `remove()` unregisters the hook (also usable as a context)."""

    def __init__(self, *hook_dicts: dict, extra_dict=None):
        self.id = next(_handle_ids)
        extra = () if extra_dict is None else (extra_dict,) if isinstance(extra_dict, dict) else tuple(extra_dict)
        self._dicts = hook_dicts + extra  # (torch's `extra_dict`: tables the hook's id is also removed from)

    def remove(self) -> None:
        """Unregister the hook."""
        for d in self._dicts:
            d.pop(self.id, None)

    def __enter__(self) -> "RemovableHandle":
        return self

    def __exit__(self, *exc) -> None:
        self.remove()


class IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    """The keys `load_state_dict` did not match, as PyTorch reports them."""

    __slots__ = ()

    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return f"_IncompatibleKeys(missing_keys={self.missing_keys}, unexpected_keys={self.unexpected_keys})"

    __str__ = __repr__

"""Give a compat module every public name of the tidal module it stands for."""
from __future__ import annotations

import __future__
from types import ModuleType
from typing import Callable


def mirror(namespace: dict, source: ModuleType) -> Callable[[str], object]:
    """Copy `source`'s public names into `namespace` (names already there win) and return a
    module `__getattr__` that looks up anything added to `source` later."""
    for name in dir(source):
        value = getattr(source, name)
        if name.startswith("_") or name in namespace or isinstance(value, __future__._Feature):
            continue
        namespace[name] = value

    def __getattr__(name: str):
        try:
            if name.startswith("__"):  # never borrow module machinery (__path__ would make this a package)
                raise AttributeError(name)
            return getattr(source, name)
        except AttributeError:
            raise AttributeError(f"module {namespace['__name__']!r} has no attribute {name!r}") from None

    return __getattr__

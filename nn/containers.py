"""Containers: Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict."""
from __future__ import annotations

import operator
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from itertools import chain, islice
from typing import Iterator

from ..tensor import Tensor
from .module import Module, _add_indent
from .parameter import Parameter

__all__ = ["Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict"]


def _abs_index(idx, size: int) -> int:
    """`idx` as a non-negative position, with PyTorch's IndexError when out of range."""
    idx = operator.index(idx)
    if not -size <= idx < size:
        raise IndexError(f"index {idx} is out of range")
    return idx % size if size else idx


def _renumbered(modules: dict) -> dict:
    """The same modules keyed '0', '1', ... in order (after a deletion)."""
    return dict(zip((str(i) for i in range(len(modules))), modules.values()))


class Sequential(Module):
    """Modules called in order, each on the previous one's output."""

    def __init__(self, *args):
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for key, module in args[0].items():
                self.add_module(key, module)
        else:
            for idx, module in enumerate(args):
                self.add_module(str(idx), module)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)(OrderedDict(list(self._modules.items())[idx]))
        return next(islice(self._modules.values(), _abs_index(idx, len(self)), None))

    def __setitem__(self, idx: int, module: Module) -> None:
        key = next(islice(self._modules.keys(), _abs_index(idx, len(self)), None))
        setattr(self, key, module)

    def __delitem__(self, idx) -> None:
        keys = list(self._modules.keys())
        doomed = keys[idx] if isinstance(idx, slice) else [keys[_abs_index(idx, len(self))]]
        for key in doomed:
            delattr(self, key)
        self._modules = _renumbered(self._modules)

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def __add__(self, other: "Sequential") -> "Sequential":
        if not isinstance(other, Sequential):
            raise ValueError(f"add operator supports only objects of Sequential class, but {type(other)} is given.")
        combined = Sequential()
        for module in chain(self, other):
            combined.append(module)
        return combined

    def __iadd__(self, other: "Sequential") -> "Sequential":
        if not isinstance(other, Sequential):
            raise ValueError(f"add operator supports only objects of Sequential class, but {type(other)} is given.")
        return self.extend(other)

    def __mul__(self, other: int) -> "Sequential":
        if not isinstance(other, int):
            raise TypeError(f"unsupported operand type(s) for *: {type(self)} and {type(other)}")
        if other <= 0:
            raise ValueError(f"Non-positive multiplication factor {other} for {type(self)}")
        combined = Sequential()
        for _ in range(other):
            for module in self:
                combined.append(module)
        return combined

    __rmul__ = __mul__

    def append(self, module: Module) -> "Sequential":
        """Add `module` at the end."""
        self.add_module(str(len(self)), module)
        return self

    def insert(self, index: int, module: Module) -> "Sequential":
        """Insert `module` before position `index`."""
        if not isinstance(module, Module):
            raise AssertionError(f"module should be of type: {Module}")
        n = len(self._modules)
        if not -n <= index <= n:
            raise IndexError(f"Index out of range: {index}")
        index = index + n if index < 0 else index
        for i in range(n, index, -1):
            self._modules[str(i)] = self._modules[str(i - 1)]
        self._modules[str(index)] = module
        return self

    def extend(self, sequential: Iterable) -> "Sequential":
        """Append every module of `sequential`."""
        for module in sequential:
            self.append(module)
        return self

    def pop(self, key):
        """Remove and return the module(s) at `key`."""
        value = self[key]
        del self[key]
        return value

    def forward(self, input):
        """Run the modules in order."""
        for module in self:
            input = module(input)
        return input


class ModuleList(Module):
    """A list of modules, registered as children ('0', '1', ...)."""

    def __init__(self, modules: Iterable | None = None):
        super().__init__()
        if modules is not None:
            self += modules

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)(list(self._modules.values())[idx])
        return self._modules[str(_abs_index(idx, len(self)))]

    def __setitem__(self, idx: int, module: Module) -> None:
        setattr(self, str(_abs_index(idx, len(self))), module)

    def __delitem__(self, idx) -> None:
        if isinstance(idx, slice):
            for k in range(len(self._modules))[idx]:
                delattr(self, str(k))
        else:
            delattr(self, str(_abs_index(idx, len(self))))
        self._modules = _renumbered(self._modules)

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def __iadd__(self, modules: Iterable) -> "ModuleList":
        return self.extend(modules)

    def __add__(self, other: Iterable) -> "ModuleList":
        combined = ModuleList()
        for i, module in enumerate(chain(self, other)):
            combined.add_module(str(i), module)
        return combined

    def insert(self, index: int, module: Module) -> None:
        """Insert `module` before position `index`."""
        for i in range(len(self._modules), index, -1):
            self._modules[str(i)] = self._modules[str(i - 1)]
        self._modules[str(index)] = module

    def append(self, module: Module) -> "ModuleList":
        """Add `module` at the end."""
        self.add_module(str(len(self)), module)
        return self

    def pop(self, key):
        """Remove and return the module(s) at `key`."""
        value = self[key]
        del self[key]
        return value

    def extend(self, modules: Iterable) -> "ModuleList":
        """Append every module of `modules`."""
        if not isinstance(modules, Iterable):
            raise TypeError("ModuleList.extend should be called with an iterable, but got " + type(modules).__name__)
        offset = len(self)
        for i, module in enumerate(modules):
            self.add_module(str(offset + i), module)
        return self

    def __repr__(self) -> str:
        # runs of identical children print once, as "(0-2): 3 x Linear(...)"
        reprs = [repr(m) for m in self]
        if not reprs:
            return self._get_name() + "()"
        runs = []  # [first index, last index, repr]
        for i, text in enumerate(reprs):
            if runs and runs[-1][2] == text:
                runs[-1][1] = i
            else:
                runs.append([i, i, text])
        lines = [_add_indent(f"({a}): {text}" if a == b else f"({a}-{b}): {b - a + 1} x {text}", 2)
                 for a, b, text in runs]
        return self._get_name() + "(\n  " + "\n  ".join(lines) + "\n)"


class ModuleDict(Module):
    """An ordered dict of modules, registered as children under their keys."""

    def __init__(self, modules: Mapping | Iterable | None = None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str) -> Module:
        return self._modules[key]

    def __setitem__(self, key: str, module: Module) -> None:
        self.add_module(key, module)

    def __delitem__(self, key: str) -> None:
        del self._modules[key]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def __contains__(self, key: str) -> bool:
        return key in self._modules

    def clear(self) -> None:
        """Remove every module."""
        self._modules.clear()

    def pop(self, key: str) -> Module:
        """Remove and return the module under `key`."""
        value = self[key]
        del self[key]
        return value

    def keys(self):
        """The keys."""
        return self._modules.keys()

    def items(self):
        """(key, module) pairs."""
        return self._modules.items()

    def values(self):
        """The modules."""
        return self._modules.values()

    def update(self, modules) -> None:
        """Add modules from a mapping or an iterable of (key, module) pairs."""
        if not isinstance(modules, Iterable):
            raise TypeError("ModuleDict.update should be called with an iterable of key/value pairs, but got "
                            + type(modules).__name__)
        if isinstance(modules, (Mapping, ModuleDict)):
            for key, module in modules.items():
                self[key] = module
            return
        for j, pair in enumerate(modules):
            if not isinstance(pair, Iterable):
                raise TypeError(f"ModuleDict update sequence element #{j} should be Iterable; is"
                                + type(pair).__name__)
            if len(pair) != 2:
                raise ValueError(f"ModuleDict update sequence element #{j} has length {len(pair)}; 2 is required")
            self[pair[0]] = pair[1]


def _member_line(key, value, type_label) -> str:
    """One line of a ParameterList/ParameterDict repr: '  (k): Parameter containing: [dtype of size 2x3]'."""
    if not isinstance(value, Tensor):
        return f"  ({key}): Object of type: {type(value).__name__}"
    size = "x".join(str(s) for s in value.size())
    where = f" ({value.device})" if value.device.type != "cpu" else ""
    kind = "Parameter" if isinstance(value, Parameter) else "Tensor"
    return f"  ({key}): {kind} containing: [{type_label(value)} of size {size}{where}]"


class ParameterList(Module):
    """A list of parameters, registered under '0', '1', ...; plain tensors become Parameters."""

    def __init__(self, values: Iterable | None = None):
        super().__init__()
        self._size = 0
        if values is not None:
            self += values

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            out = type(self)()
            for i in range(*idx.indices(len(self))):
                out.append(self[i])
            return out
        return getattr(self, str(_abs_index(idx, len(self))))

    def __setitem__(self, idx: int, param) -> None:
        idx = _abs_index(idx, len(self))
        if isinstance(param, Tensor) and not isinstance(param, Parameter):
            param = Parameter(param)
        setattr(self, str(idx), param)

    def __len__(self) -> int:
        return self._size

    def __iter__(self) -> Iterator:
        return (self[i] for i in range(len(self)))

    def __iadd__(self, parameters: Iterable) -> "ParameterList":
        return self.extend(parameters)

    def append(self, value) -> "ParameterList":
        """Add `value` at the end."""
        self._size += 1
        self[self._size - 1] = value
        return self

    def extend(self, values: Iterable) -> "ParameterList":
        """Append every value of `values`."""
        if not isinstance(values, Iterable) or isinstance(values, Tensor):
            raise TypeError("ParameterList.extend should be called with an iterable, but got " + type(values).__name__)
        for value in values:
            self.append(value)
        return self

    def extra_repr(self) -> str:
        return "\n".join(_member_line(k, p, lambda t: repr(t.dtype)) for k, p in enumerate(self))

    def __call__(self, *args, **kwargs):
        raise RuntimeError("ParameterList should not be called.")


class ParameterDict(Module):
    """An ordered dict of parameters, registered under their keys; plain tensors become Parameters."""

    def __init__(self, parameters=None):
        super().__init__()
        self._keys: dict = {}
        if parameters is not None:
            self.update(parameters)

    @staticmethod
    def _attr(key) -> str:
        if not isinstance(key, str):
            raise TypeError("Index given to ParameterDict cannot be used as a key as it is not a string (type is "
                            f"'{type(key).__name__}'). Open an issue on github if you need non-string keys.")
        return key

    def __getitem__(self, key: str):
        return getattr(self, self._attr(key))

    def __setitem__(self, key: str, value) -> None:
        attr = self._attr(key)
        self._keys[key] = None
        if isinstance(value, Tensor) and not isinstance(value, Parameter):
            value = Parameter(value)
        setattr(self, attr, value)

    def __delitem__(self, key: str) -> None:
        del self._keys[key]
        delattr(self, self._attr(key))

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __reversed__(self) -> Iterator[str]:
        return reversed(list(self._keys))

    def __contains__(self, key) -> bool:
        return key in self._keys

    def copy(self) -> "ParameterDict":
        """A shallow copy (same parameter objects)."""
        return ParameterDict(OrderedDict((k, self[k]) for k in self._keys))

    def setdefault(self, key: str, default=None):
        """The value under `key`, inserting `default` first if absent."""
        if key not in self:
            self[key] = default
        return self[key]

    def clear(self) -> None:
        """Remove every entry."""
        for key in list(self._keys):
            del self[key]

    def pop(self, key: str):
        """Remove and return the value under `key`."""
        value = self[key]
        del self[key]
        return value

    def popitem(self) -> tuple:
        """Remove and return the last (key, value) pair."""
        key = list(self._keys)[-1]
        value = self[key]
        del self[key]
        return key, value

    def get(self, key: str, default=None):
        """The value under `key`, or `default`."""
        return self[key] if key in self else default

    def fromkeys(self, keys: Iterable, default=None) -> "ParameterDict":
        """A new ParameterDict with `keys` all set to `default`."""
        return ParameterDict((k, default) for k in keys)

    def keys(self):
        """The keys."""
        return self._keys.keys()

    def items(self):
        """(key, value) pairs."""
        return ((k, self[k]) for k in self._keys)

    def values(self):
        """The values."""
        return (self[k] for k in self._keys)

    def update(self, parameters) -> None:
        """Add entries from a mapping (plain dicts in sorted key order) or (key, value) pairs."""
        if not isinstance(parameters, Iterable):
            raise TypeError("ParametersDict.update should be called with an iterable of key/value pairs, but got "
                            + type(parameters).__name__)
        if isinstance(parameters, (OrderedDict, ParameterDict)):
            pairs = list(parameters.items())
        elif isinstance(parameters, Mapping):
            pairs = sorted(parameters.items())  # PyTorch sorts the keys of a plain dict
        else:
            pairs = []
            for j, pair in enumerate(parameters):
                if not isinstance(pair, Iterable):
                    raise TypeError(f"ParameterDict update sequence element #{j} should be Iterable; is"
                                    + type(pair).__name__)
                if len(pair) != 2:
                    raise ValueError(f"ParameterDict update sequence element #{j} has length {len(pair)}; "
                                     "2 is required")
                pairs.append(pair)
        for key, value in pairs:
            self[key] = value

    def __or__(self, other: "ParameterDict") -> "ParameterDict":
        merged = self.copy()
        merged.update(other)
        return merged

    def __ror__(self, other: "ParameterDict") -> "ParameterDict":
        merged = other.copy()
        merged.update(self)
        return merged

    def __ior__(self, other: "ParameterDict") -> "ParameterDict":
        self.update(other)
        return self

    def extra_repr(self) -> str:
        return "\n".join(_member_line(k, p, lambda t: t.type()) for k, p in self.items())

    def __call__(self, *args, **kwargs):
        raise RuntimeError("ParameterDict should not be called.")

"""Devices: a type ('cpu', 'cuda') and an index."""
from __future__ import annotations


class device:
    """Where a tensor lives, as torch.device: `device('cpu')`, `device('cuda', 0)`, `device('cuda:1')`."""

    __slots__ = ("type", "index", "_hash")
    _cache: dict = {}

    def __new__(cls, type_or_str, index: int | None = None):
        if isinstance(type_or_str, device):
            return type_or_str
        key = (type_or_str, index)
        hit = cls._cache.get(key)
        if hit is not None:
            return hit
        kind, idx = type_or_str, index
        if isinstance(type_or_str, str) and ":" in type_or_str:
            if index is not None:
                raise ValueError(f"type (string) must not include an index because index was passed explicitly: {type_or_str}")
            kind, _, num = type_or_str.partition(":")
            if not num.isdigit():
                raise RuntimeError(f"Invalid device string: '{type_or_str}'")
            idx = int(num)
        if kind not in ("cpu", "cuda", "meta"):
            raise RuntimeError(
                f"Expected one of cpu, cuda, meta device type at start of device string: {type_or_str}")
        self = object.__new__(cls)
        object.__setattr__(self, "type", kind)
        object.__setattr__(self, "index", idx)
        object.__setattr__(self, "_hash", hash((kind, idx)))
        cls._cache[key] = self
        return self

    def __setattr__(self, name, value):
        raise AttributeError("device is immutable")

    def __eq__(self, other) -> bool:
        if isinstance(other, str):
            other = device(other)
        return isinstance(other, device) and self.type == other.type and self.index == other.index

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __reduce__(self):
        return (device, (str(self),))

    def __enter__(self) -> "device":
        """`with device(d):` makes `d` the factory functions' default; tidal's default is always the CPU."""
        if self.type != "cpu":
            raise RuntimeError(f"with device('{self}'): tidal can only make the CPU the default device, "
                               f"not '{self}'")
        return self

    def __exit__(self, *exc) -> None:
        return None


cpu = device("cpu")

"""Devices: a type ('cpu', 'cuda') and an index."""
from __future__ import annotations


import re
import threading

# torch's device types, in the order its error message lists them
_TORCH_TYPES = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip", "ve", "fpga", "maia", "xla",
                "lazy", "vulkan", "mps", "meta", "hpu", "mtia", "privateuseone")
_TYPE_NUMBERS = {"cpu": 0, "cuda": 1, "meta": 14}  # c10::DeviceType values, for torch's hash
_DEVICE_STRING = re.compile(r"([a-zA-Z_]+)(?::([1-9]\d*|0))?")


def _parse(text: str, index) -> tuple:
    """(type, index) of a device string 'type' or 'type:N', with torch's errors."""
    if not text:
        raise RuntimeError("Device string must not be empty")
    found = _DEVICE_STRING.fullmatch(text)
    if found is None:
        raise RuntimeError(f"Invalid device string: '{text}'")
    if found.group(2) is not None:
        if index is not None:
            raise RuntimeError(f"type (string) must not include an index because index was passed explicitly: {text}")
        return found.group(1), int(found.group(2))
    return text, index


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
        if isinstance(type_or_str, str):
            kind, idx = _parse(type_or_str, index)
        if index is not None and (not isinstance(index, int) or isinstance(index, bool)):
            raise TypeError(f"device(): argument 'index' (position 2) must be int, not {type(index).__name__}")
        if idx is not None and idx < 0:
            raise RuntimeError("Device index must not be negative")
        if kind not in ("cpu", "cuda", "meta"):
            if kind in _TORCH_TYPES:  # a device type torch knows but tidal has no backend for
                raise RuntimeError(f"tidal has no '{kind}' device (it has cpu, cuda and meta): {type_or_str}")
            raise RuntimeError(f"Expected one of {', '.join(_TORCH_TYPES)} device type at start of device string: "
                               f"{type_or_str}")
        self = object.__new__(cls)
        object.__setattr__(self, "type", kind)
        object.__setattr__(self, "index", idx)
        # torch's hash: the device type's number in the high bits, the index as a byte (-1 when none)
        object.__setattr__(self, "_hash", (_TYPE_NUMBERS[kind] << 16) | ((-1 if idx is None else idx) & 0xFF))
        cls._cache[key] = self
        return self

    def __setattr__(self, name, value):
        raise AttributeError("device is immutable")

    def __eq__(self, other) -> bool:
        # as torch: a device equals only a device (never a str), and 'cuda' differs from 'cuda:0'
        if not isinstance(other, device):
            return NotImplemented
        return self.type == other.type and self.index == other.index

    def __ne__(self, other) -> bool:
        if not isinstance(other, device):
            return NotImplemented
        return self.type != other.type or self.index != other.index

    def _no_order(self, other):
        if not isinstance(other, device):
            return NotImplemented
        raise TypeError("comparison not implemented")

    __lt__ = __le__ = __gt__ = __ge__ = _no_order

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
        """`with device(d):` makes `d` the factory functions' device when they are given none (this thread)."""
        _DEFAULT.stack = _DEFAULT.stack + (self,)
        with _DEFAULT_LOCK:
            OPEN_BLOCKS[0] += 1
        return self

    def __exit__(self, *exc) -> None:
        _DEFAULT.stack = _DEFAULT.stack[:-1]
        with _DEFAULT_LOCK:
            OPEN_BLOCKS[0] -= 1
        return None


class _DefaultStack(threading.local):
    stack: tuple = ()  # this thread's open `with device(...)` blocks, innermost last (a class default per thread)


_DEFAULT = _DefaultStack()
_DEFAULT_LOCK = threading.Lock()
OPEN_BLOCKS = [0]  # `with device(...)` blocks open in any thread: while 0, default_device reads no thread-local


def default_device() -> device | None:
    """The device of this thread's innermost open `with device(d):` block, or None outside any."""
    if OPEN_BLOCKS[0]:
        stack = _DEFAULT.stack
        if stack:
            return stack[-1]
    return None


cpu = device("cpu")


def accelerator_count() -> int:
    """How many accelerator devices tidal offers torch-shaped code: none, while its cuda device runs elementwise
    ops and transfers only (torch.cuda.device_count, pin_memory and the DataLoader's pinning all read this)."""
    return 0

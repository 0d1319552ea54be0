"""Module.to's arguments, read as torch's `_parse_to` reads them: three signatures, torch's errors otherwise.

    to(device=None, dtype=None, non_blocking=False, copy=False, *, memory_format=None)
    to(dtype, non_blocking=False, copy=False, *, memory_format=None)
    to(tensor, non_blocking=False, copy=False, *, memory_format=None)
"""
from __future__ import annotations

from ..tensor import Tensor, device as _device
from ..tensor import dtype as dt

__all__ = ["parse_to"]

_SIGNATURES = ((("device", "dtype", "non_blocking", "copy"), "device"),
               (("dtype", "non_blocking", "copy"), "dtype"),
               (("tensor", "non_blocking", "copy"), "tensor"))


def _fits(name: str, value, required: bool) -> bool:
    if name == "device":
        return value is None or isinstance(value, (str, _device)) or (isinstance(value, int) and
                                                                       not isinstance(value, bool))
    if name == "dtype":
        return isinstance(value, dt.dtype) or (value is None and not required)
    if name == "tensor":
        return isinstance(value, Tensor)
    if name == "memory_format":
        return True  # (checked where the tensors are laid out)
    return isinstance(value, bool)


def _type_name(value) -> str:
    ns = dt.repr_namespace[0]
    if isinstance(value, dt.dtype):
        return f"{ns}.dtype"
    if isinstance(value, _device):
        return f"{ns}.device"
    return "Tensor" if isinstance(value, Tensor) else type(value).__name__


def _invalid(args: tuple, kwargs: dict) -> TypeError:
    ns = dt.repr_namespace[0]
    got = ", ".join(_type_name(a) for a in args)
    named = [f"{k}={_type_name(v)}" for k, v in kwargs.items()]
    got = f"{got}, {', '.join(named)}" if got and named else got or "".join(n + ", " for n in named)
    tail = ", *, torch.memory_format memory_format = None)".replace("torch.", f"{ns}.")
    return TypeError(f"to() received an invalid combination of arguments - got ({got}), but expected one of:\n"
                     f" * ({ns}.device device = None, {ns}.dtype dtype = None, bool non_blocking = False, "
                     f"bool copy = False{tail}\n * ({ns}.dtype dtype, bool non_blocking = False, bool copy = False"
                     f"{tail}\n * (Tensor tensor, bool non_blocking = False, bool copy = False{tail}\n")


def parse_to(args: tuple, kwargs: dict) -> tuple:
    """(device, dtype, non_blocking, memory_format) from Module.to's arguments, or torch's error."""
    for names, first in _SIGNATURES:
        if len(args) > len(names) or any(k not in names and k != "memory_format" for k in kwargs):
            continue
        given = dict(zip(names, args))
        if any(k in given for k in kwargs):
            continue
        given.update(kwargs)
        if first != "device" and first not in given:
            continue
        if all(_fits(k, v, k == first and first != "device") for k, v in given.items()):
            break
    else:
        raise _invalid(args, kwargs)
    if "copy" in given:  # (even copy=False)
        raise RuntimeError(".to() does not accept copy argument")
    device, dtype = given.get("device"), given.get("dtype")
    if "tensor" in given:
        device, dtype = given["tensor"].device, given["tensor"].dtype
    if isinstance(device, int):
        if device < 0:
            raise RuntimeError("Device index must not be negative")
        device = _device("cuda", device)
    elif isinstance(device, str):
        device = _device(device)
    return device, dtype, given.get("non_blocking", False), given.get("memory_format")

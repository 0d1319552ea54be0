"""The __torch_function__ protocol for tensor-like objects (torch.overrides; the "Extending torch" notes).

A class that is not a Tensor but defines `__torch_function__(cls, func, types, args, kwargs)` (the docs'
ScalarTensor) receives the torch functions called with its instances: `torch.mean(d)` returns what its handler
returns, NotImplemented from every handler is torch's TypeError. The public functions reach this only when they
failed on such an argument (ops/__init__.py: the check costs nothing for tensors, as for global tensors).

Not provided: Tensor subclasses' own __torch_function__ is not called for ops that run (tidal does not dispatch
on subclasses); Tensor.__torch_function__ exists for handlers that defer to it with super().
"""
from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterable

from ..tensor import Tensor

__all__: list = []  # (torch.overrides names these: compat/overrides.py)
METHODS: dict = {}

_DISABLED = [0]  # inside DisableTorchFunction blocks (and a default __torch_function__'s call)


def _is_overloaded(item) -> bool:
    tf = getattr(type(item), "__torch_function__", None)
    return tf is not None and not isinstance(item, Tensor)


def overloaded_args(relevant: Iterable) -> list:
    """The arguments (one level into lists and tuples) whose type has its own __torch_function__, subclasses
    before their parents, otherwise in order."""
    found: list = []
    for arg in relevant:
        for item in (arg if isinstance(arg, (list, tuple)) else (arg,)):
            if _is_overloaded(item) and not any(type(f) is type(item) for f in found):
                at = next((k for k, f in enumerate(found) if issubclass(type(item), type(f))), len(found))
                found.insert(at, item)
    return found


def has_torch_function(relevant_args: Iterable) -> bool:
    """Whether any of `relevant_args` is a tensor-like with __torch_function__ or a Tensor subclass (not a
    Parameter), as torch answers."""
    from ..nn.parameter import Parameter
    if _DISABLED[0]:
        return False
    return any(_is_overloaded(a) or isinstance(a, Tensor) and type(a) not in (Tensor, Parameter)
               for arg in relevant_args for a in (arg if isinstance(arg, (list, tuple)) else (arg,)))


def has_torch_function_unary(input) -> bool:
    """has_torch_function for one argument (torch.nn.functional's fast spelling)."""
    return has_torch_function((input,))


def has_torch_function_variadic(*args) -> bool:
    """has_torch_function over the positional arguments."""
    return has_torch_function(args)


def is_tensor_like(inp) -> bool:
    """A Tensor, or an object whose type defines __torch_function__."""
    return isinstance(inp, Tensor) or hasattr(type(inp), "__torch_function__")


def handle_torch_function(public_api: Callable, relevant_args: Iterable, *args, **kwargs) -> Any:
    """Call each overloaded argument's __torch_function__ in turn until one does not return NotImplemented."""
    overloaded = overloaded_args(relevant_args)
    types = tuple(type(a) for a in overloaded)
    for arg in overloaded:
        result = type(arg).__torch_function__(public_api, types, args, kwargs)
        if result is not NotImplemented:
            return result
    from ..tensor.dtype import repr_namespace
    name = f"{repr_namespace[0]}.{getattr(public_api, '__name__', public_api)}"
    listed = "".join(f"  - tensor subclass {t}\n" for t in types)
    raise TypeError(f"Multiple dispatch failed for '{name}'; all __torch_function__ handlers returned "
                    f"NotImplemented:\n\n{listed}\nFor more information, try re-running with "
                    "TORCH_LOGS=not_implemented")


def dispatch_if_overloaded(public_api: Callable, args: tuple, kwargs: dict):
    """(True, result) when an argument is an overloaded tensor-like (its handlers answered), else (False, None)."""
    if _DISABLED[0]:
        return False, None
    relevant = (*args, *kwargs.values())
    if not overloaded_args(relevant):
        return False, None
    return True, handle_torch_function(public_api, relevant, *args, **kwargs)


@contextlib.contextmanager
def DisableTorchFunction():
    """A block where torch functions do not dispatch to __torch_function__."""
    _DISABLED[0] += 1
    try:
        yield
    finally:
        _DISABLED[0] -= 1


def _default_torch_function(cls, func, types, args=(), kwargs=None):
    """Tensor.__torch_function__: run `func` itself; Tensor results come back as `cls` (torch's default)."""
    kwargs = kwargs or {}
    if not all(issubclass(cls, t) for t in types if issubclass(t, Tensor)):
        return NotImplemented
    with DisableTorchFunction():
        result = func(*args, **kwargs)
    return _convert(result, cls)


def _convert(value, cls):
    if cls is Tensor:
        return value
    if isinstance(value, Tensor) and not isinstance(value, cls):
        return value.as_subclass(cls)
    if isinstance(value, (tuple, list)):
        items = [_convert(v, cls) for v in value]
        return type(value)(*items) if hasattr(value, "_fields") else type(value)(items)
    return value


METHODS["__torch_function__"] = classmethod(_default_torch_function)

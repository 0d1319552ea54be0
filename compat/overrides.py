"""torch.overrides: the __torch_function__ protocol's helpers (ops/dispatch/torch_function.py)."""
from __future__ import annotations

from ..ops.dispatch.torch_function import (handle_torch_function, has_torch_function, has_torch_function_unary,
                                           has_torch_function_variadic, is_tensor_like)
from ..tensor import Tensor

__all__ = ["handle_torch_function", "has_torch_function", "has_torch_function_unary", "has_torch_function_variadic",
           "is_tensor_like", "get_ignored_functions",
           "get_overridable_functions", "is_tensor_method_or_property", "wrap_torch_function"]


_namespace: list = []  # tidal.compat, which hands itself here when it loads (it imports this module)


def register_namespace(module) -> None:
    """Take the torch namespace whose functions get_overridable_functions lists (tidal.compat calls this once)."""
    _namespace[:] = [module]


def get_ignored_functions() -> set:
    """Functions that never dispatch (none are listed)."""
    return set()


def get_overridable_functions() -> dict:
    """The public functions a __torch_function__ handler may receive, by namespace (torch's shape)."""
    (torch,) = _namespace
    return {torch: [getattr(torch, n) for n in dir(torch) if not n.startswith("_") and callable(getattr(torch, n))]}


def is_tensor_method_or_property(func) -> bool:
    """Whether `func` is a Tensor method or property (the handler's `func` for `t.method()` calls)."""
    name = getattr(func, "__name__", None)
    return name is not None and getattr(Tensor, name, None) is func


def wrap_torch_function(dispatcher):
    """Make a Python function dispatch on the tensor-likes `dispatcher(*args, **kwargs)` returns."""
    import functools

    def decorator(func):
        @functools.wraps(func)
        def wrapped(*args, **kwargs):
            relevant = dispatcher(*args, **kwargs)
            if has_torch_function(relevant):
                return handle_torch_function(wrapped, relevant, *args, **kwargs)
            return func(*args, **kwargs)
        return wrapped
    return decorator

"""autocast: a context manager and decorator that accepts torch's arguments and changes nothing.

tidal has no mixed-precision dispatch: ops run in the dtypes of their inputs inside and
outside the block. On a machine without CUDA torch disables CUDA autocast too (and says so).
"""
from __future__ import annotations

import functools
import warnings
from typing import Callable

from ...tensor import dtype as dt

__all__ = ["autocast", "custom_fwd", "custom_bwd", "is_autocast_available", "is_autocast_enabled"]


class autocast:
    """`with autocast(device_type, dtype=None, enabled=True, cache_enabled=None):` or `@autocast(...)`."""

    def __init__(self, device_type: str, dtype: dt.dtype | None = None, enabled: bool = True,
                 cache_enabled: bool | None = None):
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        if dtype is not None and not isinstance(dtype, dt.dtype):
            raise TypeError(f"autocast: dtype must be a dtype, not {type(dtype).__name__}")
        self.device = device_type
        self.fast_dtype = dtype if dtype is not None else (dt.float16 if device_type == "cuda" else dt.bfloat16)
        self._enabled = bool(enabled)
        self._cache_enabled = cache_enabled
        if self._enabled and device_type == "cuda" and not _cuda_available():
            warnings.warn("CUDA is not available or torch_xla is imported. Disabling autocast.", stacklevel=2)
            self._enabled = False

    def __enter__(self) -> "autocast":
        return self

    def __exit__(self, exc_type, exc_value, traceback) -> bool:
        return False

    def __call__(self, func: Callable) -> Callable:
        @functools.wraps(func)
        def run_in_context(*args, **kwargs):
            with self:
                return func(*args, **kwargs)
        return run_in_context


def is_autocast_available(device_type: str) -> bool:
    """Whether autocast accepts `device_type` (it accepts them all, as a no-op)."""
    return True


def _passthrough_decorator(fwd: Callable | None) -> Callable:
    return fwd if fwd is not None else (lambda fn: fn)


def custom_fwd(fwd: Callable | None = None, *, device_type: str, cast_inputs: dt.dtype | None = None) -> Callable:
    """Decorator for a custom Function's forward under autocast: returns it unchanged."""
    return _passthrough_decorator(fwd)


def custom_bwd(bwd: Callable | None = None, *, device_type: str) -> Callable:
    """Decorator for a custom Function's backward under autocast: returns it unchanged."""
    return _passthrough_decorator(bwd)


def _cuda_available() -> bool:
    from .. import cuda
    return cuda.is_available()


def is_autocast_enabled(device_type: str | None = None) -> bool:
    """False: tidal never changes op dtypes, inside autocast blocks or out."""
    return False

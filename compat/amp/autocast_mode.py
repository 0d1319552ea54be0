"""autocast: a context manager and decorator; inside an enabled block matmuls, linear, convolutions and
attention run in its dtype (bfloat16 on the CPU, float16 on CUDA by default) and the losses in float32, as
torch's lower-precision and float32 lists say (tidal.ops.dispatch.autocast does the casting). On a machine without
CUDA torch disables CUDA autocast (and says so); so does tidal.
"""
from __future__ import annotations

import functools
import warnings
from typing import Callable

from ...ops.dispatch import autocast as _state
from ...tensor import dtype as dt
from ...tensor import Tensor
from ...tensor.device import accelerator_count

__all__ = ["autocast", "custom_fwd", "custom_bwd", "is_autocast_available", "is_autocast_enabled",
           "get_autocast_dtype"]


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
        if self._enabled and device_type == "cpu" and self.fast_dtype not in (dt.bfloat16, dt.float16):
            warnings.warn("In CPU autocast, but the target dtype is not supported. Disabling autocast.\nCPU Autocast "
                          "only supports dtypes of torch.bfloat16, torch.float16 currently.", stacklevel=2)
            self._enabled = False

    def __enter__(self) -> "autocast":
        self._tokens = getattr(self, "_tokens", [])
        self._tokens.append(_state.enter(self.device, self.fast_dtype, self._enabled))
        return self

    def __exit__(self, exc_type, exc_value, traceback) -> bool:
        _state.leave(self.device, self._tokens.pop())
        return False

    def __call__(self, func: Callable) -> Callable:
        @functools.wraps(func)
        def run_in_context(*args, **kwargs):
            with self:
                return func(*args, **kwargs)
        return run_in_context


def is_autocast_available(device_type: str) -> bool:
    """Whether autocast takes `device_type` (tidal's devices: cpu and cuda)."""
    return device_type in ("cpu", "cuda")


def _passthrough_decorator(fwd: Callable | None) -> Callable:
    return fwd if fwd is not None else (lambda fn: fn)


def custom_fwd(fwd: Callable | None = None, *, device_type: str, cast_inputs: dt.dtype | None = None) -> Callable:
    """Decorator for a custom Function's forward: with `cast_inputs`, inside an enabled block its floating
    tensor inputs are cast to that dtype and it runs with autocast off, as torch's."""
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)
    if cast_inputs is None:
        return fwd

    @functools.wraps(fwd)
    def forward(*args, **kwargs):
        if _state.enabled_dtype(device_type) is None:
            return fwd(*args, **kwargs)
        args = tuple(_cast_to(a, cast_inputs, device_type) for a in args)
        kwargs = {k: _cast_to(v, cast_inputs, device_type) for k, v in kwargs.items()}
        with autocast(device_type, enabled=False):
            return fwd(*args, **kwargs)
    return forward


def _cast_to(value, dtype: dt.dtype, device_type: str):
    if isinstance(value, Tensor) and value.dtype.is_floating_point and value.device.type == device_type:
        return value.to(dtype)
    return value


def custom_bwd(bwd: Callable | None = None, *, device_type: str) -> Callable:
    """Decorator for a custom Function's backward under autocast: returns it unchanged."""
    return _passthrough_decorator(bwd)


def _cuda_available() -> bool:
    return accelerator_count() > 0  # (torch.cuda.is_available: compat.cuda builds on amp, so amp asks here)


def is_autocast_enabled(device_type: str | None = None) -> bool:
    """Whether an enabled autocast block surrounds this thread's code on `device_type` (torch's default: cuda)."""
    return _state.enabled_dtype("cuda" if device_type is None else device_type) is not None


def get_autocast_dtype(device_type: str) -> dt.dtype:
    """The dtype autocast uses on `device_type` (its default when no block is open)."""
    found = _state.enabled_dtype(device_type)
    return found if found is not None else (dt.float16 if device_type == "cuda" else dt.bfloat16)

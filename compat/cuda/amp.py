"""torch.cuda.amp: the deprecated CUDA spellings of torch.amp's autocast and GradScaler."""
from __future__ import annotations

import warnings
from typing import Callable

from ...tensor import dtype as dt
from .. import amp as _amp

__all__ = ["autocast", "GradScaler", "custom_fwd", "custom_bwd"]


class autocast(_amp.autocast):
    """`torch.cuda.amp.autocast(...)`: `torch.amp.autocast("cuda", ...)` under its old name."""

    def __init__(self, enabled: bool = True, dtype: dt.dtype = dt.float16, cache_enabled: bool = True):
        warnings.warn("`torch.cuda.amp.autocast(args...)` is deprecated. Please use "
                      "`torch.amp.autocast('cuda', args...)` instead.", FutureWarning, stacklevel=2)
        super().__init__("cuda", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


class GradScaler(_amp.GradScaler):
    """`torch.cuda.amp.GradScaler(...)`: `torch.amp.GradScaler("cuda", ...)` under its old name."""

    def __init__(self, init_scale: float = 2.0 ** 16, growth_factor: float = 2.0, backoff_factor: float = 0.5,
                 growth_interval: int = 2000, enabled: bool = True) -> None:
        warnings.warn("`torch.cuda.amp.GradScaler(args...)` is deprecated. Please use "
                      "`torch.amp.GradScaler('cuda', args...)` instead.", FutureWarning, stacklevel=2)
        super().__init__("cuda", init_scale=init_scale, growth_factor=growth_factor,
                         backoff_factor=backoff_factor, growth_interval=growth_interval, enabled=enabled)


def custom_fwd(fwd: Callable | None = None, *, cast_inputs: dt.dtype | None = None) -> Callable:
    """Decorator for a custom Function's forward under CUDA autocast: returns it unchanged."""
    return _amp.custom_fwd(fwd, device_type="cuda", cast_inputs=cast_inputs)


def custom_bwd(bwd: Callable | None = None) -> Callable:
    """Decorator for a custom Function's backward under CUDA autocast: returns it unchanged."""
    return _amp.custom_bwd(bwd, device_type="cuda")

"""torch.backends.cuda: cuBLAS matmul flags and scaled-dot-product-attention kernel switches."""
from __future__ import annotations

import contextlib
import warnings
from typing import Iterator

from ...nn.attention import ENABLED, SDPAParams, can_use_efficient_attention, can_use_flash_attention

__all__ = ["matmul", "is_built", "flash_sdp_enabled", "enable_flash_sdp", "mem_efficient_sdp_enabled",
           "enable_mem_efficient_sdp", "math_sdp_enabled", "enable_math_sdp", "cudnn_sdp_enabled",
           "enable_cudnn_sdp", "sdp_kernel", "preferred_linalg_library", "SDPAParams", "can_use_flash_attention",
           "can_use_efficient_attention"]


class _MatmulFlags:
    """`torch.backends.cuda.matmul`: the cuBLAS flags, settable; unknown names are refused."""

    _DEFAULTS = {"allow_tf32": False, "allow_fp16_reduced_precision_reduction": True,
                 "allow_bf16_reduced_precision_reduction": True, "allow_fp16_accumulation": False,
                 "fp32_precision": "none"}

    def __init__(self):
        object.__setattr__(self, "_values", dict(self._DEFAULTS))

    def __getattr__(self, name: str):
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError(f"Unknown attribute {name}") from None

    def __setattr__(self, name: str, value) -> None:
        if name not in self._values:
            raise AttributeError(f"Unknown attribute {name}")
        self._values[name] = value


matmul = _MatmulFlags()
_sdp = ENABLED  # the switches scaled_dot_product_attention reads (tidal.nn.attention)


def is_built() -> bool:
    """False: tidal has no CUDA build of these libraries."""
    return False


def flash_sdp_enabled() -> bool:
    """Whether the flash-attention kernel is switched on."""
    return _sdp["flash"]


def enable_flash_sdp(enabled: bool) -> None:
    """Switch the flash-attention kernel on or off."""
    _sdp["flash"] = bool(enabled)


def mem_efficient_sdp_enabled() -> bool:
    """Whether the memory-efficient attention kernel is switched on."""
    return _sdp["mem_efficient"]


def enable_mem_efficient_sdp(enabled: bool) -> None:
    """Switch the memory-efficient attention kernel on or off."""
    _sdp["mem_efficient"] = bool(enabled)


def math_sdp_enabled() -> bool:
    """Whether the reference attention implementation is switched on."""
    return _sdp["math"]


def enable_math_sdp(enabled: bool) -> None:
    """Switch the reference attention implementation on or off."""
    _sdp["math"] = bool(enabled)


def cudnn_sdp_enabled() -> bool:
    """Whether the cuDNN attention kernel is switched on."""
    return _sdp["cudnn"]


def enable_cudnn_sdp(enabled: bool) -> None:
    """Switch the cuDNN attention kernel on or off."""
    _sdp["cudnn"] = bool(enabled)


@contextlib.contextmanager
def sdp_kernel(enable_flash: bool = True, enable_math: bool = True, enable_mem_efficient: bool = True,
               enable_cudnn: bool = True) -> Iterator[None]:
    """Deprecated: set the attention kernel switches inside a `with` block and restore them after."""
    warnings.warn("`torch.backends.cuda.sdp_kernel()` is deprecated. In the future, this context manager will be "
                  "removed. Please see `torch.nn.attention.sdpa_kernel()` for the new context manager, with updated "
                  "signature.", FutureWarning, stacklevel=3)
    saved = dict(_sdp)
    _sdp.update(flash=enable_flash, math=enable_math, mem_efficient=enable_mem_efficient, cudnn=enable_cudnn)
    try:
        yield
    finally:
        _sdp.update(saved)


def preferred_linalg_library(backend: str | None = None) -> str:
    """'default': tidal's linear algebra runs on NumPy/LAPACK whatever is asked."""
    return "default"

"""torch.nn.attention: which scaled-dot-product-attention backends may run (SDPBackend, sdpa_kernel).

tidal has one attention implementation (composed ops, fused by the VM); the switches keep torch's
bookkeeping and its refusal when every backend usable on the device is switched off: on the CPU
torch runs the math and flash backends only.
"""
from __future__ import annotations

import contextlib
from typing import Iterator

from ..sdpa_backends import ENABLED, SDPBackend, _current, _set, check_viable, priority_order  # noqa: F401
from . import bias, flex_attention
from ._registry import (activate_flash_attention_impl, current_flash_attention_impl, list_flash_attention_impls,
                        register_flash_attention_impl, restore_flash_attention_impl)

__all__ = ["SDPBackend", "sdpa_kernel", "WARN_FOR_UNFUSED_KERNELS", "register_flash_attention_impl",
           "activate_flash_attention_impl", "list_flash_attention_impls", "current_flash_attention_impl",
           "restore_flash_attention_impl", "SDPAParams", "can_use_flash_attention", "can_use_efficient_attention"]

WARN_FOR_UNFUSED_KERNELS = False


@contextlib.contextmanager
def sdpa_kernel(backends: "list[SDPBackend] | SDPBackend", set_priority: bool = False) -> Iterator[dict]:
    """Allow only `backends` for scaled_dot_product_attention inside the `with` block."""
    if not isinstance(backends, (list, SDPBackend)):
        raise AssertionError("Backend must be an instance of SDPBackend or a list of SDPBackend instances, "
                             f"got {type(backends).__name__}")
    backends = list(dict.fromkeys([backends] if isinstance(backends, SDPBackend) else backends))
    previous = _current(with_priority=set_priority)
    try:
        _set(backends, set_priority)
        yield {}
    finally:
        _set(previous, set_priority)


class SDPAParams:
    """The arguments of one attention call, as the can_use_* checks take them."""

    def __init__(self, query, key, value, attn_mask, dropout: float, is_causal: bool, enable_gqa: bool = False):
        self.query, self.key, self.value, self.attn_mask = query, key, value, attn_mask
        self.dropout, self.is_causal, self.enable_gqa = dropout, is_causal, enable_gqa


def _fused_usable(params: SDPAParams, debug: bool, what: str) -> bool:
    # torch's fused kernels need CUDA (and its own builds); tidal runs none of them
    if debug:
        import warnings
        warnings.warn(f"{what} requires CUDA tensors and a build with the fused kernels; tidal runs the math "
                      "implementation", stacklevel=3)
    return False


def can_use_flash_attention(params: SDPAParams, debug: bool = False) -> bool:
    """Whether torch's fused flash-attention CUDA kernel could run these inputs: never in tidal."""
    return _fused_usable(params, debug, "Flash attention")


def can_use_efficient_attention(params: SDPAParams, debug: bool = False) -> bool:
    """Whether torch's memory-efficient CUDA kernel could run these inputs: never in tidal."""
    return _fused_usable(params, debug, "Memory-efficient attention")

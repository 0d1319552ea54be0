"""The registry of alternative flash-attention implementations (torch.nn.attention's FA3/FA4 hooks).

tidal registers none of its own; a provider may register one, and activating it calls its
register function, as torch does.
"""
from __future__ import annotations

import logging
from typing import Callable

_logger = logging.getLogger(__name__)
_IMPLS: dict = {}
_ACTIVE: list = []  # [(name, handle)] while a provider's implementation is active


def register_flash_attention_impl(impl: str, *, register_fn: Callable) -> None:
    """Register the callable that activates the implementation `impl`."""
    _IMPLS[impl] = register_fn


def activate_flash_attention_impl(impl: str) -> None:
    """Activate a registered implementation (restoring any active one first)."""
    restore_flash_attention_impl(_raise_warn=False)
    register_fn = _IMPLS.get(impl)
    if register_fn is None:
        raise ValueError(f"Unknown flash attention impl '{impl}'. Available implementations: "
                         f"{list_flash_attention_impls()}")
    handle = register_fn()
    if handle is not None:
        _ACTIVE.append((impl, handle))


def list_flash_attention_impls() -> list:
    """The names of the registered implementations."""
    return sorted(_IMPLS)


def current_flash_attention_impl() -> "str | None":
    """The active implementation's name, or None for the default."""
    return _ACTIVE[0][0] if _ACTIVE else None


def restore_flash_attention_impl(_raise_warn: bool = True) -> None:
    """Go back to the default implementation."""
    if _ACTIVE:
        _ACTIVE.pop()[1].remove()
    elif _raise_warn:
        _logger.warning("Trying to restore default FA2 impl when no custom impl was activated")

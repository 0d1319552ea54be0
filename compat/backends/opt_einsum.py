"""torch.backends.opt_einsum: the switches for contraction-order search in einsum (recorded; tidal's einsum
picks its own order)."""
from __future__ import annotations

import importlib.util

__all__ = ["is_available", "get_opt_einsum", "enabled", "strategy"]



def is_available() -> bool:
    """Whether the opt_einsum package is installed."""
    return importlib.util.find_spec("opt_einsum") is not None


enabled = is_available()  # (torch's defaults: on with a search strategy only where opt_einsum is installed)
strategy = "auto" if enabled else None


def get_opt_einsum():
    """The opt_einsum package, or None."""
    if not is_available():
        return None
    import opt_einsum
    return opt_einsum

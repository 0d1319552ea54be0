"""Container: PyTorch's deprecated module holder, kept for old code (the live containers are in nn/containers.py)."""
from __future__ import annotations

import warnings

from ..module import Module

__all__ = ["Container"]


class Container(Module):
    """A Module holding the modules given as keyword arguments; deprecated in favour of subclassing Module."""

    def __init__(self, **kwargs) -> None:
        super().__init__()
        warnings.warn("`nn.Container` is deprecated. All of its functionality is now implemented in `nn.Module`. "
                      "Subclass that instead.", FutureWarning, stacklevel=2)
        for key, value in kwargs.items():
            self.add_module(key, value)

"""torch.fft: the transforms, frequencies and shifts of tidal.fft under PyTorch's names."""
from __future__ import annotations

from ..ops.spectral import fft as _fft

__all__ = list(_fft.__all__)
globals().update({_name: getattr(_fft, _name) for _name in __all__})

"""torch.signal.windows: tidal.ops.spectral.signal_windows under PyTorch's names."""
from __future__ import annotations

from ...ops.spectral import signal_windows as _windows
from ...ops.spectral.signal_windows import WINDOWS

__all__ = list(WINDOWS)
globals().update({_name: getattr(_windows, _name) for _name in __all__})

"""torch.signal.windows: tidal.ops.signal_windows under PyTorch's names."""
from __future__ import annotations

from ...ops import signal_windows as _windows
from ...ops.signal_windows import WINDOWS

__all__ = list(WINDOWS)
globals().update({_name: getattr(_windows, _name) for _name in __all__})

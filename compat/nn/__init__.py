"""torch.nn: tidal.nn with torch's `parallel` wrappers."""
from __future__ import annotations

from ... import nn as _tidal_nn
from .._mirror import mirror
from . import modules, parallel
from .parallel import DataParallel

__getattr__ = mirror(globals(), _tidal_nn)

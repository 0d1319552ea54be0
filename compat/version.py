"""torch.version: the torch release whose API tidal.compat follows, and no CUDA."""
from __future__ import annotations

__all__ = ["__version__", "cuda", "hip", "git_version", "debug"]

__version__ = "2.13.0+tidal"
cuda = None
hip = None
git_version = ""
debug = False

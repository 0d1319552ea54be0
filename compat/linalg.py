"""torch.linalg as an importable module (`import torch.linalg`, `from torch.linalg import norm`):
the functions of tidal.linalg (ops/linalg_ns.py)."""
from __future__ import annotations

from ..ops import linalg_ns as _linalg
from ._mirror import mirror as _mirror

__getattr__ = _mirror(globals(), _linalg)
# the linear-algebra functions themselves, not the helpers linalg_ns imports
__all__ = sorted(name for name, value in globals().items() if not name.startswith("_") and callable(value)
                 and (getattr(value, "__module__", None) or "").startswith(("tidal.ops.linalg", "tidal.ops.products")))

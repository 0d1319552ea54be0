"""torch.linalg as an importable module (`import torch.linalg`, `from torch.linalg import norm`):
the functions of tidal.linalg (ops/linalg/namespace.py)."""
from __future__ import annotations

from ..ops.linalg import namespace as _linalg
from ._mirror import mirror as _mirror

__getattr__ = _mirror(globals(), _linalg)
_LINALG = tuple(f"tidal.ops.linalg.{m}" for m in ("products", "product_kernels", "namespace", "backward", "checks",
                                                    "decompositions", "derived", "det_grad", "householder", "ldl",
                                                    "lobpcg", "lu", "torch_names"))
# the linear-algebra functions themselves, not the helpers linalg/namespace.py imports
__all__ = sorted(name for name, value in globals().items() if not name.startswith("_") and callable(value)
                 and (getattr(value, "__module__", None) or "").startswith(_LINALG))

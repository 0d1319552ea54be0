"""torch.optim.adamw: AdamW, importable from the module path torch gives it (`from torch.optim.adamw import AdamW`)."""
from __future__ import annotations

from .adam import Adam, AdamW
from .optimizer import ParamsT

__all__ = ["AdamW", "Adam", "ParamsT"]

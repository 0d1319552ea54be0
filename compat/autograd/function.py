"""torch.autograd.function: Function, its ctx, and the once_differentiable decorator."""
from __future__ import annotations

from ...autograd.function import Function, FunctionCtx, once_differentiable

__all__ = ["Function", "FunctionCtx", "once_differentiable"]

"""Reverse-mode automatic differentiation over the op graph."""
from __future__ import annotations

from .function import Function, FunctionCtx
from .grad_mode import (enable_grad, inference_mode, is_grad_enabled, is_inference_mode_enabled, no_grad,
                        set_grad_enabled)
from .graph import Node, needs_grad, record
from .api import backward, grad
from . import forward_ad  # torch.autograd.forward_ad is reachable without its own import

__all__ = ["Function", "FunctionCtx", "backward", "grad", "no_grad", "enable_grad", "set_grad_enabled",
           "inference_mode", "is_grad_enabled", "is_inference_mode_enabled", "Node", "record", "needs_grad"]

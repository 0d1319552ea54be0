"""Reverse-mode automatic differentiation over the op graph."""
from __future__ import annotations

from .function import Function, FunctionCtx
from .grad_mode import (enable_grad, inference_mode, is_grad_enabled, is_inference_mode_enabled, no_grad,
                        set_grad_enabled)
from .graph import Node, needs_grad, record
from .api import backward, grad
from . import forward_ad  # torch.autograd.forward_ad is reachable without its own import
from . import graph, multi_grad_hook, mutation_on_saved, saved_hooks

# torch.autograd.graph's namespace also holds the saved-tensor hooks, the multi-grad hook and mutation of saved
# tensors; they build on the graph's nodes (graph.py), so this package puts them there
graph.saved_tensors_hooks, graph.save_on_cpu = saved_hooks.saved_tensors_hooks, saved_hooks.save_on_cpu
graph.disable_saved_tensors_hooks = saved_hooks.disable_saved_tensors_hooks
graph.register_multi_grad_hook = multi_grad_hook.register_multi_grad_hook
graph.allow_mutation_on_saved_tensors = mutation_on_saved.allow_mutation_on_saved_tensors

__all__ = ["Function", "FunctionCtx", "backward", "grad", "no_grad", "enable_grad", "set_grad_enabled",
           "inference_mode", "is_grad_enabled", "is_inference_mode_enabled", "Node", "record", "needs_grad"]

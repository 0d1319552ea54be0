"""tidal.func (torch.func): composable function transforms over tidal's autograd.

grad, grad_and_value, vjp, jacrev differentiate functions in reverse mode; jvp, jacfwd and linearize
in forward mode (tidal.autograd.forward_ad); hessian is jacfwd of jacrev; vmap maps one over
a batch dimension (once, on batched values, through per-op batching rules: see vmap.py); functional_call and
stack_module_state treat a module as a function of its parameters and buffers; linearize,
functionalize and replace_all_batch_norm_modules_ complete torch.func's names.
"""
from __future__ import annotations

from .module import functional_call, replace_all_batch_norm_modules_, stack_module_state
from .einops import rearrange
from .transforms import functionalize, grad, grad_and_value, hessian, jacfwd, jacrev, jvp, linearize, vjp
from .vmap import vmap
from .batching import BatchedTensor

__all__ = ["grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian", "vmap", "functional_call",
           "stack_module_state", "linearize", "functionalize", "replace_all_batch_norm_modules_", "rearrange",
           "debug_unwrap"]


def debug_unwrap(tensor, *, recurse: bool = True):
    """The tensor under vmap's BatchedTensor wrapper (its batch dim in front), of every level unless `recurse` is
    False; any other value as it is (tidal's grad transforms add no wrapper)."""
    while isinstance(tensor, BatchedTensor):
        tensor = tensor.value
        if not recurse:
            break
    return tensor

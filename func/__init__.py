"""tidal.func (torch.func): composable function transforms over tidal's autograd.

grad, grad_and_value, vjp, jacrev differentiate functions in reverse mode; jvp, jacfwd and linearize
in forward mode (tidal.autograd.forward_ad); hessian is jacfwd of jacrev; vmap maps one over
a batch dimension (by running it per element, see vmap.py); functional_call and
stack_module_state treat a module as a function of its parameters and buffers; linearize,
functionalize and replace_all_batch_norm_modules_ complete torch.func's names.
"""
from __future__ import annotations

from .module import functional_call, replace_all_batch_norm_modules_, stack_module_state
from .einops import rearrange
from .transforms import functionalize, grad, grad_and_value, hessian, jacfwd, jacrev, jvp, linearize, vjp
from .vmap import vmap

__all__ = ["grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian", "vmap", "functional_call",
           "stack_module_state", "linearize", "functionalize", "replace_all_batch_norm_modules_", "rearrange",
           "debug_unwrap"]


def debug_unwrap(tensor, *, recurse: bool = True):
    """`tensor` itself: tidal's transforms hand functions plain tensors (no BatchedTensor or GradTrackingTensor
    wrappers to unwrap)."""
    return tensor

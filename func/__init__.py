"""tidal.func (torch.func): composable function transforms over tidal's reverse-mode autograd.

grad, grad_and_value, vjp, jvp, jacrev, jacfwd, hessian differentiate functions; vmap maps one over
a batch dimension (by running it per element, see vmap.py); functional_call and
stack_module_state treat a module as a function of its parameters and buffers.
"""
from __future__ import annotations

from .module import functional_call, stack_module_state
from .transforms import grad, grad_and_value, hessian, jacfwd, jacrev, jvp, vjp
from .vmap import vmap

__all__ = ["grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian", "vmap", "functional_call",
           "stack_module_state"]

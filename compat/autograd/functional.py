"""torch.autograd.functional: Jacobians, Hessians and their products with vectors (tidal.func.autograd_functional)."""
from ...func.autograd_functional import *  # noqa: F401,F403
from ...func.autograd_functional import __all__  # noqa: F401

"""The op library: each op declared once, dispatched at the call, run as VM instructions.

Every module here exports its public functions in `__all__` and the Tensor methods it
defines in `METHODS`; this file binds the methods onto Tensor.
"""
from __future__ import annotations

import functools

from ..tensor import Tensor
from .elementwise import activations, arithmetic, copies
from .factories import conversion, creation
from .indexing import sorting, subscript
from .linalg import products
from .movement import shape_ops, slicing, splits, views
from .random import sampling
from .reductions import reduce, extremes, softmax as softmax_module, stats, scan  # (the plumbing first)
from .windowed import adaptive_pool, conv, fold as fold_module, pool
from .reductions import comparisons, hashing
from .factories import grids
from .movement import diagonals
from .elementwise import aliases, number_ops, special_functions
from .linalg import vector_ops
from .movement import scatter_views
from .reductions import statistics
from .spectral import signal_windows
from .dispatch import number_args
from .indexing import index_reduction
from .linalg import legacy_norms
from .complex_numbers import grad as complex_grad, tensors as complex_tensors
from .spectral import stft as stft_module
from .factories import interop, tensor_memory
from .linalg import lobpcg as lobpcg_module, removed
from .dispatch import grad_attrs
from .dispatch import layers_below  # noqa: F401 - hands autograd and Tensor the ops they call
from .linalg import torch_names  # the torch.* linalg names
from .factories import shared_memory, sparse_coo, storage
from .dispatch import torch_function
from .dispatch.out_args import with_out as _with_out

# (a later module's name wins where two export one; a module named like its function is bound as <name>_module)
MODULES = (arithmetic, copies, conversion, creation, views, slicing, splits, shape_ops, reduce, stats, extremes, softmax_module,
           scan, products, sorting, subscript, sampling, activations, conv, fold_module, pool, adaptive_pool,
           comparisons, hashing, grids, diagonals, torch_names)
MODULES += (aliases, number_ops, scatter_views, signal_windows, special_functions, statistics, vector_ops)
MODULES += (index_reduction, legacy_norms, complex_tensors, stft_module)
MODULES += (tensor_memory, interop, removed, lobpcg_module, grad_attrs, sparse_coo, shared_memory, storage,
            torch_function)

# Set by tidal.comm.global_tensor: dispatch(name, fn, args, kwargs) runs an op on global tensors.
global_dispatch = None


def _accepting_global(fn, name: str):
    """`fn`, handing calls with a global tensor to `global_dispatch`: a global tensor makes `fn` fail (it
    has no local memory), so the check costs nothing until then. Functions whose torch schema refuses
    Python numbers check their arguments first (number_args: torch's TypeError at the user's call)."""
    check = number_args.checker(name)

    def public(*args, **kwargs):
        if check is not None:
            try:
                check(args, kwargs)
            except TypeError:
                if not _mentions_global(args, kwargs):
                    handled, result = torch_function.dispatch_if_overloaded(public, args, kwargs)
                    if handled:
                        return result
                    raise
        if torch_function.SUBCLASSES[0] and args and torch_function.first_is_subclass(args[0]) and \
                name not in torch_function.NOT_OVERRIDABLE:
            # an instance of a user's Tensor subclass: results keep its class (or its __torch_function__ answers)
            handled, result = torch_function.dispatch_subclass(public, fn, args, kwargs)
            if handled:
                return result
        try:
            return fn(*args, **kwargs)
        except Exception:
            if global_dispatch is None or not _mentions_global(args, kwargs):
                # a tensor-like with its own __torch_function__ (torch.overrides) makes `fn` fail first
                handled, result = torch_function.dispatch_if_overloaded(public, args, kwargs)
                if handled:
                    return result
                raise
        return global_dispatch(name, fn, args, kwargs)
    functools.update_wrapper(public, fn)
    public.__module__, public.__qualname__ = __name__, name  # pickled by reference as tidal.ops.<name>
    return public


def holds_global(*tensors) -> bool:
    """Whether a global tensor is among `tensors` (None allowed): an op whose local path cannot run on one hands the
    call to `global_dispatch` (never the case before tidal.comm is loaded)."""
    return global_dispatch is not None and _mentions_global(tensors, {})


def _mentions_global(args: tuple, kwargs: dict) -> bool:
    for arg in (*args, *kwargs.values()):
        for item in (arg if isinstance(arg, (list, tuple)) else (arg,)):  # (builtins.any is shadowed here)
            if getattr(item, "is_global", False) is True:
                return True
    return False


def _checked_method(fn, name: str):
    """Tensor method `name`, refusing a Python number where torch's schema takes only a Tensor."""
    check = number_args.method_checker(name)
    if check is None:
        return fn

    def method(self, *args, **kwargs):
        check((self,) + args, kwargs)
        return fn(self, *args, **kwargs)
    functools.update_wrapper(method, fn)
    return method


__all__: list = []
for _mod in MODULES:
    for _name in _mod.__all__:
        _fn = _with_out(_name, getattr(_mod, _name))  # torch's out= where the op has none of its own
        globals()[_name] = _accepting_global(_fn, _name) if callable(_fn) and not isinstance(_fn, type) else _fn
    __all__ += list(_mod.__all__)
    for _name, _fn in _mod.METHODS.items():
        setattr(Tensor, _name, _checked_method(_fn, _name))

complex_tensors.install_lazy_writers()  # conj views' in-place methods, once Tensor has every op's (lazy_views)

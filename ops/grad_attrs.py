"""Autograd attributes of a tensor that torch 2.13 exposes: `grad_dtype` (the dtype a leaf's gradient is
cast to, or None for any) and `is_inference()` (whether it was made under inference_mode; a view follows
its base).

The engine casts a leaf's incoming gradient to `grad_dtype` (autograd/engine.py `_accumulate`); a tensor is
marked an inference tensor where it is made (tensor/tensor.py `Tensor._make`). Both read the fields set here.
"""
from __future__ import annotations

from ..tensor import Tensor
from ..tensor import dtype as dt
from .elementwise import torch_name
from .factory_args import TYPEMETA_NAME

__all__ = ["is_inference"]
METHODS: dict = {}

_UNSET = object()


def is_inference(input: Tensor) -> bool:
    """Whether `input` is an inference tensor: made under inference_mode (a view: its base was)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"is_inference(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    base = input._base if input._base is not None else input
    return bool(getattr(base, "_inference", False))


def _get_grad_dtype(self: Tensor):
    if self.grad_fn is not None:
        raise RuntimeError("grad_dtype can only be accessed on leaf tensors.")
    found = self.__dict__.get("_grad_dtype", _UNSET)
    return self.dtype if found is _UNSET else found


def _set_grad_dtype(self: Tensor, value) -> None:
    if self.grad_fn is not None:
        raise RuntimeError("grad_dtype can only be set on leaf tensors.")
    if value is not None and not isinstance(value, dt.dtype):
        raise RuntimeError(f"grad_dtype must be a torch.dtype or None, but got {type(value).__name__}")
    grad = self.grad
    if value is not None and grad is not None and grad.dtype is not value:
        raise RuntimeError(f"Cannot set grad_dtype to '{torch_name(value)}' because there is already a gradient "
                           f"with dtype '{TYPEMETA_NAME.get(grad.dtype, torch_name(grad.dtype))}'. Please clear the "
                           "gradient (.grad = None) before changing grad_dtype, or ensure the new grad_dtype matches "
                           "the existing gradient's dtype.")
    self.__dict__["_grad_dtype"] = value


def _name(self: Tensor) -> None:
    return None


METHODS.update(is_inference=is_inference,
               grad_dtype=property(_get_grad_dtype, _set_grad_dtype,
                                   doc="The dtype of a leaf's gradient (the engine casts to it); None: any."),
               name=property(_name, doc="None: torch names tensors only inside its compiler's graphs."))

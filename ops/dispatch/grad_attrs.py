"""Autograd attributes of a tensor that torch 2.13 exposes: `grad_dtype` (the dtype a leaf's gradient is
cast to, or None for any) and `is_inference()` (whether it was made under inference_mode; a view follows
its base).

The engine casts a leaf's incoming gradient to `grad_dtype` (autograd/engine.py `_accumulate`); a tensor is
marked an inference tensor where it is made (tensor/tensor.py `Tensor._make`). Both read the fields set here.
"""
from __future__ import annotations

import warnings

from ...tensor import Tensor
from ...tensor import dtype as dt
from ..elementwise.plans import torch_name
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
    grad = self.__dict__.get("grad")
    if value is not None and grad is not None and grad.dtype is not value:
        raise RuntimeError(f"Cannot set grad_dtype to '{torch_name(value)}' because there is already a gradient "
                           f"with dtype '{TYPEMETA_NAME.get(grad.dtype, torch_name(grad.dtype))}'. Please clear the "
                           "gradient (.grad = None) before changing grad_dtype, or ensure the new grad_dtype matches "
                           "the existing gradient's dtype.")
    self.__dict__["_grad_dtype"] = value


def _get_grad(self: Tensor):
    grad = self.__dict__.get("grad")
    if grad is None and self.grad_fn is not None and not self.__dict__.get("_retains_grad") and \
            "_fw_only" not in self.__dict__:  # (forward AD's own tensors are leaves to torch: forward_ad)
        warnings.warn("The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad "
                      "attribute won't be populated during autograd.backward(). If you indeed want the .grad field to "
                      "be populated for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. If you access "
                      "the non-leaf Tensor by mistake, make sure you access the leaf Tensor instead. See "
                      "github.com/pytorch/pytorch/pull/30531 for more information.", UserWarning, stacklevel=2)
    return grad


def _set_grad(self: Tensor, value) -> None:
    if value is not None:  # torch's checks on an assigned gradient (the engine's own writes pass them)
        if not isinstance(value, Tensor):
            raise TypeError(f"assigned grad expected to be a Tensor or None but got grad of type "
                            f"{type(value).__name__}")
        if value is self:
            raise RuntimeError("can't assign Variable as its own grad")
        want = self.__dict__.get("_grad_dtype", self.dtype)
        if want is not None and value.dtype is not want:
            got = TYPEMETA_NAME.get(value.dtype, torch_name(value.dtype))
            raise RuntimeError(f"attempting to assign a gradient with dtype '{got}' to a tensor with grad_dtype '{torch_name(want)}'. The "
                               "gradient must match the tensor's grad_dtype (defaults to the tensor's dtype). You "
                               "can set the tensor's grad_dtype attribute with a specific dtype, or None to allow "
                               "any dtype. Set grad_dtype with caution. Diverging the dtypes of a tensor and its "
                               "gradient may break downstream systems that assume they match.")
        if tuple(value.shape) != tuple(self.shape):
            raise RuntimeError(f"attempting to assign a gradient of size '{list(value.shape)}' to a tensor of "
                               f"size '{list(self.shape)}'. Please ensure that the gradient and the tensor are the "
                               "same size")
    self.__dict__["grad"] = value


def _is_view(self: Tensor) -> bool:
    """Whether this tensor is a view of another (its `_base` is set)."""
    return self._base is not None


def _name(self: Tensor) -> None:
    return None


METHODS.update(is_inference=is_inference, _is_view=_is_view,
               grad=property(_get_grad, _set_grad, doc="The gradient accumulated by backward (leaves, or "
                             "non-leaves after retain_grad()); None until then."),
               grad_dtype=property(_get_grad_dtype, _set_grad_dtype,
                                   doc="The dtype of a leaf's gradient (the engine casts to it); None: any."),
               name=property(_name, doc="None: torch names tensors only inside its compiler's graphs."))

"""Parameter and Buffer: the tensors a Module registers as its learnable weights and its state."""
from __future__ import annotations

import numpy as np

from ..tensor import Tensor
from ..tensor import dtype as dt
from ..tensor.tensor import INFERENCE

__all__ = ["Parameter", "Buffer", "set_data"]


def set_data(target: Tensor, source: Tensor) -> None:
    """Make `target` use `source`'s memory, dtype and device, keeping its identity and flags (`t.data = s`)."""
    target.data = source


def _empty_float() -> Tensor:
    return Tensor._empty((0,), dt.get_default_dtype())


class Parameter(Tensor):
    """A tensor that a Module registers as a learnable parameter; requires grad by default."""

    __slots__ = ()
    is_parameter = True  # what Module checks: a global parameter (tidal.comm.GlobalParameter) says so too

    def __new__(cls, data: Tensor | None = None, requires_grad: bool = True) -> "Parameter":
        if data is None:
            data = _empty_float()
        if getattr(data, "is_global", False) is True:
            return data.as_parameter(requires_grad)
        if not isinstance(data, Tensor):
            raise TypeError(f"Parameter(): argument 'data' must be Tensor, not {type(data).__name__}")
        if requires_grad and not data.dtype.is_floating_point:
            raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")
        if requires_grad and (data._base if data._base is not None else data)._inference and not INFERENCE.now():
            raise RuntimeError("Setting requires_grad=True on inference tensor outside InferenceMode is not allowed.")
        param = cls._make(data._v, data.dtype, data.device, data._vm)
        param.requires_grad = bool(requires_grad)
        return param

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    __str__ = __repr__

    def __deepcopy__(self, memo) -> "Parameter":
        if id(self) in memo:
            return memo[id(self)]
        copied = type(self)(self.data.clone(), self.requires_grad)
        memo[id(self)] = copied
        return copied

    def __reduce_ex__(self, protocol):
        arr = np.array(self.data._host_array())
        return (_rebuild_parameter, (arr, self.dtype.name, self.requires_grad))


def _rebuild_parameter(arr: np.ndarray, dtype_name: str, requires_grad: bool) -> Parameter:
    return Parameter(Tensor._from_array(arr, dt.from_name(dtype_name)), requires_grad)


class _BufferMeta(type):
    # a Buffer is a plain Tensor marked at construction, so `isinstance` checks the mark
    def __instancecheck__(cls, instance) -> bool:
        return isinstance(instance, Tensor) and instance.__dict__.get("_is_buffer", False)


class Buffer(metaclass=_BufferMeta):
    """A tensor that registers itself as a Module buffer when assigned as an attribute."""

    def __new__(cls, data: Tensor | None = None, *, persistent: bool = True) -> Tensor:
        if data is None:
            data = _empty_float()
        t = data.detach()
        t.requires_grad = data.requires_grad
        t.__dict__["persistent"] = persistent
        t.__dict__["_is_buffer"] = True
        return t


_LAZY_NAMES = {"UninitializedParameter": "UninitializedParameter", "UninitializedBuffer": "UninitializedBuffer",
               "UninitializedTensorMixin": "_Uninitialized", "is_lazy": "is_lazy"}


def __getattr__(name: str):
    """torch.nn.parameter's lazy placeholders, defined with the lazy modules (which import this module)."""
    if name in _LAZY_NAMES:
        from .modules import lazy
        return getattr(lazy, _LAZY_NAMES[name])
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

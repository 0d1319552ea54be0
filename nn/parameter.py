"""Parameter and Buffer: the tensors a Module registers as its learnable weights and its state."""
from __future__ import annotations

import numpy as np

from .. import ops
from ..ops.dispatch.torch_function import register_plain_subclass
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


register_plain_subclass(Parameter)  # torch's Parameter disables __torch_function__


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


# -- torch.nn.parameter's placeholders of the lazy modules (nn/modules/lazy.py) ---------------------------
class _Uninitialized:
    """What the placeholders share: a dtype and device but no shape until `materialize`."""

    cls_to_become: type = Tensor

    def materialize(self, shape, device=None, dtype=None) -> None:
        """Give this placeholder uninitialized storage of `shape`; it becomes an ordinary parameter/tensor."""
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        self.data = ops.empty(shape, device=device or self.device, dtype=dtype or self.dtype)
        self.__class__ = self.cls_to_become

    def __repr__(self) -> str:
        return f"<{type(self).__name__}>"

    __str__ = __repr__

    @property
    def shape(self):
        """torch's refusal: a placeholder has no shape until its module's first forward."""
        raise RuntimeError("Can't access the shape of an uninitialized parameter or buffer. This error usually happens "
                           "in `load_state_dict` when trying to load an uninitialized parameter into an initialized "
                           "one. Call `forward` to initialize the parameters before accessing their attributes.")

    def share_memory_(self):
        """torch's refusal: there is no memory to share yet."""
        raise RuntimeError("Can't share memory on an uninitialized parameter or buffer. Call `forward` to initialize "
                           "the parameters before calling `module.share_memory()`.")

    def __deepcopy__(self, memo):
        copied = type(self)(self.requires_grad, self.device, self.dtype)
        memo[id(self)] = copied
        return copied


# the tensor functions a placeholder refuses, as torch's (its allow-list: conversions, to/cpu/cuda, size, copy_,
# properties); name -> the operation torch's message names
_REFUSED = {name: name for name in (
    "numel", "nelement", "dim", "ndimension", "view", "view_as", "reshape", "reshape_as", "flatten", "expand",
    "squeeze", "unsqueeze", "permute", "transpose", "t", "chunk", "split", "sum", "mean", "std", "var", "norm", "abs",
    "max", "min", "detach", "detach_", "clone", "contiguous", "add", "add_", "sub", "sub_", "mul", "mul_", "div",
    "div_", "matmul", "mm", "item", "tolist", "numpy", "fill_", "zero_", "normal_", "uniform_", "requires_grad_",
    "stride", "storage_offset", "is_contiguous", "data_ptr", "untyped_storage", "new_empty", "new_zeros",
    "new_ones")}
_REFUSED.update({"__add__": "add", "__radd__": "add", "__sub__": "sub", "__rsub__": "rsub", "__mul__": "mul",
                 "__rmul__": "mul", "__truediv__": "div", "__matmul__": "matmul", "__neg__": "neg",
                 "__getitem__": "__getitem__", "__setitem__": "__setitem__", "__bool__": "__bool__"})


def _refusal(name: str, op: str):
    def refused(self, *args, **kwargs):
        raise ValueError(f"Attempted to use an uninitialized parameter in <method '{op}' of 'torch._C.TensorBase' "
                         "objects>. This error happens when you are using a `LazyModule` or explicitly manipulating "
                         f"`torch.nn.parameter.{type(self).__name__}` objects. When using LazyModules Call `forward` "
                         "with a dummy batch to initialize the parameters before calling torch functions")
    refused.__name__ = name
    return refused


for _name, _op in _REFUSED.items():
    setattr(_Uninitialized, _name, _refusal(_name, _op))


def _reduce_placeholder(self, protocol):
    # as torch's: a placeholder pickles as its class and requires_grad (it has no values to save)
    return type(self), (self.requires_grad,)


_Uninitialized.__reduce_ex__ = _reduce_placeholder


class UninitializedParameter(_Uninitialized, Parameter):
    """A parameter whose shape is not known yet."""

    __slots__ = ()
    cls_to_become = Parameter

    def __new__(cls, requires_grad: bool = True, device=None, dtype=None) -> "UninitializedParameter":
        return Parameter.__new__(cls, ops.empty(0, device=device, dtype=dtype), requires_grad)


class UninitializedBuffer(_Uninitialized, Tensor):
    """A buffer whose shape is not known yet."""

    __slots__ = ()

    def __new__(cls, requires_grad: bool = False, device=None, dtype=None) -> "UninitializedBuffer":
        data = ops.empty(0, device=device, dtype=dtype)
        buf = cls._make(data._v, data.dtype, data.device, data._vm)
        buf.requires_grad = requires_grad
        return buf

    def __init__(self, *args, **kwargs) -> None:
        pass


def is_lazy(value) -> bool:
    """Whether `value` is a placeholder still waiting for its shape."""
    return isinstance(value, _Uninitialized)


UninitializedTensorMixin = _Uninitialized  # torch's name

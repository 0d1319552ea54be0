"""Tensor methods that change dtype or device: to, float, long, type, cpu, detach."""
from __future__ import annotations

from ...tensor import Tensor, device as _device
from ...tensor import dtype as dt
from ...tensor.tensor import INFERENCE, contiguous_strides
from ..elementwise.copies import convert
from ..movement.memory_format import to_layout
from . import transfer

__all__: list = []
METHODS: dict = {}


def to(self: Tensor, *args, dtype: dt.dtype | None = None, device=None, non_blocking: bool = False,
       copy: bool = False, memory_format=None) -> Tensor:
    """Convert to a dtype and/or device: `.to(dtype)`, `.to(device)`, `.to(other_tensor)`."""
    for a in args:
        if isinstance(a, dt.dtype):
            dtype = a
        elif isinstance(a, Tensor):
            dtype, device = a.dtype, a.device
        elif isinstance(a, (str, _device)):
            device = a
        elif a is not None and not isinstance(a, bool):
            raise TypeError(f"to() received an invalid combination of arguments: {type(a).__name__}")
    dev = self.device if device is None else _device(device)
    if dev.type == "cuda" and dev.index is None:
        dev = _device("cuda", 0)
    elif dev.type == "meta" and dev.index is not None:  # a meta tensor has no index, as in torch
        dev = _device("meta")
    target = self.dtype if dtype is None else dtype
    if dev != self.device:
        return transfer.to_device(self, dev, target)
    v = self._v  # (a row-major tensor without memory_format keeps the plain conversion below)
    if memory_format is not None or v.strides != contiguous_strides(v.shape) and not self.is_contiguous():
        laid = to_layout(self, target, copy, memory_format)
        if laid is not None:
            return laid
    if target is self.dtype and not copy:
        return self
    return convert(self, target)


def _caster(d: dt.dtype):
    def fn(self: Tensor, memory_format=None) -> Tensor:
        return to(self, d)
    fn.__doc__ = f"Convert to {d}."
    return fn


def type_(self: Tensor, dtype=None, non_blocking: bool = False):
    """The type name, or a converted tensor when `dtype` is given."""
    names = dt.LEGACY_TYPE_NAMES
    dtype = getattr(dtype, "dtype", dtype)  # legacy type classes (torch.DoubleTensor) carry a dtype
    if dtype is None:  # (a meta tensor's name carries its device: torch.meta.FloatTensor)
        return "torch." + ("meta." if self.device.type == "meta" else "") + names[self.dtype]
    if isinstance(dtype, str):
        rev = {("torch." + v): k for k, v in names.items()}
        rev.update({("tidal." + v[len("torch."):]): k for v, k in rev.items()})
        if dtype not in rev:
            raise ValueError(f"invalid type: '{dtype}'")
        dtype = rev[dtype]
    return to(self, dtype)


def detach(self: Tensor) -> Tensor:
    """A tensor sharing this one's memory, cut from the autograd graph."""
    out = Tensor._make(self._v, self.dtype, self.device, self._vm)
    if self._vc is not None:  # (shares the version counter: `x.data`'s own one too)
        out._vc = self._vc
    if getattr(self, "_inference", False):  # a view of an inference tensor is one (ops/grad_attrs)
        out._inference = True
    return out


def detach_(self: Tensor) -> Tensor:
    """Cut this tensor from the autograd graph in place."""
    if self._base is not None and self._base is not self:
        raise RuntimeError("Can't detach views in-place. Use detach() instead. If you are using "
                           "DistributedDataParallel (DDP) for training, and gradient_as_bucket_view is set as "
                           "True, gradients are views of DDP buckets, and hence detach_() cannot be called on these "
                           "gradients. To fix this error, please refer to the Optimizer.zero_grad() function in "
                           "torch/optim/optimizer.py as the solution.")
    self.grad_fn = None
    self.requires_grad = False
    return self


def cpu(self: Tensor, memory_format=None) -> Tensor:
    """This tensor on the CPU (tidal keeps row-major order whatever `memory_format` asks)."""
    return to(self, "cpu")


def cuda(self: Tensor, device=None, non_blocking: bool = False, memory_format=None) -> Tensor:
    """This tensor on a CUDA device (tidal keeps row-major order whatever `memory_format` asks)."""
    return to(self, _device("cuda", 0 if device is None else (device if isinstance(device, int) else
                                                              _device(device).index or 0)))


def requires_grad_(self: Tensor, requires_grad: bool = True) -> Tensor:
    """Set requires_grad in place (leaf tensors only may change it)."""
    leaf = self.grad_fn is None or "_fw_only" in self.__dict__  # (forward AD's own tensors are leaves to torch)
    if not requires_grad and not leaf:
        raise RuntimeError("you can only change requires_grad flags of leaf variables. If you want to "
                           "use a computed variable in a subgraph that doesn't require differentiation "
                           "use var_no_grad = var.detach().")
    if requires_grad and not self.dtype.is_floating_point:
        raise RuntimeError("only Tensors of floating point dtype can require gradients")
    if requires_grad and (self._base if self._base is not None else self)._inference and not INFERENCE.now():
        raise RuntimeError("Setting requires_grad=True on inference tensor outside InferenceMode is not allowed.")
    if leaf:  # (on a non-leaf, requires_grad_(True) changes nothing, as in torch)
        self.requires_grad = requires_grad
    return self


def type_as(self: Tensor, other: Tensor) -> Tensor:
    """This tensor converted to `other`'s dtype."""
    return to(self, other.dtype)


def get_device(self: Tensor) -> int:
    """-1 on the CPU (and meta), else the device index."""
    return -1 if self.device.type in ("cpu", "meta") else (self.device.index or 0)


METHODS.update(type_as=type_as, get_device=get_device, to=to, type=type_, detach=detach, detach_=detach_, cpu=cpu, cuda=cuda,
               requires_grad_=requires_grad_,
               float=_caster(dt.float32), double=_caster(dt.float64), half=_caster(dt.float16),
               bfloat16=_caster(dt.bfloat16), long=_caster(dt.int64), int=_caster(dt.int32),
               short=_caster(dt.int16), char=_caster(dt.int8), byte=_caster(dt.uint8), bool=_caster(dt.bool_))

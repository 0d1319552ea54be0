"""Tensor methods about a tensor's memory and its legacy spellings: nbytes/itemsize/layout, dim_order,
set_/is_set_to, resize_ and resize_as_, the legacy `new` constructor, pin_memory, and the per-element
Python callbacks apply_/map_/map2_.

A tidal tensor is a view (shape, strides, offset) of a blob, so torch's storage operations become view
changes: set_ points a tensor at another's blob, resize_ re-views its blob (or a larger copy of it, whose
first bytes are the old ones, as torch's grown storage). The tensor keeps its identity (`.data` assignment).
One difference: torch's storage is shared by every view of it, so a grown storage is seen by the other views
too; tidal's other views keep the old blob.
"""
from __future__ import annotations

import warnings

import numpy as np

from ...tensor import Tensor
from ...tensor import dtype as dt
from ...tensor.tensor import Size, contiguous_strides, numel_of
from ...autograd.grad_mode import is_grad_enabled
from ..linalg.ldl import _NotImplemented  # torch's grad_fn class for an op without a derivative
from ..dispatch.mem_overlap import check_written
from ..dispatch.primitive import Primitive
from ..movement.views import make_view
from .uninitialized import filled
from .creation import empty
from .from_data import tensor as _tensor
from ...tensor import layout as _layout
from ...tensor.device import accelerator_count

__all__ = ["resize_as_", "is_set_to"]
METHODS: dict = {}


# -- sizes in bytes, layout, order -----------------------------------------------------------------
def _nbytes(self: Tensor) -> int:
    return self.numel() * self.dtype.itemsize


def _itemsize(self: Tensor) -> int:
    return self.dtype.itemsize


def _layout_of(self: Tensor):
    return _layout.strided  # tidal tensors are all strided


def _should_swap(shape: tuple, strides: tuple, a: int, b: int) -> int:
    """torch's comparison of two dims for the physical order (0: undecided)."""
    def ge(x, y):
        return y == 0 or (x != 0 and (x >= y or x % y == 0))
    sa, sb = strides[a], strides[b]
    if sa == 0 or sb == 0:
        return 0
    if sa == sb:
        return 0 if ge(shape[b], shape[a]) else 1
    return -1 if ge(sb, sa) else 1


def dim_order(self: Tensor, *, ambiguity_check: bool | list = False) -> tuple:
    """The dims from outermost to innermost in memory (torch's insertion sort over the strides); with
    ambiguity_check, torch's RuntimeError when more than one order fits (or than one listed memory format)."""
    shape, strides, ndim = tuple(self.shape), tuple(self.stride()), self.ndim
    if not isinstance(ambiguity_check, (bool, list)):
        raise ValueError("ambiguity_check should be a bool or a list of memory formats")  # torch's check
    if ambiguity_check is not False:
        formats = ambiguity_check if isinstance(ambiguity_check, list) else []
        several = any(a == b for a, b in zip(strides, strides[1:])) or any(s == 1 for s in shape)
        if several and sum(self.is_contiguous(memory_format=f) for f in formats) != 1:
            raise RuntimeError("The tensor does not have unique dim order, or cannot map to exact one of the given "
                               "memory formats.")
    if ndim <= 1:
        return tuple(range(ndim))
    dense, last = self.is_contiguous(), self.is_contiguous(memory_format="channels_last")
    if dense and not last:
        return tuple(range(ndim))
    if last and not dense:
        return (0, *range(2, ndim), 1)
    perm = list(reversed(range(ndim)))
    for i in range(1, ndim):
        d1 = i
        for d0 in reversed(range(i)):
            order = _should_swap(shape, strides, perm[d0], perm[d1])
            if order > 0:
                perm[d0], perm[d1] = perm[d1], perm[d0]
                d1 = d0
            elif order < 0:
                break
    if ambiguity_check and any(_should_swap(shape, strides, perm[i], perm[i + 1]) != -1 for i in range(ndim - 1)):
        raise RuntimeError("The tensor does not have unique dim order.")
    return tuple(reversed(perm))


def _const_data_ptr(self: Tensor) -> int:
    """data_ptr() (tidal has no copy-on-write storage for a read-only pointer to skip)."""
    return self.data_ptr()


def _output_nr(self: Tensor) -> int:
    return self._output_nr


METHODS.update(nbytes=property(_nbytes, doc="numel() * itemsize."),
               itemsize=property(_itemsize, doc="The size of one element in bytes."),
               layout=property(_layout_of, doc="torch.strided: every tidal tensor is dense and strided."),
               output_nr=property(_output_nr, doc="Which output of its grad_fn this tensor is."),
               dim_order=dim_order, const_data_ptr=_const_data_ptr)


def _false(self: Tensor) -> bool:
    return False


# layouts and device kinds tidal has none of: library code tests them as guards (`if grad.is_sparse: raise`)
METHODS.update({name: property(_false, doc=f"False: tidal has no {kind}.") for name, kind in (
    ("is_sparse", "sparse layouts"), ("is_sparse_csr", "sparse layouts"), ("is_quantized", "quantized tensors"),
    ("is_nested", "nested tensors"), ("is_mkldnn", "MKL-DNN layout"),
    ("is_mps", "MPS device"), ("is_xpu", "XPU device"), ("is_xla", "XLA device"), ("is_ipu", "IPU device"),
    ("is_maia", "MAIA device"), ("is_mtia", "MTIA device"), ("is_vulkan", "Vulkan device"))})
METHODS["is_distributed"] = _false


def not_nested_kernel(op: str, t: Tensor) -> NotImplementedError:
    """torch's dispatcher error for an op that only nested tensors have kernels for, called on a dense tensor."""
    return NotImplementedError(f"Could not run 'aten::{op}' with arguments from the '{t.device.type.upper()}' "
                               "backend. This could be because the operator doesn't exist for this backend.")


def _to_padded_tensor(self: Tensor, padding: float, output_size=None) -> Tensor:
    """A nested tensor's components padded into one dense tensor (tidal.nested); a dense tensor has none."""
    raise not_nested_kernel("to_padded_tensor", self)


METHODS["to_padded_tensor"] = _to_padded_tensor
METHODS["is_meta"] = property(lambda self: self.device.type == "meta", doc="Whether the tensor is on the meta device.")


# -- set_, is_set_to ---------------------------------------------------------------------------------
def _repoint(self: Tensor, source: Tensor, shape: tuple, strides: tuple, offset: int) -> Tensor:
    """Make `self` a view of `source`'s blob with the given geometry, keeping its identity."""
    self.data = make_view(source, tuple(shape), tuple(strides), offset)
    return self


_C_TYPES = {"float32": "float", "float64": "double", "int64": "long int", "int32": "int", "int16": "short int",
            "int8": "signed char", "uint8": "unsigned char", "bool": "bool", "float16": "c10::Half",
            "bfloat16": "c10::BFloat16", "complex64": "c10::complex<float>", "complex128": "c10::complex<double>"}


def _c_type(d: dt.dtype) -> str:
    return _C_TYPES.get(d.name, d.name)


def set_(self: Tensor, source: Tensor | None = None, storage_offset: int = 0, size=None, stride=None) -> Tensor:
    """Share `source`'s memory: its view (set_(source)) or the given geometry over it; set_() empties self.
    A geometry past the end of source's memory is refused (torch grows the shared storage instead). In a graph,
    as torch: refused on a leaf that requires grad; otherwise the result has no derivative."""
    if is_grad_enabled() and self.requires_grad and self.grad_fn is None:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
    check_written(self)
    inputs = (self,) if source is None else (self, source)
    out = _set(self, source, storage_offset, size, stride)
    SET.attach(inputs, (out,), node=_NotImplemented)  # (torch's result requires grad; only a backward fails)
    return out


def _set_backward(node, *grads):
    raise RuntimeError("derivative for set_ is not implemented")


SET = Primitive("set_", None, cpu=None, backward=_set_backward)  # (no kernel: set_ repoints self's geometry)


def _set(self: Tensor, source: Tensor | None, storage_offset: int, size, stride) -> Tensor:
    if source is None:
        empty = Tensor._empty((0,), self.dtype, self.device)
        return _repoint(self, empty, (0,), (1,), 0)
    if not isinstance(source, Tensor):
        raise TypeError(f"set_(): argument 'source' must be Tensor, not {type(source).__name__}")
    if source.dtype is not self.dtype:
        raise RuntimeError(f"Could not set tensor of type {_c_type(source.dtype)} to a tensor of type "
                           f"{_c_type(self.dtype)}")
    if size is None:
        if stride is not None or storage_offset:
            raise TypeError("set_(): size is required with storage_offset or stride")
        v = source._v
        return _repoint(self, source, v.shape, v.strides, v.offset)
    size = tuple(size)
    stride = contiguous_strides(size) if stride is None else tuple(stride)
    if len(stride) != len(size):
        raise RuntimeError("mismatch in length of strides and shape")
    _check_fits(source, size, stride, storage_offset)
    return _repoint(self, source, size, stride, storage_offset)


def _check_fits(source: Tensor, size: tuple, stride: tuple, offset: int) -> None:
    last = offset + sum((n - 1) * s for n, s in zip(size, stride)) if numel_of(size) else offset - 1
    have = source._v.blob.nbytes // source.dtype.itemsize
    if last >= have:
        raise RuntimeError(f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset {offset}, and "
                           f"itemsize {source.dtype.itemsize} requiring a storage size of "
                           f"{(last + 1) * source.dtype.itemsize} are out of bounds for storage of size "
                           f"{have * source.dtype.itemsize}")


def is_set_to(input: Tensor, tensor: Tensor) -> bool:
    """Whether both are the same window (shape, strides, offset) of the same memory."""
    a, b = input._v, tensor._v
    return a.blob is b.blob and a.offset == b.offset and a.shape == b.shape and a.strides == b.strides


METHODS.update(set_=set_, is_set_to=is_set_to)


# -- resize ----------------------------------------------------------------------------------------
def _sizes(args: tuple) -> tuple:
    if not args:
        raise TypeError('resize_() missing 1 required positional arguments: "size"')
    size = tuple(args[0]) if len(args) == 1 and isinstance(args[0], (tuple, list)) else tuple(args)
    for s in size:
        if isinstance(s, bool) or not isinstance(s, (int, np.integer)):
            raise TypeError(f"resize_(): argument 'size' must be tuple of ints, but found element of type "
                            f"{type(s).__name__}")
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: {list(size)}")
    return tuple(int(s) for s in size)


def _contiguous_for(shape: tuple, memory_format) -> tuple:
    name = getattr(memory_format, "name", memory_format)
    if memory_format is None or name in ("contiguous_format", "preserve_format"):
        return contiguous_strides(shape)
    want = {"channels_last": 4, "channels_last_3d": 5}.get(str(name))
    if want is None:
        raise RuntimeError(f"unsupported memory format {memory_format}")
    if len(shape) != want:
        raise RuntimeError(f"required rank {want} tensor to use {name} format")
    order = (0, *range(2, want), 1)  # N, spatial..., C from outermost to innermost
    strides, acc = [0] * want, 1
    for d in reversed(order):
        strides[d] = acc
        acc *= max(shape[d], 1)
    return tuple(strides)


def resize_(self: Tensor, *size, memory_format=None) -> Tensor:
    """Re-view self with `size` (contiguous), growing its memory when it is too small: the elements already
    there keep their values, new ones are uninitialized."""
    if self.requires_grad:
        raise RuntimeError("cannot resize variables that require grad")
    shape = _sizes(size)
    if tuple(shape) == self._v.shape and memory_format is None:  # torch's: the tensor as it is (strides kept,
        return self  # an expanded or transposed one too)
    if tuple(shape) != self._v.shape:  # (torch lets a resize to the same shape through)
        check_written(self)
    strides = _contiguous_for(shape, memory_format)
    offset, item = self._v.offset, self.dtype.itemsize
    need = offset + numel_of(shape)
    have = self._v.blob.nbytes // item
    if need <= have:
        return _repoint(self, self, shape, strides, offset)
    old = make_view(self, (have,), (1,), 0)  # the whole blob as a flat tensor
    grown = filled(Tensor._empty((need,), self.dtype, self.device), have)  # (the new elements: torch's fill)
    if have:
        grown[:have].copy_(old)
    return _repoint(self, grown, shape, strides, offset)


def resize_as_(input: Tensor, the_template: Tensor, *, memory_format=None) -> Tensor:
    """input.resize_(the_template.shape)."""
    return resize_(input, tuple(the_template.shape), memory_format=memory_format)


def _resize(self: Tensor, *size) -> Tensor:
    """Deprecated torch form: a resized alias of self (same memory), with torch's warning."""
    warnings.warn("non-inplace resize is deprecated", stacklevel=2)
    return resize_(self.detach(), *size)


def _resize_as(self: Tensor, tensor: Tensor) -> Tensor:
    """Deprecated torch form of resize_as_ on an alias, with torch's warning."""
    warnings.warn("non-inplace resize_as is deprecated", stacklevel=2)
    return resize_(self.detach(), tuple(tensor.shape))


METHODS.update(resize_=resize_, resize_as_=resize_as_, resize=_resize, resize_as=_resize_as)


# -- the legacy constructor -------------------------------------------------------------------------
def new(self: Tensor, *args, device=None) -> Tensor:
    """Legacy `x.new(...)`: x.new(2, 3) and x.new(size) uninitialized, x.new(data) from data, x.new(tensor) an
    alias of it, x.new() empty; always self's dtype, on self's device unless `device` says otherwise."""
    dev = self.device if device is None else device
    if not args:
        return empty(0, dtype=self.dtype, device=dev)
    if len(args) == 1 and isinstance(args[0], Tensor):
        other = args[0]
        if other.dtype is not self.dtype:
            raise TypeError(f"expected {self.dtype.name} (got {other.dtype.name})")
        return other.detach()
    if all(isinstance(a, (int, np.integer)) and not isinstance(a, bool) for a in args):
        return empty(*args, dtype=self.dtype, device=dev)
    if len(args) == 1 and isinstance(args[0], Size):
        return empty(tuple(args[0]), dtype=self.dtype, device=dev)
    if len(args) == 1 and isinstance(args[0], (list, tuple, np.ndarray)):
        return _tensor(args[0], dtype=self.dtype, device=dev)
    if len(args) == 1:
        raise TypeError(f"new(): data must be a sequence (got {type(args[0]).__name__})")
    raise TypeError("new() received an invalid combination of arguments")


METHODS.update(new=new)


# -- as_subclass ---------------------------------------------------------------------------------------
def as_subclass(self: Tensor, cls: type) -> Tensor:
    """An alias of self (same memory, still in the autograd graph) whose class is `cls`, a Tensor subclass."""
    if not isinstance(cls, type):
        raise TypeError(f"cls must be a type (got {type(cls).__name__})")
    if not issubclass(cls, Tensor):
        raise TypeError("Creating a Tensor subclass from a class that does not inherit from Tensor is not possible. "
                        "Make sure your class inherits from Tensor.")
    v = self._v
    alias = make_view(self, v.shape, v.strides, v.offset)
    ALIAS.attach((self,), (alias,))
    alias.__class__ = cls
    return alias


def _alias_backward(node, g):
    return (g,)


ALIAS = Primitive("alias", None, cpu=None, backward=_alias_backward)  # (no kernel: the alias is a view)


METHODS.update(as_subclass=as_subclass)


# -- pinned memory -----------------------------------------------------------------------------------
def pin_memory(self: Tensor, device=None) -> Tensor:
    """A copy for fast host-to-device transfers; like torch, an error where no accelerator exists."""
    if accelerator_count() == 0:
        raise RuntimeError("Cannot access accelerator device when none is available.")
    if self.device.type != "cpu":
        raise RuntimeError(f"cannot pin '{self.type()}' only dense CPU tensors can be pinned")
    return self.clone()  # tidal's transfers read host memory as it is: no page-locking to do


def is_pinned(self: Tensor, device=None) -> bool:
    """False: tidal allocates no page-locked host memory."""
    return False


METHODS.update(pin_memory=pin_memory, is_pinned=is_pinned)


# -- per-element Python callbacks (CPU) -------------------------------------------------------------
def _python_value(dtype: dt.dtype):
    """The Python type torch hands a callback for an element of `dtype`."""
    if dtype is dt.bool_:
        return bool
    if dtype.is_complex:
        return complex
    return float if dtype.is_floating_point else int


def _callback(self: Tensor, name: str, others: tuple, fn) -> Tensor:
    if self.requires_grad:
        raise RuntimeError(f"Can't call {name}() on Variable that requires grad. Use var.detach().{name}() instead.")
    if self.device.type != "cpu":
        raise TypeError(f"{name}_ is only implemented on CPU tensors")
    for other in others:
        if other.dtype is not self.dtype:
            raise TypeError(f"{name}: expected {self.type()} for 'other' (got {other.type()})")
    arrays = [self._host_array()] + [o.expand(*self.shape)._host_array() for o in others]  # (any dtype: bfloat16)
    cast = _python_value(self.dtype)
    values = [fn(*(cast(a[idx]) for a in arrays)) for idx in np.ndindex(*self.shape)]
    result = _tensor(values, dtype=self.dtype).reshape(tuple(self.shape))
    return self.copy_(result)


def apply_(self: Tensor, callable) -> Tensor:
    """self[i] = callable(self[i]) for every element, in Python (slow; CPU only)."""
    return _callback(self, "apply_", (), callable)


def map_(self: Tensor, tensor: Tensor, callable) -> Tensor:
    """self[i] = callable(self[i], tensor[i]), tensor broadcast to self's shape (CPU only)."""
    return _callback(self, "map_", (tensor,), callable)


def map2_(self: Tensor, x: Tensor, y: Tensor, callable) -> Tensor:
    """self[i] = callable(self[i], x[i], y[i]), x and y broadcast to self's shape (CPU only)."""
    return _callback(self, "map2_", (x, y), callable)


METHODS.update(apply_=apply_, map_=map_, map2_=map2_)

"""Creation functions: empty/zeros/ones/full and their `_like` and `new_` forms, eye, empty_strided.

Fills are VM instructions (math_api.fill_), so a large `zeros` costs the caller nothing.
`tensor`, `as_tensor`, `from_numpy` live in from_data.py and `arange`, `linspace`,
`logspace` in ranges.py; they are exported from here. Random creation is in random.py.
"""
from __future__ import annotations

from ...tensor import Size, Tensor
from ...tensor import dtype as dt
from ...vm import View
from ..dispatch.factory_args import (check_requires_grad, check_shape, device_arg, dtype_arg, empty_like_tensor,
                                     empty_strided_tensor, fill_scalar, int_arg, new_tensor_checked, number_arg,
                                     out_dtype, reject_extra, size_tuple, size_varargs, tensor_arg, write_out)
from .from_data import as_tensor, copied, from_numpy, tensor
from ..elementwise.copies import fill_, fill_values
from .ranges import arange, linspace, logspace
from ..dispatch.limited_dtypes import check as check_limited
from .uninitialized import filled
from ..movement.memory_format import empty_in_format

__all__ = ["tensor", "as_tensor", "from_numpy", "empty", "zeros", "ones", "full", "empty_like", "zeros_like",
           "ones_like", "full_like", "empty_strided", "empty_permuted", "scalar_tensor", "eye", "arange", "linspace", "logspace"]
METHODS: dict = {}

_ZEROS_NEGATIVE = "zeros: Dimension size must be non-negative."


def _filled(t: Tensor, fn: str, value) -> Tensor:
    """Queue the fill of a fresh tensor (a creation, not an in-place write: version stays 0)."""
    fill_values(t, fill_scalar(fn, value, t.dtype, t.numel()))
    t._v.blob.version = 0
    return t


def _fill_result(t: Tensor, fn: str, value, out) -> Tensor:
    """`t` filled with `value`, or `out=` filled in its place (a fill takes an expanded out, as torch's)."""
    if out is None:
        return _filled(t, fn, value)
    if out._v.shape != t._v.shape:  # (out is resized to the result's shape)
        return write_out(_filled(t, fn, value), out)
    return fill_(out, fill_scalar(fn, value, out.dtype))


def _new(fn: str, shape: tuple, dtype, device, requires_grad: bool, default_dtype: dt.dtype,
         default_device=None, out=None) -> Tensor:
    """A fresh contiguous tensor after PyTorch's checks of dtype (`out=`'s if given), device, requires_grad."""
    dev = default_device if device is None and default_device is not None else device_arg(device)
    if out is None and not requires_grad and (dtype is None or dtype.__class__ is dt.dtype):
        # the common call (nothing to check but the allocation): zeros(n, m), full(shape, v, dtype=...)
        return new_tensor_checked(shape, dtype or default_dtype, dev)
    dtype = out_dtype(fn, dtype_arg(fn, dtype), out) or default_dtype
    check_requires_grad(dtype, requires_grad)
    out = new_tensor_checked(shape, dtype, dev)
    out.requires_grad = requires_grad
    return out


# -- from a size -------------------------------------------------------------------------------------
def empty(*size, out=None, dtype: dt.dtype | None = None, layout=None, device=None, requires_grad: bool = False,
          pin_memory: bool = False, memory_format=None, **kwargs) -> Tensor:
    """An uninitialised tensor: `empty(2, 3)`, `empty((2, 3))`, `empty(size=[2, 3])`."""
    shape = check_shape(size_varargs("empty", size, kwargs.pop("size", None)))
    reject_extra("empty", kwargs)
    t = _new("empty", shape, dtype, device, requires_grad, dt.get_default_dtype(), out=out)
    if memory_format is not None:  # channels_last(_3d): the same memory, laid out in the format's order
        t = empty_in_format(t, memory_format)
    return write_out(filled(t), out)


def zeros(*size, out=None, dtype: dt.dtype | None = None, layout=None, device=None, requires_grad: bool = False,
          pin_memory: bool = False, **kwargs) -> Tensor:
    """A tensor of zeros."""
    shape = check_shape(size_varargs("zeros", size, kwargs.pop("size", None)), _ZEROS_NEGATIVE)
    reject_extra("zeros", kwargs)
    t = _new("zeros", shape, dtype, device, requires_grad, dt.get_default_dtype(), out=out)
    return _fill_result(t, "zeros", 0, out)


def ones(*size, out=None, dtype: dt.dtype | None = None, layout=None, device=None, requires_grad: bool = False,
         pin_memory: bool = False, **kwargs) -> Tensor:
    """A tensor of ones."""
    shape = check_shape(size_varargs("ones", size, kwargs.pop("size", None)))
    reject_extra("ones", kwargs)
    t = _new("ones", shape, dtype, device, requires_grad, dt.get_default_dtype(), out=out)
    return _fill_result(t, "ones", 1, out)


def full(size, fill_value, *, out=None, dtype: dt.dtype | None = None, layout=None, device=None,
         pin_memory: bool = False, requires_grad: bool = False) -> Tensor:
    """A tensor of `size` filled with `fill_value`; its dtype follows the value (bool, int64, default float)."""
    shape = check_shape(size_tuple("full", size))
    value = number_arg("full", "fill_value", fill_value, 2)
    t = _new("full", shape, dtype, device, requires_grad, dt.scalar_dtype(value), out=out)
    return _fill_result(t, "full", value, out)


def empty_strided(size, stride, *, dtype: dt.dtype | None = None, layout=None, device=None,
                  requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """An uninitialised tensor with the given strides (in elements)."""
    shape = check_shape(size_tuple("empty_strided", size))
    strides = size_tuple("empty_strided", stride, 2, "stride")
    if len(shape) != len(strides):
        raise RuntimeError(f"dimensionality of sizes ({len(shape)}) must match dimensionality of strides "
                           f"({len(strides)})")
    if any(s < 0 for s in strides):
        raise RuntimeError(f"Storage size calculation overflowed with sizes={list(shape)} and "
                           f"strides={list(strides)}")
    dtype = dtype_arg("empty_strided", dtype) or dt.get_default_dtype()
    check_requires_grad(dtype, requires_grad)
    out = filled(empty_strided_tensor(shape, strides, dtype, device_arg(device)))
    out.requires_grad = requires_grad
    return out


def scalar_tensor(s, *, dtype: dt.dtype | None = None, layout=None, device=None, pin_memory: bool = False,
                  requires_grad: bool = False) -> Tensor:
    """A 0-d tensor holding `s` (in the default float dtype unless `dtype` says otherwise)."""
    value = number_arg("scalar_tensor", "s", s, 1)
    t = _new("scalar_tensor", (), dtype, device, requires_grad, dt.get_default_dtype())
    return _filled(t, "scalar_tensor", value)


def eye(n, m=None, *, out=None, dtype: dt.dtype | None = None, layout=None, device=None,
        pin_memory: bool = False, requires_grad: bool = False) -> Tensor:
    """An n x m matrix with ones on the diagonal (m defaults to n)."""
    n = int_arg("eye", "n", n, 1)
    if n < 0:
        raise RuntimeError(f"n must be greater or equal to 0, got {n}")
    m = n if m is None else int_arg("eye", "m", m, 2)
    if m < 0:
        raise RuntimeError(f"m must be greater or equal to 0, got {m}")
    check_limited("eye", dtype)
    t = _filled(_new("eye", (n, m), dtype, device, requires_grad, dt.get_default_dtype(), out=out), "eye", 0)
    k = min(n, m)
    if k:  # the diagonal is a strided view of the same memory; filling it is one more instruction
        diagonal = Tensor._make(View(t._v.blob, (k,), (m + 1,), 0, t._v.dtype), t.dtype, t.device, t._vm, base=t)
        fill_values(diagonal, fill_scalar("eye", 1, t.dtype))
        t._v.blob.version = 0
    return write_out(t, out)


# -- like another tensor -------------------------------------------------------------------------------
def _like(fn: str, input, dtype, device, requires_grad: bool, memory_format) -> Tensor:
    """A fresh tensor shaped (and laid out) like `input`, after PyTorch's argument checks."""
    tensor_arg(fn, "input", input)
    dtype = dtype_arg(fn, dtype) or input.dtype
    dev = input.device if device is None else device_arg(device)
    check_requires_grad(dtype, requires_grad)
    out = empty_like_tensor(input, dtype, dev, memory_format)
    out.requires_grad = requires_grad
    return out


def empty_like(input: Tensor, *, dtype: dt.dtype | None = None, layout=None, device=None,
               requires_grad: bool = False, pin_memory: bool = False, memory_format=None) -> Tensor:
    """An uninitialised tensor like `input` (same shape, dtype, device and layout unless given)."""
    return filled(_like("empty_like", input, dtype, device, requires_grad, memory_format))


def zeros_like(input: Tensor, *, dtype: dt.dtype | None = None, layout=None, device=None,
               requires_grad: bool = False, pin_memory: bool = False, memory_format=None) -> Tensor:
    """Zeros shaped like `input`."""
    return _filled(_like("zeros_like", input, dtype, device, requires_grad, memory_format), "zeros_like", 0)


def ones_like(input: Tensor, *, dtype: dt.dtype | None = None, layout=None, device=None,
              requires_grad: bool = False, pin_memory: bool = False, memory_format=None) -> Tensor:
    """Ones shaped like `input`."""
    return _filled(_like("ones_like", input, dtype, device, requires_grad, memory_format), "ones_like", 1)


def full_like(input: Tensor, fill_value, *, dtype: dt.dtype | None = None, layout=None, device=None,
              requires_grad: bool = False, pin_memory: bool = False, memory_format=None) -> Tensor:
    """`fill_value` shaped like `input` (in `input`'s dtype unless given)."""
    value = number_arg("full_like", "fill_value", fill_value, 2)
    return _filled(_like("full_like", input, dtype, device, requires_grad, memory_format), "full_like", value)


# -- Tensor.new_*: the dtype and device of `self` by default ------------------------------------------------
def new_empty(self: Tensor, *size, dtype: dt.dtype | None = None, device=None, requires_grad: bool = False,
              layout=None, pin_memory: bool = False) -> Tensor:
    """An uninitialised tensor with this tensor's dtype and device."""
    shape = check_shape(size_varargs("new_empty", size))
    return filled(_new("new_empty", shape, dtype, device, requires_grad, self.dtype, self.device))


def new_zeros(self: Tensor, *size, dtype: dt.dtype | None = None, device=None, requires_grad: bool = False,
              layout=None, pin_memory: bool = False) -> Tensor:
    """Zeros with this tensor's dtype and device."""
    shape = check_shape(size_varargs("new_zeros", size))
    t = _new("new_zeros", shape, dtype, device, requires_grad, self.dtype, self.device)
    return _filled(t, "new_zeros", 0)


def new_ones(self: Tensor, *size, dtype: dt.dtype | None = None, device=None, requires_grad: bool = False,
             layout=None, pin_memory: bool = False) -> Tensor:
    """Ones with this tensor's dtype and device."""
    shape = check_shape(size_varargs("new_ones", size))
    t = _new("new_ones", shape, dtype, device, requires_grad, self.dtype, self.device)
    return _filled(t, "new_ones", 1)


def new_full(self: Tensor, size, fill_value, *, dtype: dt.dtype | None = None, device=None,
             requires_grad: bool = False, layout=None, pin_memory: bool = False) -> Tensor:
    """`fill_value` everywhere, in this tensor's dtype (not the value's) and device."""
    shape = check_shape(size_tuple("new_full", size))
    value = number_arg("new_full", "fill_value", fill_value, 2)
    t = _new("new_full", shape, dtype, device, requires_grad, self.dtype, self.device)
    return _filled(t, "new_full", value)


def new_tensor(self: Tensor, data, *, dtype: dt.dtype | None = None, device=None, requires_grad: bool = False,
               layout=None, pin_memory: bool = False) -> Tensor:
    """A copy of `data` in this tensor's dtype and device (unless given)."""
    return copied(data, dtype_arg("new_tensor", dtype) or self.dtype, self.device if device is None else device,
                  requires_grad, "tensor.new_tensor")


def empty_permuted(size, physical_layout, *, dtype: dt.dtype | None = None, layout=None, device=None,
                   requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """An uninitialised tensor of shape `size` whose memory holds its dims in `physical_layout` order."""
    shape = check_shape(size_tuple("empty_permuted", size))
    order = size_tuple("empty_permuted", physical_layout, 2, "physical_layout")
    n = len(shape)
    if len(order) != n:
        raise RuntimeError(f"Number of dimensions in size does not match the length of the physical_layout; "
                           f"i.e. len(size) = {n} is not equal to len(physical_layout) = {len(order)}")
    for i, d in enumerate(order):
        if not 0 <= d < n:
            raise RuntimeError(f"Dimension out of range (expected to be between 0 and {n - 1}, but got {d} at index "
                               f"{i}).  NB: negative dims not currently supported; file an issue if you want it.")
        if d in order[:i]:
            raise RuntimeError("Duplicate dim not allowed")
    physical = empty(tuple(shape[d] for d in order), dtype=dtype, device=device)
    inverse = sorted(range(n), key=order.__getitem__)
    return physical.permute(inverse).requires_grad_(requires_grad)


def new_empty_strided(self: Tensor, size, stride, *, dtype: dt.dtype | None = None, device=None,
                      requires_grad: bool = False, layout=None, pin_memory: bool = False) -> Tensor:
    """An uninitialised strided tensor with this tensor's dtype and device."""
    return empty_strided(size, stride, dtype=dtype_arg("new_empty_strided", dtype) or self.dtype,
                         device=self.device if device is None else device, requires_grad=requires_grad)


METHODS.update(new_empty=new_empty, new_zeros=new_zeros, new_ones=new_ones, new_full=new_full,
               new_tensor=new_tensor, new_empty_strided=new_empty_strided)


# -- torch's legacy constructors ----------------------------------------------------------------------------
def legacy_new(dtype: dt.dtype, *args, device=None) -> Tensor:
    """torch's legacy constructors (`FloatTensor(2, 3)`, `LongTensor([1, 2])`, `torch.Tensor(size)`): sizes give
    an uninitialized tensor, a sequence gives its values, a tensor of `dtype` is returned detached."""
    if len(args) == 1 and isinstance(args[0], Tensor):
        if args[0].dtype is not dtype:
            raise TypeError(f"expected {dtype} (got {args[0].dtype})")
        return args[0].detach()
    if len(args) == 1 and not isinstance(args[0], (int, Size)):
        if not hasattr(args[0], "__len__"):
            raise TypeError(f"new(): data must be a sequence (got {type(args[0]).__name__})")
        return tensor(args[0], dtype=dtype, device=device)
    shape = tuple(args[0]) if len(args) == 1 and isinstance(args[0], Size) else (args or (0,))
    return empty(*shape, dtype=dtype, device=device)

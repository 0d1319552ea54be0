"""Boolean masks: masked_fill, masked_scatter, masked_select, nonzero, argwhere, with gradients.

masked_fill is an elementwise where (it fuses); masked_scatter has a kernel; masked_select
and nonzero have data-dependent shapes, so they sync and compute on the host. Gradients:
masked_fill and masked_scatter mask the gradient where they wrote; masked_select and
masked_scatter are each other's adjoint, so double backward works.
"""
from __future__ import annotations

import math
import numbers

import numpy as np

from ...autograd.grad_mode import no_grad
from ...tensor import Tensor
from ...tensor import dtype as dt
from ..elementwise import copies, arithmetic as M
from . import scatter as S
from ..dispatch.broadcast import broadcast_shapes
from ..dispatch.primitive import Primitive
from ..dispatch.mem_overlap import INTERNAL, has_internal_overlap
from .expanded_writes import put_expanded, warn_expanded
from ..elementwise.plans import torch_name
from ..dispatch.factory_args import CHECKED_NAME, overflows
from ..movement.view_grads import overload
from ..dispatch.limited_dtypes import check as check_limited
from ..complex_numbers.half import widened as complex32_widened

__all__ = ["masked_fill", "masked_scatter", "masked_select", "nonzero", "argwhere"]


def host_result(arr: np.ndarray, dtype: dt.dtype, device, out: Tensor | None = None, reads=()) -> Tensor:
    """Wrap a freshly computed host array as a tensor on `device` (or copy it into `out`, which must not
    overlap the tensors the op `reads`)."""
    result = Tensor._from_array(np.ascontiguousarray(arr, dtype=dtype.np), dtype, share=True)
    if device != result.device:
        result = result.to(device)
    if out is None:
        return result
    S.prepare_out(out, result._v.shape, dtype, reads)
    return copies.copy_(out, result)


def _broadcast_copy(input: Tensor, shape: tuple) -> Tensor:
    """A new contiguous tensor of `shape` holding `input` broadcast to it (differentiable)."""
    if tuple(input._v.shape) == tuple(shape):
        return copies.clone(input)
    return copies.copy_(Tensor._empty(tuple(shape), input.dtype, input.device), input)


def _check_bool_mask(mask: Tensor, message: str) -> None:
    if not isinstance(mask, Tensor):
        raise TypeError(f"expected Tensor as mask argument, but got {type(mask).__name__}")
    if mask.dtype is not dt.bool_:
        raise RuntimeError(message.format(c=S.C_NAMES[mask.dtype], torch=torch_name(mask.dtype)))


def _fill_value(self: Tensor, value, op: str):
    """`value` as masked_fill writes it: a Python number of self's kind, or a 0-d tensor of self's dtype."""
    if isinstance(value, Tensor):
        if value.ndim:
            raise RuntimeError(f"{op} only supports a 0-dimensional value tensor, but got tensor with "
                               f"{value.ndim} dimension(s).")
        if value.dtype.is_complex and not self.dtype.is_complex:  # torch takes the value as a number
            number = complex(value.item())
            if self.dtype is not dt.bool_:
                _check_complex_fill(number, self.dtype)
            return S.scalar_for(self.dtype, number.real if self.dtype is not dt.bool_ else bool(number))
        same_memory = value._v.blob is self._v.blob  # reading self while writing it: take the value first
        return value if value.dtype is self.dtype and not same_memory else copies.convert(value, self.dtype)
    if not isinstance(value, (numbers.Number, np.generic)):
        raise TypeError(f"{op}(): argument 'value' must be Number, not {type(value).__name__}")
    _check_fill_fits(value, self.dtype)
    return S.scalar_for(self.dtype, value)


def _check_fill_fits(value, dtype) -> None:
    """torch's checked conversion of a number fill into self's dtype (1e6 into float16, 1e40 into float32 or
    complex64's parts, 2**40 into int32 all overflow)."""
    if isinstance(value, (bool, np.bool_)) or dtype is dt.bool_:
        return
    if dtype.is_complex:
        part = dt.float16 if dtype is dt.complex32 else dt.float32 if dtype is dt.complex64 else dt.float64
        z = complex(value)
        if overflows(z.real, part) or overflows(z.imag, part):
            raise RuntimeError(f"value cannot be converted to type c10::complex<{CHECKED_NAME[part].split('::')[-1]}>"
                               " without overflow")
        return
    if isinstance(value, complex):
        return  # (a complex number into a real dtype: _check_complex_fill's rule, on tensors)
    if overflows(value.item() if isinstance(value, np.generic) else value, dtype):
        raise RuntimeError(f"value cannot be converted to type {CHECKED_NAME[dtype]} without overflow")


def _check_complex_fill(value: complex, dtype) -> None:
    """torch's checked conversion of a complex fill into a real dtype: a nonzero imaginary part overflows."""
    if value.imag != 0:
        raise RuntimeError(f"value cannot be converted to type {CHECKED_NAME[dtype]} without overflow")


_MASK_MSG = "masked_fill_ only supports boolean masks, but got mask with dtype {c}"


def _masked_fill_backward(node, g):
    (mask,) = node.saved_tensors
    # the engine sums the value's (full-shaped) gradient down to its 0-d shape
    return (M.where(mask, 0.0, g) if S.wants(node, 0) else None,
            M.where(mask, g, 0.0) if len(node.next_functions) > 1 and S.wants(node, 1) else None)


def _fill_where(input: Tensor, mask: Tensor, value, out: Tensor | None) -> Tensor:
    """where(mask, value, input), into `out` if given, recorded as masked_fill."""
    check_limited("masked_fill", input.dtype)
    fill = _fill_value(input, value, "masked_fill_")
    tensor_fill = fill if isinstance(fill, Tensor) else None
    if out is not None:
        S.inplace_grad(out, (input, tensor_fill))  # (torch's error on a leaf, before anything is queued)
        broadcast_shapes(out._v.shape, mask._v.shape)  # (then, where they cannot broadcast, names self first)
    with no_grad():
        result = M.apply("where", mask, fill, input, out=out)
        if out is None and len(result._v.shape) in (4, 5) and not result.is_contiguous():
            result = result.contiguous()  # torch fills a contiguous clone, whatever the input's memory format
    name = "masked_fill" if tensor_fill is None else overload("masked_fill", 1)  # torch's class per overload
    MASKED_FILL.attach((input,) if tensor_fill is None else (input, tensor_fill), (result,), None, name, (mask,))
    return result


def masked_fill(input: Tensor, mask: Tensor, value) -> Tensor:
    """`input` with `value` where `mask` holds (broadcast); an elementwise where, so it fuses."""
    _check_bool_mask(mask, _MASK_MSG)
    return _fill_where(input, mask, value, None)


def masked_fill_(self: Tensor, mask: Tensor, value) -> Tensor:
    """In place: set `value` where `mask` holds (mask broadcast to self)."""
    _check_bool_mask(mask, _MASK_MSG)
    if 0 in self._v.strides and has_internal_overlap(self):  # torch warns, then fills each location once
        S.check_expand(mask, self._v.shape)
        warn_expanded("masked_fill_")
        return put_expanded(self, mask.expand(*self.shape), value)
    return _fill_where(self, mask, value, self)


def masked_scatter_(self: Tensor, mask: Tensor, source: Tensor) -> Tensor:
    """In place: the elements where `mask` holds take `source`'s values, in row-major order."""
    _check_bool_mask(mask, "masked_scatter_ only supports boolean masks, but got mask with dtype {torch}")
    if source.dtype is not self.dtype:
        raise RuntimeError(f"masked_scatter: expected self and source to have same dtypes but got"
                           f"{torch_name(self.dtype)} and {torch_name(source.dtype)}")
    S.check_expand(mask, self._v.shape)
    check_limited("masked_scatter", self.dtype)
    if has_internal_overlap(self):
        raise RuntimeError(INTERNAL)
    S.inplace_grad(self, (source,))  # (torch's error on a leaf, before anything is queued)
    MASKED_SCATTER.write((mask, source), (self,), None, checks_data=_source_checked_later(self, mask, source))
    return self


def _source_checked_later(self: Tensor, mask: Tensor, source: Tensor) -> bool:
    """torch's check that `source` holds an element for each true of `mask`, at the call when the mask's values
    are already computed (read without waiting); True when they are not: the kernel checks them."""
    if not self.numel():
        return False
    values = S.computed_values(mask)
    if values is None:
        return True
    count = int(np.count_nonzero(values))
    if values.size != self.numel():  # a broadcast mask: each true counts once per copy of it
        count = int(np.count_nonzero(np.broadcast_to(values, self._v.shape)))
    if source.numel() < count:
        raise RuntimeError("Number of elements of source < number of ones in mask")
    return False


def _masked_scatter_backward(node, g):
    (mask,) = node.saved_tensors
    grad_source = None
    if S.wants(node, 2):  # the selected gradient fills source's first elements, in row-major order
        picked, shape = masked_select(g, mask), node.attrs
        grad_source = S.embed(picked, shape, S.box(picked._v.shape, (math.prod(shape),)))
    return M.where(mask, 0.0, g) if S.wants(node, 0) else None, None, grad_source


def masked_scatter(input: Tensor, mask: Tensor, source: Tensor) -> Tensor:
    """A copy of `input` (broadcast with `mask`) with `source`'s values where `mask` holds."""
    _check_bool_mask(mask, "masked_scatter_ only supports boolean masks, but got mask with dtype {torch}")
    shape = broadcast_shapes(input._v.shape, mask._v.shape)
    if tuple(input._v.shape) == tuple(shape):
        return S.out_of_place(masked_scatter_, input, mask, source)
    return masked_scatter_(_broadcast_copy(input, shape), mask, source)


def _masked_scatter_kernel(ins, outs, attrs):
    dst = outs[0]
    mask = np.broadcast_to(ins[0], dst.shape)
    n = int(np.count_nonzero(mask))
    src = ins[1].reshape(-1)
    if src.size < n:
        raise RuntimeError("Number of elements of source < number of ones in mask")
    dst[mask] = src[:n]


# the node takes self, then the mask (no edge) and the source; its backward reads the mask and source's shape
MASKED_SCATTER = Primitive("masked_scatter", S.written_only, cpu=_masked_scatter_kernel, cuda=None,
                           backward=_masked_scatter_backward, saved=("input1",),
                           node_attrs=lambda inputs, attrs: inputs[2]._v.shape, grad_inputs=(0, 2), checks_data=True,
                           inplace=True)


def masked_select(input: Tensor, mask: Tensor, *, out: Tensor | None = None) -> Tensor:
    """The elements of `input` where `mask` holds (both broadcast), as a 1-d tensor (syncs)."""
    _check_bool_mask(mask, "masked_select: expected BoolTensor for mask")
    shape = broadcast_shapes(mask._v.shape, input._v.shape)  # this order names the sizes as PyTorch does
    S.check_out_grad("masked_select", out, (input,))
    check_limited("masked_select", input.dtype)
    values = np.broadcast_to(input._host_array(), shape)
    result = host_result(values[np.broadcast_to(mask._host_array(), shape)], input.dtype, input.device, out,
                         (input, mask))
    MASKED_SELECT.attach((input,), (result,), shape, saved=(mask, input))  # (the input too, as torch's)
    return result


def _masked_select_backward(node, g):
    # the gradient scattered back where the (broadcast) mask holds: masked_scatter, masked_select's adjoint
    return (masked_scatter(S.filled(node.attrs, g), node.saved_tensors[0], g),)


# the composites' nodes, with no edge to the mask (as torch's): masked_fill (a where) on the input, and the value when
# a tensor (torch's MaskedFillBackward0, MaskedFillBackward1 for a tensor value, through node=), masked_select
# (computed on the host) on the input with its attrs the broadcast shape; each saves the mask
MASKED_FILL = Primitive("masked_fill", None, cpu=None, backward=_masked_fill_backward)
MASKED_SELECT = Primitive("masked_select", None, cpu=None, backward=_masked_select_backward)


def nonzero(input: Tensor, *, out: Tensor | None = None, as_tuple: bool = False):
    """Indices of the nonzero elements: an (n, ndim) int64 tensor, or one 1-d tensor per dim (syncs)."""
    check_limited("nonzero", input.dtype)
    found = complex32_widened(input._host_array()) != 0
    if not as_tuple:
        return host_result(np.argwhere(found), dt.int64, input.device, out, (input,))
    coords = np.nonzero(found) if found.ndim else (np.zeros(int(found), np.int64),)
    return tuple(host_result(c, dt.int64, input.device) for c in coords)


def argwhere(input: Tensor) -> Tensor:
    """Indices of the nonzero elements as an (n, ndim) int64 tensor (syncs)."""
    return nonzero(input)


METHODS = dict(masked_fill=masked_fill, masked_fill_=masked_fill_, masked_scatter=masked_scatter,
               masked_scatter_=masked_scatter_, masked_select=masked_select, nonzero=nonzero, argwhere=argwhere)

"""Casts, copies and fills: convert (the one cast every op uses), copy_, fill_, zero_, clone and contiguous."""
from __future__ import annotations

import numbers
import warnings

from ...tensor import Tensor
from ...tensor import dtype as dt
from ...tensor.tensor import contiguous_strides
from ...autograd.graph import needs_grad
from ...autograd.view_inplace import needs_rebase, write_inplace, write_through_view
from ...vm import Instruction, compute_instruction
from ...vm.replay import head as replay_head
from . import plans as ew
from ..movement import many_dims
from ..movement.stride_rules import (CONTIGUOUS, PRESERVE, copy_strides, format_strides, memory_format_name,
                                     suggest_memory_format)
from ..dispatch.broadcast import broadcast_shapes
from ..dispatch.factory_args import empty_strided_tensor, fill_scalar
from ..dispatch.mem_overlap import check_out, check_written
from ..dispatch.node_names import overload
from ..dispatch.primitive import Primitive
from ..dispatch.number_args import number_tensor as _number_tensor

__all__ = ["clone"]


# -- casts, copies, fills ---------------------------------------------------------------------
def convert(x: Tensor, dtype: dt.dtype, out: Tensor | None = None, *, node: str = "to_copy") -> Tensor:
    """A contiguous copy of `x` converted to `dtype`, or written into `out` (in place); `node`: the fresh copy's
    node (torch's ToCopyBackward0, or CloneBackward0 for a clone)."""
    inplace = out is not None
    if out is None:
        out = Tensor._empty(x._v.shape, dtype, x.device)
    if x.dtype.is_complex and not out.dtype.is_complex and out.dtype is not dt.bool_:  # (to bool: z != 0, no loss)
        warnings.warn("Casting complex values to real discards the imaginary part", UserWarning, stacklevel=3)
    grad = out.dtype.is_floating_point and needs_grad((x, out) if inplace else (x,))
    if grad and inplace:
        ew.check_leaf_inplace(out)
        if needs_rebase(out):
            if not needs_grad((x,)):  # a source without a gradient: copy_'s node on the region (its old values get
                return write_inplace(out, _copied, x, True)  # none), as torch's CopySlices of CopyBackwards
            return write_through_view(out, convert(x, out.dtype) if x.shape == out.shape else
                                      convert(x, out.dtype).expand(out.shape))
    return _copied(out, x, grad, inplace, node)


def _copied(out: Tensor, x: Tensor, grad: bool, inplace: bool = True, node: str = "to_copy") -> Tensor:
    """Queue the cast of `x` into `out` and record its node when `grad` (convert's checks done)."""
    dst, src = (out._v, x._v) if len(out._v.shape) <= many_dims.MAX_NDIM else many_dims.kernel_views(out._v, x._v)
    out._vm.push(Instruction("to", None, (src,), (dst,), expr=f"{ew._CAST_NAME[out.dtype]}({{0}})"))
    if grad:  # (the instruction is the elementwise cast: only the node is the record's)
        if inplace:
            COPY.attach((out, x), (out,))
        else:  # a fresh copy: torch's node has the source as its one input
            TO_COPY.attach((x,), (out,), node=node)
    if inplace:
        (out._vc or out._v.blob).version += 1
    return out


def _zero_grad(node, g):
    return (fill_(convert(g, g.dtype), 0),)


def _copy_backward(node, g):
    # the old value of an overwritten tensor gets no gradient; the source gets g (fitted by the engine)
    return (None if node.next_functions[0][0] is None else fill_(convert(g, g.dtype), 0), g)


# copy_'s node: the overwritten tensor and the source
COPY = Primitive("copy_", None, cpu=None, backward=_copy_backward)
# fill_'s and zero_'s node, on the filled tensor: its old values get no gradient
FILL = Primitive("fill", None, cpu=None, backward=_zero_grad)


def copy_(self: Tensor, src, non_blocking: bool = False) -> Tensor:
    """Copy `src` (broadcast to this shape, converted to this dtype; a number as a 0-d tensor) into this tensor."""
    if self.__class__ is not Tensor and hasattr(self, "_lazy_view"):  # into a conj view: its own writer (out= too)
        return self.copy_(src, non_blocking)
    if isinstance(src, numbers.Number) and not isinstance(src, Tensor):  # (then converted, as any source)
        src = _number_tensor(src, widest=True).to(self.device)
    if not isinstance(src, Tensor):
        raise TypeError(f"copy_(): argument 'other' (position 1) must be Tensor, not {type(src).__name__}")
    if self.dtype.is_floating_point and needs_grad((src, self)):
        ew.check_leaf_inplace(self)  # (torch's autograd refuses a leaf before the copy checks shapes)
    if broadcast_shapes(self._v.shape, src._v.shape) != self._v.shape:
        raise RuntimeError(f"copy_: the source of shape {list(src._v.shape)} can't be broadcast to the "
                           f"destination of shape {list(self._v.shape)}")
    check_out(self, (src,), elementwise=True)
    if src.device != self.device:
        src = src.to(self.device)
    return convert(src, self.dtype, out=self)


def fill_(self: Tensor, value, *, _node: str = "fill") -> Tensor:
    """Set every element to `value` (a number or a one-element tensor)."""
    node = _node
    if isinstance(value, Tensor):
        if value.dim() != 0:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with "
                               f"{value.dim()} dimensions.")
        return copy_(self, value)
    if not isinstance(value, numbers.Number):
        raise TypeError(f"fill_(): argument 'value' must be Number, not {type(value).__name__}")
    value = fill_scalar("fill_", value, self.dtype, self.numel())  # (one float8 element: a plain cast, as torch)
    check_written(self)
    if self._requires_grad and needs_grad((self,)):
        ew.check_leaf_inplace(self)
        return write_inplace(self, fill_values, value, node)
    return fill_values(self, value)


_FILLS: dict = {}  # dtype -> (fill expression, its replay head, its kernel alone on the CPU or None)


def _store_kernel(ins, outs, attrs) -> None:
    # a fill run alone, when the value is already of the tensor's type: one store instead of the NumPy
    # program (the cast expression, then a copy), a third of a tiny `zeros`/`full`
    outs[0][...] = ins[0]


def fill_values(self: Tensor, value, node: str | None = None) -> Tensor:
    """Queue the fill of `self` with a checked `value`; with `node`, record it (no leaf check)."""
    (self._vc or self._v.blob).version += 1
    dtype = self.dtype
    fill = _FILLS.get(dtype)
    if fill is None:  # the expression and its replay head, made once per dtype
        expr = f"{ew._CAST_NAME[dtype]}({{0}})"
        fill = _FILLS[dtype] = (expr, replay_head(expr, None, "compute", 1, 1),
                                _store_kernel if dtype.compute is dtype else None)
    typed = dtype.compute.np.type(value) if dtype is not dt.bool_ else value
    self._vm.push(compute_instruction("fill", fill[2] if self.device.type == "cpu" else None, (typed,),
                                      (many_dims.kernel_view(self._v),), None, fill[0], None, fill[1]))
    if node is not None and self.dtype.is_floating_point:  # the old values get no gradient
        FILL.attach((self,), (self,), node=overload(node, 2) if node == "fill" else node)
    return self


def zero_(self: Tensor) -> Tensor:
    """Set every element to zero."""
    return fill_(self, 0, _node="zero")


def _cloned(x: Tensor) -> Tensor:
    """A contiguous copy of `x` whose node is torch's CloneBackward0 (a cast's is ToCopyBackward0)."""
    return convert(x, x.dtype, node="clone")


def clone(input: Tensor, *, memory_format=None) -> Tensor:
    """A copy, laid out as `memory_format` says (ops/movement/memory_format.py: torch's rules, and tidal's default)."""
    v = input._v
    if memory_format is None and (v.strides == contiguous_strides(v.shape)
                                  or suggest_memory_format(input) == CONTIGUOUS):
        return _cloned(input)  # (tidal's default: a row-major copy)
    strides = copy_strides("clone", input, memory_format)
    return _cloned(input) if strides == contiguous_strides(v.shape) else laid_out(input, strides, node="clone")


def contiguous(self: Tensor, memory_format=None) -> Tensor:
    """Self if already dense in `memory_format`'s order (row-major by default), else a copy laid out in it."""
    name = CONTIGUOUS if memory_format is None else memory_format_name("contiguous", memory_format, CONTIGUOUS)
    if name == CONTIGUOUS:
        return self if self.is_contiguous() else _cloned(self)
    if self.is_contiguous(memory_format=name):
        return self
    if name == PRESERVE:
        raise RuntimeError("preserve memory format is unsupported by the contiguous operator")
    return laid_out(self, format_strides(self._v.shape, name), node="clone")


# -- copies in another layout -----------------------------------------------------------------------------
def _to_copy_backward(node, g):
    return (g,)  # the engine casts g to the input's dtype


def laid_out(x: Tensor, strides: tuple, dtype: dt.dtype | None = None, node: str = "to_copy") -> Tensor:
    """A copy of `x` (in `dtype`) with `strides`, whose grad_fn is torch's ToCopyBackward0 (or `node`'s)."""
    dtype = x.dtype if dtype is None else dtype
    out = empty_strided_tensor(x._v.shape, strides, dtype, x.device)
    convert(x.detach(), dtype, out=out)
    out._v.blob.version = 0  # a new tensor: its first write is not an in-place change
    if dtype.category >= dt.FLOAT:
        TO_COPY.attach((x,), (out,), node=node)
    return out


# the node of a copy in another dtype or layout (the copy is convert's): the gradient goes back as it is
TO_COPY = Primitive("_to_copy", None, cpu=None, backward=_to_copy_backward)


METHODS = dict(copy_=copy_, fill_=fill_, zero_=zero_, clone=clone, contiguous=contiguous)


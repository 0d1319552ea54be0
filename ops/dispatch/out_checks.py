"""torch's checks of an `out=` tensor at the call, shared by the ops that take one: no argument may require grad;
out's dtype, its overlap with itself and the inputs, and its resize to the result's shape (with torch's warning
when it held elements)."""
from __future__ import annotations

import warnings

from ...autograd.graph import needs_grad
from ...tensor import Tensor
from ...tensor import dtype as dt
from .mem_overlap import check_out
from .type_names import TYPEMETA_NAME
from .user_frame import user_stacklevel


def check_out_grad(op: str, out, args: tuple) -> None:
    """PyTorch's error for `out=` when an argument requires grad (grad mode on)."""
    if out is not None and needs_grad(args):
        raise RuntimeError(f"{op}(): functions with out=... arguments don't support automatic differentiation, "
                           "but one of the arguments requires grad.")


def prepare_out(out: Tensor, shape: tuple, dtype: dt.dtype, reads=()) -> None:
    """Check an `out=` tensor's dtype and its overlap with itself and the tensors the op `reads`, then
    resize it to `shape` as PyTorch does (warning if it had data)."""
    check_out(out, reads)
    if out.dtype is not dtype:
        raise RuntimeError(f"Expected out tensor to have dtype {TYPEMETA_NAME[dtype]}, but got "
                           f"{TYPEMETA_NAME[out.dtype]} instead")
    if tuple(out._v.shape) != tuple(shape):
        if out.numel():
            warnings.warn(f"An output with one or more elements was resized since it had shape "
                          f"{list(out._v.shape)}, which does not match the required output shape {list(shape)}. "
                          "This behavior is deprecated, and in a future PyTorch release outputs will not be "
                          "resized unless they have zero elements. You can explicitly reuse an out tensor t by "
                          "resizing it, inplace, to zero elements with t.resize_(0).", UserWarning,
                          stacklevel=user_stacklevel())
        out._v = Tensor._empty(tuple(shape), dtype, out.device)._v  # new storage, as resize_ gives

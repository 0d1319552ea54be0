"""Index and mask writes into an expanded tensor (a dim of stride 0 and size > 1), which torch runs with a warning.

torch refuses most writes into a tensor whose elements share memory, but index_put_ (and so `t[indices] = v`),
masked_fill_ (`t[mask] = x`) and index_fill_ only warn that the use is deprecated, then write: every selected
element writes its memory location, so positions that share a location all land there (accumulated ones add up,
masked ones fill it if any of them is selected). These writes are made here on the tensor's own memory: the
tensor with its stride-0 dims cut to size 1 (`collapsed`) is written with `put_` at the flat positions the index
selects in a map of each element's location. When the written tensor is in a graph, torch's backward of such a
write refuses (its gradient would be written through the same expanded layout): the write records a node whose
backward raises that error. Values in a graph get torch's gradient (the gradient at the elements they went to).
"""
from __future__ import annotations

import warnings

from ...autograd.grad_mode import is_grad_enabled, no_grad
from ...autograd.graph import needs_grad, record
from ...autograd.view_inplace import write_inplace
from ...tensor import Tensor
from ..dispatch.mem_overlap import INTERNAL
from ..dispatch.user_frame import user_stacklevel
from ..factories.ranges import arange
from .scatter import fit_rank

__all__ = ["warn_expanded", "put_expanded", "record_refused"]

_DEPRECATED = ("Use of {op} on expanded tensors is deprecated. Please clone() the tensor before performing this "
               "operation. This also applies to advanced indexing e.g. tensor[{example}")
_EXAMPLES = {"index_put_": "indices] = tensor", "masked_fill_": "mask] = scalar", "index_fill_": "mask] = scalar"}


def warn_expanded(op: str) -> None:
    """torch's UserWarning for `op` on an expanded tensor."""
    warnings.warn(_DEPRECATED.format(op=op, example=_EXAMPLES[op]), UserWarning, stacklevel=user_stacklevel())


def _collapsed(t: Tensor) -> Tensor:
    """`t` with each stride-0 dim cut to its first element: a view of the same memory, each location once."""
    v = t._v
    return t[tuple(slice(0, 1) if s == 0 and n > 1 else slice(None) for n, s in zip(v.shape, v.strides))]


def put_expanded(self: Tensor, index, values, accumulate: bool = False) -> Tensor:
    """self[index] = values (+= with `accumulate`) on an expanded `self`, as torch writes it: `values` (a tensor
    of self's dtype, or a number) broadcast to the selection, each selected element written into its location."""
    if is_grad_enabled() and needs_grad((self, values if isinstance(values, Tensor) else None)):
        return write_inplace(self, _recorded_put, index, values, accumulate)
    return _put(self, index, values, accumulate)


def _refused_backward(node, g):
    raise RuntimeError(INTERNAL)


def record_refused(self: Tensor, values) -> None:
    """Record the write into expanded `self` (made under no_grad) with a node whose backward refuses, as torch's."""
    inputs = (self, values) if isinstance(values, Tensor) else (self,)
    record("CopySlices", _refused_backward, inputs, (self,))


def _values_backward(node, g):
    index, ndim = node.attrs  # each value gets the gradient of the elements it was written to (torch's
    return None, fit_rank(g[index], ndim)  # IndexPutBackward0), the engine summing broadcast dims


def _recorded_put(self: Tensor, index, values, accumulate: bool) -> Tensor:
    with no_grad():
        _put(self, index, values, accumulate)
    if needs_grad((self,)):
        record_refused(self, values)
    else:
        record("IndexPutBackward0", _values_backward, (self, values), (self,), attrs=(index, values.ndim))
    return self


def _put(self: Tensor, index, values, accumulate: bool) -> Tensor:
    target = _collapsed(self)
    locations = arange(target.numel(), device=self.device).reshape(target.shape).expand(*self.shape)
    at = locations[index]
    if isinstance(values, Tensor):
        shape = tuple(values.shape)
        while shape and shape[0] == 1 and len(shape) > len(at.shape):  # (leading ones, as setitem trims them)
            shape = shape[1:]
        source = values.reshape(shape).expand(*at.shape)
    else:
        source = self.new_full(tuple(at.shape), values)
    target.put_(at, source.to(self.dtype), accumulate)
    return self

"""In-place ops on views of tensors in the graph (PyTorch's CopySlices).

`y[0].mul_(2)` writes through a view, so the gradient of `y`'s earlier value must
skip the overwritten region and flow into the new values instead. The op runs out of
place on the view (recording its own node), the result is written into the view's
memory, and the base gets a node that routes gradients: outside the region to its old
history, inside the region to the result. The view then hangs off the new base.
"""
from __future__ import annotations

from ..tensor import Tensor
from .grad_mode import no_grad
from .graph import record


def needs_rebase(out: Tensor) -> bool:
    """Whether an in-place write into `out` must rewrite its base's history."""
    base = out._base
    return base is not None and base is not out and (base.requires_grad or out.requires_grad)


def _layout(view: Tensor) -> tuple:
    v = view._v
    return v.shape, v.strides, v.offset


def _copy_slices_backward(node, g):
    shape, strides, offset = node.attrs
    rest = g.clone()
    with no_grad():
        rest.as_strided(shape, strides, offset + rest.storage_offset()).zero_()
    region = g.contiguous().as_strided(shape, strides, offset + g.contiguous().storage_offset())
    return rest, region


def write_through_view(out: Tensor, result: Tensor) -> Tensor:
    """Store `result` into view `out` and rebase the base's graph; returns `out`."""
    from .. import ops
    base = out._base
    if base.requires_grad and base.grad_fn is None:
        raise RuntimeError("a view of a leaf Variable that requires grad is being used in an in-place operation.")
    shape, strides, offset = _layout(out)
    rel = offset - base._v.offset
    if not base.is_contiguous():
        raise RuntimeError("in-place operation on a view of a non-contiguous tensor that requires grad is not "
                           "supported by tidal yet")
    with no_grad():
        ops.math_api.convert(result, out.dtype, out=out)
    record("copy_slices", _copy_slices_backward, (base, result), (base,), attrs=(shape, strides, rel))
    fresh = base.as_strided(shape, strides, offset)
    out.requires_grad = True
    out.grad_fn = fresh.grad_fn
    out._output_nr = 0
    return out

"""The layout of a leaf's .grad (torch's AccumulateGrad layout contract).

A leaf that is non-overlapping and dense (contiguous, channels_last, transposed...) gets a gradient with its
own strides; any other leaf (a strided slice, an expanded tensor) a contiguous one. The engine keeps the
gradient it computed when that already has the layout and nothing else holds it; otherwise it copies the
gradient into the layout (under grad mode the copy is recorded, torch's CopyBackwards, so create_graph
gradients stay differentiable).
"""
from __future__ import annotations

from ..tensor import Tensor
from ..tensor.tensor import contiguous_strides
from . import hooks
from . import view_inplace  # noqa: F401 - registers node "copy_" as torch's CopyBackwards

__all__ = ["leaf_grad_strides", "obeys_layout_contract", "clone_obey_contract"]


def leaf_grad_strides(leaf: Tensor) -> tuple:
    """The strides the gradient of `leaf` gets: the leaf's own when non-overlapping and dense, else row-major."""
    shape, strides = leaf._v.shape, leaf._v.strides
    return tuple(strides) if hooks.non_overlapping_and_dense(shape, strides) else contiguous_strides(shape)


def obeys_layout_contract(grad: Tensor, leaf: Tensor) -> bool:
    """Whether `grad` may become leaf.grad as it is: the leaf's strides (dims of size 1 aside, though a 0 stride
    there betrays a view) for a dense leaf, row-major for any other."""
    g, v = grad._v, leaf._v
    if g.strides == v.strides and g.shape == v.shape and 0 not in g.strides:
        return True  # the common case, answered first (the engine asks once per leaf per backward); equal
        # strides with gaps would wrongly pass, but the engine only offers gradients owning all their memory
    shape, want, have = tuple(v.shape), tuple(v.strides), tuple(g.strides)
    if tuple(g.shape) != shape:
        return False
    if not hooks.non_overlapping_and_dense(shape, want):
        return have == contiguous_strides(shape) or grad.is_contiguous()
    return all((h == w) if n != 1 else h != 0 for n, h, w in zip(shape, have, want))


def clone_obey_contract(grad: Tensor, leaf: Tensor) -> Tensor:
    """A copy of `grad` laid out as leaf.grad must be (recorded as CopyBackwards under grad mode)."""
    return hooks.laid_out(grad, leaf_grad_strides(leaf), node="copy_")

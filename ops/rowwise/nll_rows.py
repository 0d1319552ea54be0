"""nll_loss of (N, C) scores with class-index targets as one kernel each way (torch's nll_loss_forward and
nll_loss_backward), for float32/float64 CPU tensors without class weights.

The composite in nn/functional_loss.py (gather, masks, sums on tidal ops: ten instructions forward, as many
backward) stays the definition for every other case and for a create_graph backward. A target out of range
fails the kernel with torch's IndexError, reported at the next sync point as the line that issued it.
"""
from __future__ import annotations

import numpy as np

from ...autograd.grad_mode import is_grad_enabled
from ...tensor import Tensor
from ...tensor import dtype as dt
from ..dispatch.primitive import Primitive
from ..elementwise import arithmetic as M
from ..factories.creation import zeros

__all__ = ["takes", "nll_rows", "nll_rows_backward", "valid_targets"]


def takes(input: Tensor, target: Tensor, weight: Tensor | None) -> bool:
    """Whether these kernels run this nll_loss: (N, C) float32/float64 CPU scores, int64 targets, no weight."""
    return (input.__class__ is Tensor and target.__class__ is Tensor and weight is None and input.ndim == 2
            and input.dtype in (dt.float32, dt.float64) and target.dtype is dt.int64 and target.ndim == 1
            and input.device.type == "cpu")


def nll_rows(input: Tensor, target: Tensor, ignore_index: int, reduction: str) -> Tensor:
    """The loss -input[n, target[n]] over the targets not equal to ignore_index, reduced, recorded for autograd."""
    return NLL_LOSS((input, target), (ignore_index, reduction))[0]


def nll_rows_backward(g: Tensor, shape: tuple, dtype: dt.dtype, target: Tensor, total: Tensor, ignore_index: int,
                      reduction: str) -> Tensor:
    """The gradient of nll_rows with respect to its (shape, dtype) scores (not differentiable: a create_graph
    backward builds it from tidal ops, _nll_backward)."""
    return NLL_LOSS_BACKWARD((g, target, total), (ignore_index, reduction, shape, dtype))


def valid_targets(target: np.ndarray, classes: int, ignore_index: int) -> np.ndarray:
    """Where `target` (class indices) is not ignore_index; torch's IndexError for one out of [0, classes)."""
    valid = target != ignore_index
    bad = valid & ((target < 0) | (target >= classes))
    if bad.any():
        raise IndexError(f"Target {int(target[bad].flat[0])} is out of bounds.")
    return valid


def _forward_kernel(ins, outs, attrs) -> None:
    scores, target = ins
    ignore_index, reduction = attrs
    valid = valid_targets(target, scores.shape[1], ignore_index)
    rows = np.arange(target.shape[0])
    picked = np.where(valid, -scores[rows, np.where(valid, target, 0)], 0).astype(scores.dtype)
    count = np.count_nonzero(valid)
    outs[1][...] = count
    if reduction == "none":
        outs[0][...] = picked
    else:
        total = picked.sum()
        with np.errstate(all="ignore"):  # every target ignored: 0 / 0, NaN as torch's
            outs[0][...] = total / scores.dtype.type(count) if reduction == "mean" else total


def _backward_kernel(ins, outs, attrs) -> None:
    g, target, total = ins
    ignore_index, reduction = attrs[:2]
    grad = outs[0]
    grad[...] = 0
    valid = target != ignore_index
    rows = np.flatnonzero(valid)
    if reduction == "none":
        grad[rows, target[rows]] = -g.reshape(-1)[rows]
    else:
        scale = g / total if reduction == "mean" else g
        grad[rows, target[rows]] = -scale


def _nll_backward(node, g: Tensor) -> tuple:
    # one kernel; a create_graph backward (grad mode on) builds the same gradient from tidal ops instead
    target, total = node.saved_tensors
    ignore_index, reduction, shape, dtype = node.attrs
    if not is_grad_enabled():
        return nll_rows_backward(g, shape, dtype, target, total, ignore_index, reduction), None
    valid = target != ignore_index
    scale = g / total if reduction == "mean" else g
    rows = M.where(valid, -scale.expand(tuple(target.shape)), 0.0).to(dtype)
    return zeros(shape, dtype=dtype).scatter(1, M.where(valid, target, 0).unsqueeze(1), rows.unsqueeze(1)), None


# the records: the loss's node sits on the loss only, edged to the scores (none to the targets, as torch's), and reads
# the targets and the count; a target out of range
# fails the forward kernel (checks_data)
def _loss_shapes(ins: tuple, attrs: tuple) -> list:
    input, target = ins
    return [(target._v.shape if attrs[1] == "none" else (), input.dtype), ((), input.dtype)]


NLL_LOSS = Primitive("nll_loss", _loss_shapes, cpu=_forward_kernel, cuda=None, checks_data=True,
                     backward=_nll_backward, saved=("input1", "output1"), grad_inputs=(0,), grad_outputs=(0,),
                     node_attrs=lambda ins, attrs: attrs + (ins[0]._v.shape, ins[0].dtype))
NLL_LOSS_BACKWARD = Primitive("nll_loss_backward", lambda ins, attrs: [attrs[2:]], cpu=_backward_kernel, cuda=None)

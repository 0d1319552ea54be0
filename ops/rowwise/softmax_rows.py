"""softmax and log_softmax along the last dim as one kernel each way (torch's _softmax, _log_softmax and their
backward data kernels), for float32 CPU tensors.

The composite in ops/reductions/softmax.py (max, shift, exp, sum, scale on tidal ops) stays the definition for every
other case and for a create_graph backward. These loops are numba-compiled once numba is loaded
(ops/rowwise/softmax_kernels.py), NumPy before (a first small program does not pay for numba's import).
"""
from __future__ import annotations

import numpy as np

from ...tensor import Tensor
from ...tensor import dtype as dt
from ...vm import intra_op
from ...vm.codegen import kernel_module
from ..dispatch.primitive import Primitive

__all__ = ["takes", "softmax_rows", "softmax_rows_backward"]

def _compiled():
    return kernel_module('.softmax_kernels', __package__)  # ops/rowwise/softmax_kernels.py once compiled, else None


def takes(x: Tensor, d: int) -> bool:
    """Whether these kernels run softmax of `x` along dim `d`: its last, of a non-empty float32 CPU tensor. (float64
    keeps the composite, whose NumPy exp and sums give torch's bits: a softmax row then sums to exactly 1, so a
    gradient constant along the row gives exactly 0, as torch's.)"""
    return (isinstance(x, Tensor) and x.dtype is dt.float32 and d == x.ndim - 1 and x.device.type == "cpu"
            and x.numel() > 0)


def softmax_rows(x: Tensor, log: bool, safe: bool = False) -> Tensor:
    """softmax (log_softmax if `log`) of `x` along its last dim; with `safe`, a row that is all -inf gives zeros
    (torch's _safe_softmax) rather than NaN."""
    return (_SAFE_SOFTMAX if safe else _LOG_SOFTMAX if log else _SOFTMAX)((x,), (log, safe))


def softmax_rows_backward(g: Tensor, y: Tensor, log: bool) -> Tensor:
    """The input gradient of softmax_rows from its output `y` and the output gradient `g`."""
    return (_LOG_SOFTMAX_BACKWARD if log else _SOFTMAX_BACKWARD)((g, y), log)


def _rows(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).reshape(-1, a.shape[-1] if a.ndim else 1)


def _forward_kernel(ins, outs, attrs) -> None:
    log, safe = attrs
    x = _rows(ins[0])
    y = outs[0].reshape(x.shape)
    compiled = _compiled()
    if compiled is not None:
        intra_op.pick(x.size, compiled.forward, compiled.forward_parallel)(x, y, log, safe)
        return
    with np.errstate(all="ignore"):
        top = x.max(1, keepdims=True)
        masked = (top == -np.inf) if safe else None
        if masked is not None and not masked.any():
            masked = None
        if masked is not None:
            top = np.where(masked, 0, top)
        shifted = x - top
        e = np.exp(shifted)
        total = e.sum(1, keepdims=True)
        if log:
            y[...] = shifted - np.log(total)
        else:
            np.divide(e, total, out=y)
            if masked is not None:
                y[masked[:, 0]] = 0


def _backward_kernel(ins, outs, log) -> None:
    g, y = _rows(ins[0]), _rows(ins[1])
    grad = outs[0].reshape(y.shape)
    compiled = _compiled()
    if compiled is not None:
        intra_op.pick(y.size, compiled.backward, compiled.backward_parallel)(g, y, grad, log)
        return
    with np.errstate(all="ignore"):
        if log:
            grad[...] = g - np.exp(y) * g.sum(1, keepdims=True)
        else:
            grad[...] = y * (g - (g * y).sum(1, keepdims=True))


# the records: kernels only (the autograd node is reductions/softmax.py's, whose backward calls these or, for a
# create_graph backward, the composite); each kernel serves the records of its direction
def _like_last(inputs: tuple, attrs) -> list:
    y = inputs[-1]
    return [(y._v.shape, y.dtype)]


_SOFTMAX = Primitive("_softmax", _like_last, cpu=_forward_kernel, cuda=None)
_LOG_SOFTMAX = Primitive("_log_softmax", _like_last, cpu=_forward_kernel, cuda=None)
_SAFE_SOFTMAX = Primitive("_safe_softmax", _like_last, cpu=_forward_kernel, cuda=None)
_SOFTMAX_BACKWARD = Primitive("_softmax_backward_data", _like_last, cpu=_backward_kernel, cuda=None)
_LOG_SOFTMAX_BACKWARD = Primitive("_log_softmax_backward_data", _like_last, cpu=_backward_kernel, cuda=None)

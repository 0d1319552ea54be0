"""The LSTM cell's gate math as one kernel each way (torch's fused LSTM cell), for float32 and float64 CPU tensors.

An LSTM step is a product (the gates, x W_ih^T + b_ih + h W_hh^T + b_hh) and then a dozen elementwise ops on four
slices of it: as tidal ops, each records a node and issues an instruction, which made a recurrent layer cost ten
times torch's. Here the gate math is one record: forward, (gates, c) -> (h', c') with the gate activations kept as a
workspace; backward, one kernel from the workspace. The formulas are written once (`_cell`, `_cell_grads`) over
operators and two activations, so the NumPy kernels and the composite a create_graph backward runs (tidal ops, hence
differentiable again) are the same arithmetic. nn/functional_rnn.py takes this path for whole sequences and cells.
"""
from __future__ import annotations

import numpy as np

from ...autograd.grad_mode import is_grad_enabled
from ...tensor import Tensor
from ...tensor import dtype as dt
from ..dispatch.primitive import Primitive
from ..movement.shape_ops import cat

__all__ = ["takes", "lstm_cell_rows"]


def takes(gates: Tensor, c: Tensor) -> bool:
    """Whether the fused cell runs this step: float32/float64 CPU gates and cell state of one dtype."""
    return (gates.dtype is c.dtype and gates.dtype in (dt.float32, dt.float64) and gates.device.type == "cpu"
            and c.device.type == "cpu" and gates.__class__ is Tensor and c.__class__ is Tensor)


def lstm_cell_rows(gates: Tensor, c: Tensor) -> tuple:
    """(h', c') of one LSTM step from its (batch, 4 * hidden) gates, in torch's order (input, forget, cell, output)."""
    h, c_new, _ = _LSTM_CELL((gates, c))
    return h, c_new


def _cell(i, f, g, o, c, sigmoid, tanh) -> tuple:
    # the activations, c' and h' from the gates' four parts (arrays or tensors alike)
    i, f, g, o = sigmoid(i), sigmoid(f), tanh(g), sigmoid(o)
    c_new = f * c + i * g
    return i, f, g, o, c_new, o * tanh(c_new)


def _cell_grads(g_h, g_c, i, f, g, o, c, tanh_c_new) -> tuple:
    # the gates' four gradients and c's, from those of h' and c' (0 where one has none)
    dc = g_c + g_h * o * (1 - tanh_c_new * tanh_c_new)
    return (dc * g * i * (1 - i), dc * c * f * (1 - f), dc * i * (1 - g * g), g_h * tanh_c_new * o * (1 - o)), dc * f


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-x))  # (tidal's sigmoid: the same expression on the NumPy path)


def _quarters(a):
    n = a.shape[-1] // 4
    return a[..., :n], a[..., n:2 * n], a[..., 2 * n:3 * n], a[..., 3 * n:]


def _forward_kernel(ins, outs, attrs) -> None:
    gates, c = ins
    h_out, c_out, work = outs
    with np.errstate(all="ignore"):
        i, f, g, o, c_new, h = _cell(*_quarters(gates), c, _sigmoid, np.tanh)
    c_out[...] = c_new
    h_out[...] = h
    for part, value in zip(_quarters(work), (i, f, g, o)):
        part[...] = value


def _backward_kernel(ins, outs, attrs) -> None:
    has_h, has_c = attrs
    ins = list(ins)
    g_h = ins.pop(0) if has_h else 0
    g_c = ins.pop(0) if has_c else 0
    c, c_new, work = ins
    grad_gates, grad_c = outs
    with np.errstate(all="ignore"):
        parts, dc = _cell_grads(g_h, g_c, *_quarters(work), c, np.tanh(c_new))
    for part, value in zip(_quarters(grad_gates), parts):
        part[...] = value
    grad_c[...] = dc


def _backward(node, g_h: Tensor | None, g_c: Tensor | None) -> tuple:
    gates, c, c_new, work = node.saved_tensors
    if is_grad_enabled():  # create_graph: the same formulas in tidal ops, from the gates (differentiable again)
        i, f, g, o, c_new, _ = _cell(*gates.chunk(4, -1), c, Tensor.sigmoid, Tensor.tanh)
        parts, dc = _cell_grads(0 if g_h is None else g_h, 0 if g_c is None else g_c, i, f, g, o, c, c_new.tanh())
        return cat(list(parts), -1), dc
    present = tuple(t for t in (g_h, g_c) if t is not None)
    return _LSTM_CELL_BACKWARD(present + (c, c_new, work), (g_h is not None, g_c is not None))


def _cell_shapes(inputs: tuple, attrs) -> list:
    gates, c = inputs
    return [(c._v.shape, c.dtype), (c._v.shape, c.dtype), (gates._v.shape, gates.dtype)]


def _grad_shapes(inputs: tuple, attrs) -> list:
    c, work = inputs[-3], inputs[-1]
    return [(work._v.shape, work.dtype), (c._v.shape, c.dtype)]


# the node sits on (h', c'); the workspace (the activations) is saved for the backward kernel
_LSTM_CELL = Primitive("_thnn_fused_lstm_cell", _cell_shapes, cpu=_forward_kernel, cuda=None, backward=_backward,
                       saved=("input0", "input1", "output1", "output2"), grad_outputs=(0, 1))
_LSTM_CELL_BACKWARD = Primitive("_thnn_fused_lstm_cell_backward", _grad_shapes, cpu=_backward_kernel, cuda=None)

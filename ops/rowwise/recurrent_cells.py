"""The LSTM and GRU cells' gate math as one kernel each way (torch's fused cells), for float32 and float64 CPU tensors.

A recurrent step is a product or two (the gates) and then a dozen elementwise ops on slices of them: as tidal ops,
each records a node and issues an instruction, which made a recurrent layer cost ten times torch's. Here a cell's gate
math is one record: forward, gates (and state) -> the new state with the activations kept as a workspace; backward,
one kernel from the workspace. Each cell's formulas are written once (`_lstm`, `_lstm_grads`, `_gru`, `_gru_grads`)
over operators and two activations, so the NumPy kernels and the composite a create_graph backward runs (tidal ops,
hence differentiable again) are the same arithmetic. nn/functional_rnn.py takes this path for sequences and cells.
"""
from __future__ import annotations

import numpy as np

from ...autograd.grad_mode import is_grad_enabled
from ...tensor import Tensor
from ...tensor import dtype as dt
from ..dispatch.primitive import Primitive
from ..movement.shape_ops import cat

__all__ = ["takes", "lstm_cell_rows", "gru_cell_rows"]


def takes(*tensors: Tensor) -> bool:
    """Whether the fused cells run a step on these tensors: plain float32 or float64 CPU tensors of one dtype."""
    first = tensors[0].dtype
    if first not in (dt.float32, dt.float64):
        return False
    for t in tensors:
        if t.__class__ is not Tensor or t.dtype is not first or t.device.type != "cpu":
            return False
    return True


def lstm_cell_rows(gates: Tensor, c: Tensor) -> tuple:
    """(h', c') of one LSTM step from its (batch, 4 * hidden) gates, in torch's order (input, forget, cell, output)."""
    h, c_new, _ = _LSTM_CELL((gates, c))
    return h, c_new


def gru_cell_rows(x_gates: Tensor, h_gates: Tensor, h: Tensor) -> Tensor:
    """h' of one GRU step from the input's and the hidden state's (batch, 3 * hidden) gates (reset, update, new)."""
    return _GRU_CELL((x_gates, h_gates, h))[0]


# -- the formulas (NumPy arrays or tidal tensors alike) ------------------------------------------------------------
def _lstm(i, f, g, o, c, sigmoid, tanh) -> tuple:
    # the activations, c' and h' from the gates' four parts
    i, f, g, o = sigmoid(i), sigmoid(f), tanh(g), sigmoid(o)
    c_new = f * c + i * g
    return i, f, g, o, c_new, o * tanh(c_new)


def _lstm_grads(g_h, g_c, i, f, g, o, c, tanh_c_new) -> tuple:
    # the gates' four gradients and c's, from those of h' and c' (0 where one has none)
    dc = g_c + g_h * o * (1 - tanh_c_new * tanh_c_new)
    return (dc * g * i * (1 - i), dc * c * f * (1 - f), dc * i * (1 - g * g), g_h * tanh_c_new * o * (1 - o)), dc * f


def _gru(xr, xz, xn, hr, hz, hn, h, sigmoid, tanh) -> tuple:
    # the reset and update gates, the new gate and h' (= (1 - z) n + z h)
    r, z = sigmoid(xr + hr), sigmoid(xz + hz)
    n = tanh(xn + r * hn)
    return r, z, n, n + z * (h - n)


def _gru_grads(g_h, r, z, n, hn, h) -> tuple:
    # the input gates' gradients, the hidden gates' and h's, from h''s
    dn = g_h * (1 - z) * (1 - n * n)
    dz = g_h * (h - n) * z * (1 - z)
    dr = dn * hn * r * (1 - r)
    return (dr, dz, dn), (dr, dz, dn * r), g_h * z


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-x))  # (tidal's sigmoid: the same expression on the NumPy path)


def _parts(a, k: int) -> list:
    n = a.shape[-1] // k
    return [a[..., j * n:(j + 1) * n] for j in range(k)]


def _store(out: np.ndarray, values) -> None:
    for part, value in zip(_parts(out, len(values)), values):
        part[...] = value


# -- kernels ---------------------------------------------------------------------------------------------------
def _lstm_kernel(ins, outs, attrs) -> None:
    gates, c = ins
    h_out, c_out, work = outs
    with np.errstate(all="ignore"):
        i, f, g, o, c_new, h = _lstm(*_parts(gates, 4), c, _sigmoid, np.tanh)
    c_out[...] = c_new
    h_out[...] = h
    _store(work, (i, f, g, o))


def _lstm_backward_kernel(ins, outs, attrs) -> None:
    has_h, has_c = attrs
    ins = list(ins)
    g_h = ins.pop(0) if has_h else 0
    g_c = ins.pop(0) if has_c else 0
    c, c_new, work = ins
    with np.errstate(all="ignore"):
        parts, dc = _lstm_grads(g_h, g_c, *_parts(work, 4), c, np.tanh(c_new))
    _store(outs[0], parts)
    outs[1][...] = dc


def _gru_kernel(ins, outs, attrs) -> None:
    x_gates, h_gates, h = ins
    hn = _parts(h_gates, 3)[2]
    with np.errstate(all="ignore"):
        r, z, n, h_new = _gru(*_parts(x_gates, 3), *_parts(h_gates, 3), h, _sigmoid, np.tanh)
    outs[0][...] = h_new
    _store(outs[1], (r, z, n, hn))


def _gru_backward_kernel(ins, outs, attrs) -> None:
    g_h, h, work = ins
    with np.errstate(all="ignore"):
        x_parts, h_parts, dh = _gru_grads(g_h, *_parts(work, 4), h)
    _store(outs[0], x_parts)
    _store(outs[1], h_parts)
    outs[2][...] = dh


# -- autograd --------------------------------------------------------------------------------------------------
def _lstm_backward(node, g_h: Tensor | None, g_c: Tensor | None) -> tuple:
    gates, c, c_new, work = node.saved_tensors
    if is_grad_enabled():  # create_graph: the same formulas in tidal ops, from the gates (differentiable again)
        i, f, g, o, c_new, _ = _lstm(*gates.chunk(4, -1), c, Tensor.sigmoid, Tensor.tanh)
        parts, dc = _lstm_grads(0 if g_h is None else g_h, 0 if g_c is None else g_c, i, f, g, o, c, c_new.tanh())
        return cat(list(parts), -1), dc
    present = tuple(t for t in (g_h, g_c) if t is not None)
    return _LSTM_CELL_BACKWARD(present + (c, c_new, work), (g_h is not None, g_c is not None))


def _gru_backward(node, g_h: Tensor) -> tuple:
    x_gates, h_gates, h, work = node.saved_tensors
    if is_grad_enabled():  # create_graph: as for the LSTM
        r, z, n, _ = _gru(*x_gates.chunk(3, -1), *h_gates.chunk(3, -1), h, Tensor.sigmoid, Tensor.tanh)
        x_parts, h_parts, dh = _gru_grads(g_h, r, z, n, h_gates.chunk(3, -1)[2], h)
        return cat(list(x_parts), -1), cat(list(h_parts), -1), dh
    return _GRU_CELL_BACKWARD((g_h, h, work))


def _lstm_shapes(inputs: tuple, attrs) -> list:
    gates, c = inputs
    return [(c._v.shape, c.dtype), (c._v.shape, c.dtype), (gates._v.shape, gates.dtype)]


def _lstm_grad_shapes(inputs: tuple, attrs) -> list:
    c, work = inputs[-3], inputs[-1]
    return [(work._v.shape, work.dtype), (c._v.shape, c.dtype)]


def _gru_shapes(inputs: tuple, attrs) -> list:
    h = inputs[2]
    return [(h._v.shape, h.dtype), (h._v.shape[:-1] + (4 * h._v.shape[-1],), h.dtype)]


def _gru_grad_shapes(inputs: tuple, attrs) -> list:
    h = inputs[1]
    gates = (h._v.shape[:-1] + (3 * h._v.shape[-1],), h.dtype)
    return [gates, gates, (h._v.shape, h.dtype)]


# the nodes sit on the new state (the LSTM's (h', c'), the GRU's h'); the workspaces (the activations, and the GRU's
# hidden new-gate part) are saved for the backward kernels
_LSTM_CELL = Primitive("_thnn_fused_lstm_cell", _lstm_shapes, cpu=_lstm_kernel, cuda=None, backward=_lstm_backward,
                       saved=("input0", "input1", "output1", "output2"), grad_outputs=(0, 1))
_LSTM_CELL_BACKWARD = Primitive("_thnn_fused_lstm_cell_backward", _lstm_grad_shapes, cpu=_lstm_backward_kernel,
                                cuda=None)
_GRU_CELL = Primitive("_thnn_fused_gru_cell", _gru_shapes, cpu=_gru_kernel, cuda=None, backward=_gru_backward,
                      saved=("input0", "input1", "input2", "output1"), grad_outputs=(0,))
_GRU_CELL_BACKWARD = Primitive("_thnn_fused_gru_cell_backward", _gru_grad_shapes, cpu=_gru_backward_kernel, cuda=None)

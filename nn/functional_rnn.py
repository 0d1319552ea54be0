"""The recurrent computations behind nn.RNN / LSTM / GRU and their cells, written in tidal ops.

A layer projects the whole input sequence through W_ih with one matmul, then loops over time for the
recurrent part: one small matmul (h W_hh^T) per step plus elementwise gate math that the VM fuses.
Gradients come from the ops' own backward formulas. Signatures follow torch's functions of the same
names (`torch.lstm`, `torch.lstm_cell`, ...): `params` is the flat weight list of the module, per
layer and direction `w_ih, w_hh[, b_ih, b_hh][, w_hr]`. A PackedSequence's data runs through the same
functions with its sizes given as the keyword `batch_sizes=` (torch's packed overloads).
"""
from __future__ import annotations

from typing import Callable

from .. import ops
from ..ops.dispatch import autocast as _ac
from ..ops.rowwise import recurrent_cells
from ..tensor import Tensor
from . import functional as F

__all__ = ["rnn_tanh_cell", "rnn_relu_cell", "lstm_cell", "gru_cell", "rnn_tanh", "rnn_relu", "lstm", "gru"]


def _affine(x: Tensor, weight_t: Tensor, bias: Tensor | None) -> Tensor:
    """x @ weight_t (+ bias); the weight comes transposed so a time loop transposes it once. Under autocast the
    bias is lowered with the product, as torch's linear lowers all three."""
    out = ops.matmul(x, weight_t)
    if bias is not None and _ac.ACTIVE[0]:
        (bias,) = _ac.lower(bias)
    return out if bias is None else out + bias


# -- one time step ------------------------------------------------------------------------------------
# `xp` is the step's input projection x W_ih^T + b_ih; `state` is h (or (h, c) for the LSTM).
def _tanh_step(xp: Tensor, h: Tensor, w_hh_t: Tensor, b_hh: Tensor | None, w_hr_t=None) -> Tensor:
    return (xp + _affine(h, w_hh_t, b_hh)).tanh()


def _relu_step(xp: Tensor, h: Tensor, w_hh_t: Tensor, b_hh: Tensor | None, w_hr_t=None) -> Tensor:
    return (xp + _affine(h, w_hh_t, b_hh)).relu()


def _lstm_step(xp: Tensor, state: tuple, w_hh_t: Tensor, b_hh: Tensor | None,
               w_hr_t: Tensor | None = None) -> tuple:
    h, c = state
    # (b_hh None: _run folded it into the sequence's projection, so a step is one addmm and one cell)
    gates = ops.addmm(xp, h, w_hh_t) if b_hh is None else xp + _affine(h, w_hh_t, b_hh)
    if recurrent_cells.takes(gates, c):  # the gate math as one record each way
        h, c = recurrent_cells.lstm_cell_rows(gates, c)
    else:
        in_gate, forget_gate, cell_gate, out_gate = gates.chunk(4, -1)
        c = forget_gate.sigmoid() * c + in_gate.sigmoid() * cell_gate.tanh()
        h = out_gate.sigmoid() * c.tanh()
    if w_hr_t is not None:  # LSTM with projections: the hidden state is projected down to proj_size
        h = ops.matmul(h, w_hr_t)
    return h, c


def _gru_step(xp: Tensor, h: Tensor, w_hh_t: Tensor, b_hh: Tensor | None, w_hr_t=None) -> Tensor:
    # b_hh stays with the hidden projection: the reset gate scales W_hn h + b_hn as a whole
    h_gates = _affine(h, w_hh_t, b_hh)
    if recurrent_cells.takes(xp, h_gates, h):  # the gate math as one record each way
        return recurrent_cells.gru_cell_rows(xp, h_gates, h)
    x_reset, x_update, x_new = xp.chunk(3, -1)
    h_reset, h_update, h_new = h_gates.chunk(3, -1)
    reset = (x_reset + h_reset).sigmoid()
    update = (x_update + h_update).sigmoid()
    new = (x_new + reset * h_new).tanh()
    return new + update * (h - new)  # (1 - z) n + z h


def _hidden(state) -> Tensor:
    """The step's output: h (the LSTM's state is (h, c))."""
    return state[0] if isinstance(state, tuple) else state


# -- cells ----------------------------------------------------------------------------------------------
def _cell(step: Callable, input: Tensor, hx, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None,
          b_hh: Tensor | None):
    return step(_affine(input, w_ih.t(), b_ih), hx, w_hh.t(), b_hh)


def rnn_tanh_cell(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None = None,
                  b_hh: Tensor | None = None) -> Tensor:
    """h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)."""
    return _cell(_tanh_step, input, hx, w_ih, w_hh, b_ih, b_hh)


def rnn_relu_cell(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None = None,
                  b_hh: Tensor | None = None) -> Tensor:
    """h' = relu(x W_ih^T + b_ih + h W_hh^T + b_hh)."""
    return _cell(_relu_step, input, hx, w_ih, w_hh, b_ih, b_hh)


def lstm_cell(input: Tensor, hx, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None = None,
              b_hh: Tensor | None = None) -> tuple:
    """One LSTM step: (h', c') from input and hx = (h, c)."""
    return _cell(_lstm_step, input, tuple(hx), w_ih, w_hh, b_ih, b_hh)


def gru_cell(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None = None,
             b_hh: Tensor | None = None) -> Tensor:
    """One GRU step: h' from input and h."""
    return _cell(_gru_step, input, hx, w_ih, w_hh, b_ih, b_hh)


# -- whole sequences ---------------------------------------------------------------------------------
def _param_groups(params, has_biases: bool, count: int) -> list:
    """Split the flat weight list into `count` tuples (w_ih, w_hh, b_ih, b_hh, w_hr), None where absent."""
    params = list(params)
    if count == 0 or len(params) % count:
        raise RuntimeError(f"RNN: got {len(params)} weights for {count} layer directions")
    size = len(params) // count
    plain = 4 if has_biases else 2
    if size not in (plain, plain + 1):
        raise RuntimeError(f"RNN: expected {plain} or {plain + 1} weights per layer direction, got {size}")
    groups = []
    for start in range(0, len(params), size):
        group = params[start:start + size]
        biases = tuple(group[2:4]) if has_biases else (None, None)
        projection = group[plain] if size > plain else None
        groups.append((group[0], group[1]) + biases + (projection,))
    return groups


def _rows(state, start: int, stop: int):
    """Rows start:stop (batch entries) of a state: h, or (h, c)."""
    return tuple(s[start:stop] for s in state) if isinstance(state, tuple) else state[start:stop]


def _cat_rows(states: list):
    """Join states along the batch dimension."""
    if isinstance(states[0], tuple):
        return tuple(ops.cat(list(parts), 0) for parts in zip(*states))
    return ops.cat(states, 0)


def _run_direction(step: Callable, inputs: list, batch_sizes: list, state, weights: tuple, reverse: bool) -> tuple:
    """Run one layer direction over time; (per-step outputs, final state).

    Step t updates only the first batch_sizes[t] batch entries (sequences sorted by decreasing length, as
    a PackedSequence holds them). Going forward, entries that end leave the state and their last value is
    their final state; going backward, entries join the state (from the initial one) where they end.
    """
    _, w_hh, _, b_hh, w_hr = weights
    w_hh_t = w_hh.t()
    w_hr_t = None if w_hr is None else w_hr.t()
    outputs = [None] * len(inputs)
    if reverse:
        initial, active = state, batch_sizes[-1]
        state = _rows(initial, 0, active)
        for t in reversed(range(len(inputs))):
            if batch_sizes[t] > active:
                state = _cat_rows([state, _rows(initial, active, batch_sizes[t])])
                active = batch_sizes[t]
            state = step(inputs[t], state, w_hh_t, b_hh, w_hr_t)
            outputs[t] = _hidden(state)
        return outputs, state
    finished, active = [], batch_sizes[0]
    for t in range(len(inputs)):
        if batch_sizes[t] < active:
            finished.append(_rows(state, batch_sizes[t], active))
            state = _rows(state, 0, batch_sizes[t])
            active = batch_sizes[t]
        state = step(inputs[t], state, w_hh_t, b_hh, w_hr_t)
        outputs[t] = _hidden(state)
    return outputs, (_cat_rows([state] + finished[::-1]) if finished else state)


def _run(step: Callable, input: Tensor, states: list, params, has_biases: bool, num_layers: int, dropout: float,
         train: bool, bidirectional: bool, batch_first: bool, batch_sizes: list | None) -> tuple:
    """(output, final states per layer direction) of a stacked, maybe bidirectional recurrent network.

    `input` is (seq, batch, feature) (batch first with `batch_first`) or, with `batch_sizes`, the
    (steps, feature) data of a PackedSequence; the output has the same layout.
    """
    packed = batch_sizes is not None
    x = input.transpose(0, 1) if batch_first and not packed else input
    if not packed:
        batch_sizes = [x.shape[1]] * x.shape[0]
    if not batch_sizes:
        raise RuntimeError("Expected sequence length to be larger than 0 in RNN")
    directions = 2 if bidirectional else 1
    groups = _param_groups(params, has_biases, num_layers * directions)
    finals = []
    for layer in range(num_layers):
        if layer > 0 and train and dropout > 0:  # dropout acts between layers, never on the last output
            x = F.dropout(x, dropout, training=True)
        outputs = []
        for direction in range(directions):
            index = layer * directions + direction
            w_ih, w_hh, b_ih, b_hh, w_hr = groups[index]
            projected = _affine(x, w_ih.t(), b_ih)  # the whole sequence in one matmul
            weights = groups[index]
            if (step is _lstm_step and b_hh is not None and recurrent_cells.takes(projected)
                    and b_hh.dtype is projected.dtype):  # (b_hh a Parameter: any Tensor subclass adds alike)
                projected = projected + b_hh  # (the LSTM's two biases add alike: once per sequence, not per step)
                weights = (w_ih, w_hh, b_ih, None, w_hr)
            steps = projected.split(batch_sizes, 0) if packed else projected.unbind(0)
            out, final = _run_direction(step, steps, batch_sizes, states[index], weights, direction == 1)
            outputs.append(ops.cat(out, 0) if packed else ops.stack(out, 0))
            finals.append(final)
        x = outputs[0] if directions == 1 else ops.cat(outputs, -1)
    return (x.transpose(0, 1) if batch_first and not packed else x), finals


def _sizes(batch_sizes) -> list | None:
    """A PackedSequence's batch sizes as Python ints (they live on the CPU: reading them costs no sync)."""
    if batch_sizes is None:
        return None
    return [int(n) for n in (batch_sizes.tolist() if isinstance(batch_sizes, Tensor) else batch_sizes)]


def _simple(step: Callable, input: Tensor, hx: Tensor, params, has_biases: bool, num_layers: int, dropout: float,
            train: bool, bidirectional: bool, batch_first: bool, batch_sizes) -> tuple:
    output, finals = _run(step, input, list(hx.unbind(0)), params, has_biases, num_layers, dropout, train,
                          bidirectional, batch_first, _sizes(batch_sizes))
    return output, ops.stack(finals, 0)


def rnn_tanh(input: Tensor, hx: Tensor, params, has_biases: bool, num_layers: int, dropout: float, train: bool,
             bidirectional: bool, batch_first: bool, *, batch_sizes=None) -> tuple:
    """Elman RNN with tanh over a (seq, batch, feature) sequence: (output, h_n)."""
    return _simple(_tanh_step, input, hx, params, has_biases, num_layers, dropout, train, bidirectional,
                   batch_first, batch_sizes)


def rnn_relu(input: Tensor, hx: Tensor, params, has_biases: bool, num_layers: int, dropout: float, train: bool,
             bidirectional: bool, batch_first: bool, *, batch_sizes=None) -> tuple:
    """Elman RNN with relu over a (seq, batch, feature) sequence: (output, h_n)."""
    return _simple(_relu_step, input, hx, params, has_biases, num_layers, dropout, train, bidirectional,
                   batch_first, batch_sizes)


def gru(input: Tensor, hx: Tensor, params, has_biases: bool, num_layers: int, dropout: float, train: bool,
        bidirectional: bool, batch_first: bool, *, batch_sizes=None) -> tuple:
    """GRU over a (seq, batch, feature) sequence: (output, h_n)."""
    return _simple(_gru_step, input, hx, params, has_biases, num_layers, dropout, train, bidirectional,
                   batch_first, batch_sizes)


def lstm(input: Tensor, hx, params, has_biases: bool, num_layers: int, dropout: float, train: bool,
         bidirectional: bool, batch_first: bool, *, batch_sizes=None) -> tuple:
    """LSTM (with projections when the params hold w_hr) over a sequence: (output, h_n, c_n)."""
    h0, c0 = hx
    if _ac.ACTIVE[0]:  # torch's CPU LSTM (mkldnn_rnn_layer) is on autocast's list: every input lowered
        input, h0, c0, *params = _ac.lower(input, h0, c0, *params)
    states = list(zip(h0.unbind(0), c0.unbind(0)))
    output, finals = _run(_lstm_step, input, states, params, has_biases, num_layers, dropout, train,
                          bidirectional, batch_first, _sizes(batch_sizes))
    return output, ops.stack([h for h, _ in finals], 0), ops.stack([c for _, c in finals], 0)

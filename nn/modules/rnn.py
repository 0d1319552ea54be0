"""Recurrent layers: RNN, LSTM, GRU and their single-step cells.

Parameter names, shapes, order and initialization match PyTorch's, so a torch state dict loads as is.
The math lives in nn/functional_rnn.py.
"""
from __future__ import annotations

import math
import numbers
import warnings

from ... import ops
from ...tensor import Tensor
from .. import functional_rnn as R
from .. import init
from ..module import Module
from ..parameter import Parameter
from ..utils.rnn import PackedSequence

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

_GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}
_FUNCTIONS = {"LSTM": R.lstm, "GRU": R.gru, "RNN_TANH": R.rnn_tanh, "RNN_RELU": R.rnn_relu}


def _zeros(shape: tuple, like: Tensor) -> Tensor:
    return ops.zeros(shape, dtype=like.dtype, device=like.device)


def _layer_name(module: Module) -> str:
    """The name of the layer class of this file that `module` is (a user subclass reports its base)."""
    return next(cls.__name__ for cls in type(module).__mro__ if cls.__module__ == __name__)


def _uniform_init(module: Module) -> None:
    """PyTorch's recurrent default: every parameter from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))."""
    bound = 1.0 / math.sqrt(module.hidden_size) if module.hidden_size > 0 else 0
    for weight in module.parameters():
        init.uniform_(weight, -bound, bound)


def _check_sizes(input_size, hidden_size, num_layers: int, bias, batch_first, dropout, proj_size: int) -> None:
    """PyTorch's constructor checks, in its order."""
    if not isinstance(dropout, numbers.Number) or isinstance(dropout, bool) or not 0 <= dropout <= 1:
        raise ValueError("dropout should be a number in range [0, 1] representing the probability of an element "
                         "being zeroed")
    if dropout > 0 and num_layers == 1:
        warnings.warn("dropout option adds dropout after all but last recurrent layer, so non-zero dropout expects "
                      f"num_layers greater than 1, but got dropout={dropout} and num_layers={num_layers}",
                      stacklevel=4)
    for name, value, kind in (("bias", bias, bool), ("batch_first", batch_first, bool),
                              ("input_size", input_size, int), ("hidden_size", hidden_size, int)):
        if not isinstance(value, kind):
            raise TypeError(f"{name} should be of type {kind.__name__}, got: {type(value).__name__}")
        if kind is int and value <= 0:
            raise ValueError(f"{name} must be greater than zero")
    if num_layers <= 0:
        raise ValueError("num_layers must be greater than zero")
    if proj_size < 0:
        raise ValueError("proj_size should be a positive integer or zero to disable projections")
    if proj_size >= hidden_size:
        raise ValueError("proj_size has to be smaller than hidden_size")


class RNNBase(Module):
    """The shared machinery of RNN, LSTM and GRU: parameters per layer and direction, checks, batching."""

    _input_dim_error = "{name}: Expected input to be 2D or 3D, got {dim}D instead"

    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, proj_size: int = 0,
                 device=None, dtype=None) -> None:
        super().__init__()
        _check_sizes(input_size, hidden_size, num_layers, bias, batch_first, dropout, proj_size)
        if mode not in _GATES:
            raise ValueError("Unrecognized RNN mode: " + mode)
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        gate_size = _GATES[mode] * hidden_size
        real_hidden_size = proj_size if proj_size > 0 else hidden_size
        directions = 2 if bidirectional else 1
        self._flat_weights_names = []
        self._all_weights = []
        for layer in range(num_layers):
            layer_input_size = input_size if layer == 0 else real_hidden_size * directions
            for direction in range(directions):
                shapes = [("weight_ih", (gate_size, layer_input_size)), ("weight_hh", (gate_size, real_hidden_size))]
                if bias:
                    shapes += [("bias_ih", (gate_size,)), ("bias_hh", (gate_size,))]
                if proj_size > 0:
                    shapes += [("weight_hr", (proj_size, hidden_size))]
                suffix = "_reverse" if direction == 1 else ""
                names = []
                for stem, shape in shapes:
                    name = f"{stem}_l{layer}{suffix}"
                    setattr(self, name, Parameter(ops.empty(shape, device=device, dtype=dtype)))
                    names.append(name)
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Every weight and bias from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)), as PyTorch."""
        _uniform_init(self)

    @property
    def _flat_weights(self) -> list:
        """The parameters in PyTorch's flat order (read at each call, so replaced parameters are seen)."""
        return [getattr(self, name, None) for name in self._flat_weights_names]

    @property
    def all_weights(self) -> list:
        """The parameters grouped per layer and direction."""
        return [[getattr(self, name) for name in names] for names in self._all_weights]

    def flatten_parameters(self) -> None:
        """Kept for PyTorch compatibility: tidal keeps no fused weight buffer, so there is nothing to do."""

    # -- argument checks (PyTorch's messages) -----------------------------------------------------------------
    def check_input(self, input: Tensor, batch_sizes=None) -> None:
        """The input's dtype, rank and feature size."""
        weight_dtype = self._flat_weights[0].dtype
        if input.dtype != weight_dtype:
            raise ValueError(f"RNN input dtype ({input.dtype}) does not match weight dtype ({weight_dtype}). "
                             f"Convert input: input.to({weight_dtype}), or convert model: model.to({input.dtype})")
        expected_dim = 2 if batch_sizes is not None else 3
        if input.dim() != expected_dim:
            raise RuntimeError(f"input must have {expected_dim} dimensions, got {input.dim()}")
        if self.input_size != input.size(-1):
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected {self.input_size}, "
                               f"got {input.size(-1)}")

    def _state_shape(self, input: Tensor, batch_sizes, size: int) -> tuple:
        if batch_sizes is not None:
            batch = int(batch_sizes[0])
        else:
            batch = input.size(0) if self.batch_first else input.size(1)
        return (self.num_layers * (2 if self.bidirectional else 1), batch, size)

    def get_expected_hidden_size(self, input: Tensor, batch_sizes=None) -> tuple:
        """(num_layers * directions, batch, proj_size or hidden_size)."""
        return self._state_shape(input, batch_sizes, self.proj_size if self.proj_size > 0 else self.hidden_size)

    def check_hidden_size(self, hx: Tensor, expected_hidden_size: tuple,
                          msg: str = "Expected hidden size {}, got {}") -> None:
        """RuntimeError unless hx has the expected shape."""
        if tuple(hx.size()) != tuple(expected_hidden_size):
            raise RuntimeError(msg.format(tuple(expected_hidden_size), list(hx.size())))

    def check_forward_args(self, input: Tensor, hidden: Tensor, batch_sizes=None) -> None:
        """Check the input and the initial hidden state."""
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden, self.get_expected_hidden_size(input, batch_sizes))

    def permute_hidden(self, hx: Tensor, permutation: Tensor | None) -> Tensor:
        """hx with its batch entries reordered by `permutation` (None: unchanged)."""
        return hx if permutation is None else hx.index_select(1, permutation)

    # -- forward ------------------------------------------------------------------------------------------
    # The hidden state is one tensor here; LSTM overrides the four hooks below for its (h, c) pair.
    def _zero_hidden(self, input: Tensor, batch_sizes) -> Tensor:
        return _zeros(self._state_shape(input, batch_sizes, self.hidden_size), input)

    def _batch_hidden(self, hx: Tensor, batched: bool) -> Tensor:
        """Check hx's rank against the input's and give it a batch dimension when the input had none."""
        if hx.dim() != (3 if batched else 2):
            raise RuntimeError(f"For {'batched 3-D' if batched else 'unbatched 2-D'} input, hx should also be "
                               f"{3 if batched else 2}-D but got {hx.dim()}-D tensor")
        return hx if batched else hx.unsqueeze(1)

    def _unbatch_hidden(self, hidden: Tensor) -> Tensor:
        return hidden.squeeze(1)

    def _run(self, input: Tensor, hx: Tensor, batch_sizes) -> tuple:
        return _FUNCTIONS[self.mode](input, hx, self._flat_weights, self.bias, self.num_layers, self.dropout,
                                     self.training, self.bidirectional, self.batch_first, batch_sizes=batch_sizes)

    def forward(self, input, hx=None) -> tuple:
        """(output, h_n): output holds the last layer's h_t for every t; h_n every layer's last state.

        `input` is (seq, batch, input_size) ((batch, seq, ...) with batch_first), (seq, input_size)
        unbatched, or a PackedSequence (then the output is one too).
        """
        if isinstance(input, PackedSequence):
            data, batch_sizes, sorted_indices, unsorted_indices = input
            hx = self._zero_hidden(data, batch_sizes) if hx is None else self.permute_hidden(hx, sorted_indices)
            self.check_forward_args(data, hx, batch_sizes)
            output, hidden = self._run(data, hx, batch_sizes)
            return (PackedSequence(output, batch_sizes, sorted_indices, unsorted_indices),
                    self.permute_hidden(hidden, unsorted_indices))
        if input.dim() not in (2, 3):
            raise ValueError(self._input_dim_error.format(name=_layer_name(self), dim=input.dim()))
        batched = input.dim() == 3
        batch_dim = 0 if self.batch_first else 1
        if not batched:
            input = input.unsqueeze(batch_dim)
        hx = self._zero_hidden(input, None) if hx is None else self._batch_hidden(hx, batched)
        self.check_forward_args(input, hx)
        output, hidden = self._run(input, hx, None)
        if not batched:
            return output.squeeze(batch_dim), self._unbatch_hidden(hidden)
        return output, hidden

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size != 0:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s


def _no_projection(proj_size) -> None:
    if proj_size is not None:
        raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")


class RNN(RNNBase):
    """Elman RNN: h_t = tanh(x_t W_ih^T + b_ih + h_(t-1) W_hh^T + b_hh) (or relu), stacked and bidirectional."""

    _input_dim_error = "{name}: Expected input to be 2D or 3D, got {dim}D tensor instead"

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, nonlinearity: str = "tanh",
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False,
                 device=None, dtype=None, *, proj_size=None) -> None:
        _no_projection(proj_size)
        modes = {"tanh": "RNN_TANH", "relu": "RNN_RELU"}
        if nonlinearity not in modes:
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'.")
        super().__init__(modes[nonlinearity], input_size, hidden_size, num_layers, bias, batch_first, dropout,
                         bidirectional, device=device, dtype=dtype)
        self.nonlinearity = nonlinearity


class GRU(RNNBase):
    """Gated recurrent unit network, stacked and bidirectional."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, device=None,
                 dtype=None, *, proj_size=None) -> None:
        _no_projection(proj_size)
        super().__init__("GRU", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         device=device, dtype=dtype)


class LSTM(RNNBase):
    """Long short-term memory network, stacked and bidirectional, with optional projections (proj_size)."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, proj_size: int = 0,
                 device=None, dtype=None) -> None:
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         proj_size, device=device, dtype=dtype)

    def get_expected_cell_size(self, input: Tensor, batch_sizes=None) -> tuple:
        """(num_layers * directions, batch, hidden_size)."""
        return self._state_shape(input, batch_sizes, self.hidden_size)

    def check_forward_args(self, input: Tensor, hidden: tuple, batch_sizes=None) -> None:
        """Check the input and both initial states."""
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden[0], self.get_expected_hidden_size(input, batch_sizes),
                               "Expected hidden[0] size {}, got {}")
        self.check_hidden_size(hidden[1], self.get_expected_cell_size(input, batch_sizes),
                               "Expected hidden[1] size {}, got {}")

    def permute_hidden(self, hx: tuple, permutation: Tensor | None) -> tuple:
        """(h, c) with their batch entries reordered by `permutation` (None: unchanged)."""
        return hx if permutation is None else (hx[0].index_select(1, permutation), hx[1].index_select(1, permutation))

    def _zero_hidden(self, input: Tensor, batch_sizes) -> tuple:
        real_hidden_size = self.proj_size if self.proj_size > 0 else self.hidden_size
        return (_zeros(self._state_shape(input, batch_sizes, real_hidden_size), input),
                _zeros(self._state_shape(input, batch_sizes, self.hidden_size), input))

    def _batch_hidden(self, hx: tuple, batched: bool) -> tuple:
        h0, c0 = hx[0], hx[1]  # indexed as torch does: a 1-tuple is its IndexError
        if h0.dim() != (3 if batched else 2) or c0.dim() != (3 if batched else 2):
            shape = "batched 3-D" if batched else "unbatched 2-D"
            raise RuntimeError(f"For {shape} input, hx and cx should also be {3 if batched else 2}-D but got "
                               f"({h0.dim()}-D, {c0.dim()}-D) tensors")
        return (h0, c0) if batched else (h0.unsqueeze(1), c0.unsqueeze(1))

    def _unbatch_hidden(self, hidden: tuple) -> tuple:
        return hidden[0].squeeze(1), hidden[1].squeeze(1)

    def _run(self, input: Tensor, hx: tuple, batch_sizes) -> tuple:
        output, h_n, c_n = super()._run(input, hx, batch_sizes)
        return output, (h_n, c_n)

    def forward(self, input, hx: tuple | None = None) -> tuple:
        """(output, (h_n, c_n)); see RNNBase.forward for the input layouts."""
        return super().forward(input, hx)


# -- cells ---------------------------------------------------------------------------------------------
class RNNCellBase(Module):
    """The shared parameters of the single-step cells: weight_ih, weight_hh and optional biases."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool, num_chunks: int, device=None,
                 dtype=None) -> None:
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        gate_size = num_chunks * hidden_size
        self.weight_ih = Parameter(ops.empty((gate_size, input_size), device=device, dtype=dtype))
        self.weight_hh = Parameter(ops.empty((gate_size, hidden_size), device=device, dtype=dtype))
        if bias:
            self.bias_ih = Parameter(ops.empty(gate_size, device=device, dtype=dtype))
            self.bias_hh = Parameter(ops.empty(gate_size, device=device, dtype=dtype))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Every weight and bias from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)), as PyTorch."""
        _uniform_init(self)

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        nonlinearity = self.__dict__.get("nonlinearity", "tanh")
        if nonlinearity != "tanh":
            s += f", nonlinearity={nonlinearity}"
        return s

    def _batched(self, input: Tensor, hiddens: tuple | None, hidden_label: str) -> tuple:
        """(input, hidden states) with a batch dimension (zeros when none given), whether the input had one."""
        name = _layer_name(self)
        if input.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D instead")
        for index, value in enumerate(hiddens or ()):
            if value.dim() not in (1, 2):
                label = hidden_label.format(index=index)
                raise ValueError(f"{name}: Expected {label} to be 1D or 2D, got {value.dim()}D instead")
        batched = input.dim() == 2
        if not batched:
            input = input.unsqueeze(0)
            hiddens = None if hiddens is None else tuple(h.unsqueeze(0) for h in hiddens)
        if self.input_size != input.size(1):
            raise RuntimeError(f"input has inconsistent input_size: got {input.size(1)} expected {self.input_size}")
        for index, h in enumerate(hiddens or ()):
            if input.size(0) != h.size(0):
                raise RuntimeError(f"Input batch size {input.size(0)} doesn't match hidden{index} batch size "
                                   f"{h.size(0)}")
            if h.size(1) != self.hidden_size:
                raise RuntimeError(f"hidden{index} has inconsistent hidden_size: got {h.size(1)}, "
                                   f"expected {self.hidden_size}")
        return input, hiddens, batched

    def _zeros(self, input: Tensor) -> Tensor:
        return _zeros((input.size(0), self.hidden_size), input)

    def _single_state(self, step, input: Tensor, hx: Tensor | None) -> Tensor:
        """The forward of the cells whose state is one tensor (RNNCell, GRUCell)."""
        input, hiddens, batched = self._batched(input, None if hx is None else (hx,), "hidden")
        hx = self._zeros(input) if hiddens is None else hiddens[0]
        h = step(input, hx, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        return h if batched else h.squeeze(0)


class RNNCell(RNNCellBase):
    """One Elman RNN step: h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh) (or relu)."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, nonlinearity: str = "tanh",
                 device=None, dtype=None) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=1, device=device, dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        """The next hidden state."""
        steps = {"tanh": R.rnn_tanh_cell, "relu": R.rnn_relu_cell}
        if self.nonlinearity not in steps:
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        return self._single_state(steps[self.nonlinearity], input, hx)


class GRUCell(RNNCellBase):
    """One GRU step."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=3, device=device, dtype=dtype)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        """The next hidden state."""
        return self._single_state(R.gru_cell, input, hx)


class LSTMCell(RNNCellBase):
    """One LSTM step."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=4, device=device, dtype=dtype)

    def forward(self, input: Tensor, hx: tuple | None = None) -> tuple:
        """(h', c')."""
        input, hiddens, batched = self._batched(input, None if hx is None else tuple(hx), "hx[{index}]")
        if hiddens is None:
            zeros = self._zeros(input)
            hiddens = (zeros, zeros)
        h, c = R.lstm_cell(input, hiddens, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        return (h, c) if batched else (h.squeeze(0), c.squeeze(0))

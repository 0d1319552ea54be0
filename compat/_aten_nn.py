"""torch.* spellings of nn ops with ATen's signatures: convolution (one entry for every dimension, plain or
transposed), grid_sampler and affine_grid_generator (modes as integers), and the recurrent functions
(rnn_tanh/rnn_relu/gru/lstm with their packed-sequence overloads, and the four cells), which forward to
tidal.nn.functional_rnn, already written against torch's signatures.
"""
from __future__ import annotations

from .. import nn as _nn
from .. import ops
from ..nn import functional_rnn as _R
from ..tensor import Tensor

F = _nn.functional

__all__ = ["convolution", "grid_sampler", "affine_grid_generator", "rnn_tanh", "rnn_relu", "gru", "lstm",
           "rnn_tanh_cell", "rnn_relu_cell", "gru_cell", "lstm_cell"]

_CONV = {1: (ops.conv1d, ops.conv_transpose1d), 2: (ops.conv2d, ops.conv_transpose2d),
         3: (ops.conv3d, ops.conv_transpose3d)}
_INTERPOLATION = ("bilinear", "nearest", "bicubic")
_PADDING = ("zeros", "border", "reflection")


def convolution(input: Tensor, weight: Tensor, bias: Tensor | None, stride, padding, dilation, transposed: bool,
                output_padding, groups: int) -> Tensor:
    """aten::convolution: conv{1,2,3}d, or conv_transpose{1,2,3}d when `transposed`, by weight's dims."""
    spatial = weight.ndim - 2
    if spatial < 1:
        raise RuntimeError("weight should have at least three dimensions")
    if spatial not in _CONV:
        raise NotImplementedError(f"convolution: tidal convolves over 1 to 3 spatial dims, not {spatial}")
    plain, transpose = _CONV[spatial]
    if transposed:
        return transpose(input, weight, bias, stride, padding, output_padding, groups, dilation)
    return plain(input, weight, bias, stride, padding, dilation, groups)


def _mode(value: int, names: tuple, what: str) -> str:
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < len(names):
        raise RuntimeError(f"{what} must be one of {', '.join(f'{i} ({n})' for i, n in enumerate(names))}, "
                           f"got {value}")
    return names[value]


def grid_sampler(input: Tensor, grid: Tensor, interpolation_mode: int, padding_mode: int,
                 align_corners: bool) -> Tensor:
    """F.grid_sample with ATen's integer modes (0 bilinear, 1 nearest, 2 bicubic; 0 zeros, 1 border,
    2 reflection)."""
    return F.grid_sample(input, grid, _mode(interpolation_mode, _INTERPOLATION, "interpolation_mode"),
                         _mode(padding_mode, _PADDING, "padding_mode"), align_corners)


def affine_grid_generator(theta: Tensor, size: list, align_corners: bool) -> Tensor:
    """F.affine_grid(theta, size, align_corners)."""
    return F.affine_grid(theta, list(size), align_corners)


def _packed(args: tuple) -> bool:
    """Whether a call uses torch's packed overload: (data, batch_sizes, hx, params, ...)."""
    return len(args) > 3 and isinstance(args[3], (list, tuple))  # params, where the plain form has has_biases


def _recurrent(fn):
    def call(*args):
        if _packed(args):  # (data, batch_sizes, hx, params, has_biases, num_layers, dropout, train, bidirectional)
            data, batch_sizes, hx, *rest = args
            return fn(data, hx, *rest, False, batch_sizes=batch_sizes)
        return fn(*args)
    call.__name__ = call.__qualname__ = fn.__name__
    call.__doc__ = (f"torch.{fn.__name__}(input, hx, params, has_biases, num_layers, dropout, train, bidirectional, "
                    "batch_first), or its packed form (data, batch_sizes, hx, params, ...).")
    return call


rnn_tanh, rnn_relu, gru, lstm = (_recurrent(f) for f in (_R.rnn_tanh, _R.rnn_relu, _R.gru, _R.lstm))
rnn_tanh_cell, rnn_relu_cell, gru_cell, lstm_cell = _R.rnn_tanh_cell, _R.rnn_relu_cell, _R.gru_cell, _R.lstm_cell

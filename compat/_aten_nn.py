"""torch.* spellings of nn ops with ATen's signatures: convolution (one entry for every dimension, plain or
transposed), grid_sampler and affine_grid_generator (modes as integers), and the recurrent functions
(rnn_tanh/rnn_relu/gru/lstm with their packed-sequence overloads, and the four cells), which forward to
tidal.nn.functional_rnn, already written against torch's signatures.
"""
from __future__ import annotations

import numpy as np

from .. import nn as _nn
from .. import ops
from ..nn import functional_rnn as _R
from ..tensor import Tensor
from ..tensor import dtype as dt

F = _nn.functional

__all__ = ["convolution", "grid_sampler", "affine_grid_generator", "rnn_tanh", "rnn_relu", "gru", "lstm",
           "rnn_tanh_cell", "rnn_relu_cell", "gru_cell", "lstm_cell", "embedding_bag"]

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


_BAG_MODES = ("sum", "mean", "max")
_FAST_SUM = (dt.float32, dt.float16, dt.bfloat16)  # torch's CPU sum kernel skips offset2bag for these


def embedding_bag(weight: Tensor, indices: Tensor, offsets: Tensor, scale_grad_by_freq: bool = False,
                  mode: int = 0, sparse: bool = False, per_sample_weights: Tensor | None = None,
                  include_last_offset: bool = False, padding_idx: int | None = None) -> tuple:
    """aten::embedding_bag: (output, offset2bag, bag_size, max_indices), mode 0/1/2 = sum/mean/max.

    The output (and its gradient) is F.embedding_bag's; the three index tensors are the bookkeeping
    torch's CPU kernel returns, computed on the host."""
    if not isinstance(offsets, Tensor):
        raise TypeError(f"embedding_bag(): argument 'offsets' (position 3) must be Tensor, not "
                        f"{type(offsets).__name__}")
    output = F.embedding_bag(indices, weight, offsets, None, 2, scale_grad_by_freq, _BAG_MODES[mode], sparse,
                             per_sample_weights, include_last_offset, padding_idx)
    idx, offs = indices.numpy().astype(np.int64), offsets.numpy().astype(np.int64)
    ends = offs[1:] if include_last_offset else np.append(offs[1:], len(idx))
    starts = offs[:-1] if include_last_offset else offs
    bags = len(starts)
    bag_of = np.repeat(np.arange(bags, dtype=np.int64), np.maximum(ends - starts, 0))
    pad = None if padding_idx is None else padding_idx % weight.shape[0]
    kept = np.ones(len(idx), bool) if pad is None else idx != pad
    counts = np.bincount(bag_of[kept], minlength=bags).astype(np.int64)
    fast = mode == 0 and pad is None and weight.dtype in _FAST_SUM
    offset2bag = np.zeros(0, np.int64) if fast else bag_of
    bag_size = counts if mode != 0 else np.zeros(bags, np.int64)
    if mode == 2:  # the row of each bag's maximum, per column (the first one on ties); 0 for an empty bag
        table = weight.detach()._host_array()
        max_indices = np.zeros((bags, weight.shape[1]), np.int64)
        for b in range(bags):
            rows = idx[starts[b]:ends[b]][kept[starts[b]:ends[b]]]
            if len(rows):
                max_indices[b] = rows[np.argmax(table[rows], axis=0)]
    else:
        max_indices = bag_size.copy()
    device = weight.device
    return (output,) + tuple(ops.tensor(a, dtype=dt.int64, device=device) for a in (offset2bag, bag_size,
                                                                                    max_indices))

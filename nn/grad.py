"""torch.nn.grad: a convolution's gradient in its input or its weight, given the output's gradient.

Both are the convolution kernels' own backward pieces (ops/windowed/conv.py), so they are differentiable too.
"""
from __future__ import annotations

from types import SimpleNamespace

from ..ops.windowed import conv as _conv
from ..tensor import Tensor

__all__ = ["conv1d_input", "conv1d_weight", "conv2d_input", "conv2d_weight", "conv3d_input", "conv3d_weight"]


def _geometry(spatial: int, image: tuple, weight: tuple, grad_output: Tensor, stride, padding, dilation,
              groups: int):
    op = f"conv{spatial}d"
    stride = _conv._per_dim(stride, spatial, op, "stride")
    dilation = _conv._per_dim(dilation, spatial, op, "dilation")
    padding = _conv._per_dim(padding, spatial, op, "padding")
    _conv._check_window_args(stride, dilation, padding)
    pads = [p for p in padding for _ in (0, 1)]
    return _conv._geometry(SimpleNamespace(shape=tuple(weight)), spatial, stride, dilation, pads, groups,
                           tuple(image), tuple(grad_output.shape))


def _input(spatial: int, input_size, weight: Tensor, grad_output: Tensor, stride, padding, dilation,
           groups: int) -> Tensor:
    geo = _geometry(spatial, input_size, weight.shape, grad_output, stride, padding, dilation, groups)
    return _conv.convolve_transpose(grad_output, weight, None, geo)


def _weight(spatial: int, input: Tensor, weight_size, grad_output: Tensor, stride, padding, dilation,
            groups: int) -> Tensor:
    geo = _geometry(spatial, input.shape, weight_size, grad_output, stride, padding, dilation, groups)
    return _conv.weight_grad(input, grad_output, geo)


def conv1d_input(input_size, weight: Tensor, grad_output: Tensor, stride=1, padding=0, dilation=1,
                 groups: int = 1) -> Tensor:
    """The gradient of conv1d in its input (of shape `input_size`)."""
    return _input(1, input_size, weight, grad_output, stride, padding, dilation, groups)


def conv1d_weight(input: Tensor, weight_size, grad_output: Tensor, stride=1, padding=0, dilation=1,
                  groups: int = 1) -> Tensor:
    """The gradient of conv1d in its weight (of shape `weight_size`)."""
    return _weight(1, input, weight_size, grad_output, stride, padding, dilation, groups)


def conv2d_input(input_size, weight: Tensor, grad_output: Tensor, stride=1, padding=0, dilation=1,
                 groups: int = 1) -> Tensor:
    """The gradient of conv2d in its input (of shape `input_size`)."""
    return _input(2, input_size, weight, grad_output, stride, padding, dilation, groups)


def conv2d_weight(input: Tensor, weight_size, grad_output: Tensor, stride=1, padding=0, dilation=1,
                  groups: int = 1) -> Tensor:
    """The gradient of conv2d in its weight (of shape `weight_size`)."""
    return _weight(2, input, weight_size, grad_output, stride, padding, dilation, groups)


def conv3d_input(input_size, weight: Tensor, grad_output: Tensor, stride=1, padding=0, dilation=1,
                 groups: int = 1) -> Tensor:
    """The gradient of conv3d in its input (of shape `input_size`)."""
    return _input(3, input_size, weight, grad_output, stride, padding, dilation, groups)


def conv3d_weight(input: Tensor, weight_size, grad_output: Tensor, stride=1, padding=0, dilation=1,
                  groups: int = 1) -> Tensor:
    """The gradient of conv3d in its weight (of shape `weight_size`)."""
    return _weight(3, input, weight_size, grad_output, stride, padding, dilation, groups)

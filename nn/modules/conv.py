"""Convolution layers: Conv1d/2d/3d, ConvTranspose1d/2d/3d, Unfold, Fold."""
from __future__ import annotations

from ... import ops
from ...ops.windowed.fold import unfold as _unfold  # (the function: ops.unfold is wrapped for global tensors)
from ...tensor import Tensor
from .. import functional as F
from .. import init
from ..module import Module
from ..parameter import Parameter

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d", "Unfold", "Fold"]


def _tuple(value, n: int) -> tuple:
    return tuple(value) if isinstance(value, (tuple, list)) else (value,) * n


class _ConvNd(Module):
    """Hyperparameters, weight and bias shared by every convolution layer."""

    _dims = 2
    _transposed = False

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, dilation=1,
                 groups: int = 1, bias: bool = True, padding_mode: str = "zeros", output_padding=0,
                 device=None, dtype=None) -> None:
        super().__init__()
        n = self._dims
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        # (the sets as torch builds them: their printed order, which varies with the hash seed, is torch's)
        valid_modes, valid_strings = {"zeros", "reflect", "replicate", "circular"}, {"same", "valid"}
        if padding_mode not in valid_modes:
            raise ValueError(f"padding_mode must be one of {valid_modes}, but got padding_mode='{padding_mode}'")
        if isinstance(padding, str):
            if padding not in valid_strings:
                raise ValueError(f"Invalid padding string {padding!r}, should be one of {valid_strings}")
            if padding == "same" and any(s != 1 for s in _tuple(stride, n)):
                raise ValueError("padding='same' is not supported for strided convolutions")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size = _tuple(kernel_size, n)
        self.stride = _tuple(stride, n)
        self.padding = padding if isinstance(padding, str) else _tuple(padding, n)
        self.dilation = _tuple(dilation, n)
        self.transposed = self._transposed
        self.output_padding = _tuple(output_padding, n)
        self.groups = groups
        self.padding_mode = padding_mode
        self._reversed_padding_repeated_twice = _explicit_pads(self.padding, self.kernel_size, self.dilation)
        shape = ((in_channels, out_channels // groups) if self._transposed else
                 (out_channels, in_channels // groups)) + self.kernel_size
        self.weight = Parameter(ops.empty(shape, device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(ops.empty(out_channels, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """PyTorch's default: kaiming_uniform_(a=sqrt(5)) weight, U(-1/sqrt(fan_in), 1/sqrt(fan_in)) bias."""
        init.default_layer_init_(self.weight, self.bias)

    def _padded(self, input: Tensor) -> Tensor:
        # non-zero padding modes pad explicitly, then convolve without padding (as PyTorch)
        return F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode)

    def extra_repr(self) -> str:
        s = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding != (0,) * len(self.kernel_size):
            s += f", padding={self.padding}"
        if self.dilation != (1,) * len(self.dilation):
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * len(self.output_padding):
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s


def _explicit_pads(padding, kernel_size: tuple, dilation: tuple) -> list:
    """F.pad's list (last dim first) for `padding`: numbers, 'valid', or 'same' (the odd extra on the right)."""
    if padding == "valid":
        return [0, 0] * len(kernel_size)
    if padding == "same":
        pads = []
        for d, k in zip(reversed(dilation), reversed(kernel_size)):
            total = d * (k - 1)
            pads += [total // 2, total - total // 2]
        return pads
    return [p for p in reversed(padding) for _ in range(2)]


class Conv1d(_ConvNd):
    """1-D convolution over (N, C, L) or (C, L) input."""

    _dims = 1

    def forward(self, input: Tensor) -> Tensor:
        """conv1d of the input with this layer's weight and bias."""
        if self.padding_mode != "zeros":
            return ops.conv1d(self._padded(input), self.weight, self.bias, self.stride, 0, self.dilation, self.groups)
        return ops.conv1d(input, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)


class Conv2d(_ConvNd):
    """2-D convolution over (N, C, H, W) or (C, H, W) input."""

    _dims = 2

    def forward(self, input: Tensor) -> Tensor:
        """conv2d of the input with this layer's weight and bias."""
        if self.padding_mode != "zeros":
            return ops.conv2d(self._padded(input), self.weight, self.bias, self.stride, 0, self.dilation, self.groups)
        return ops.conv2d(input, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)


class Conv3d(_ConvNd):
    """3-D convolution over (N, C, D, H, W) or (C, D, H, W) input."""

    _dims = 3

    def forward(self, input: Tensor) -> Tensor:
        """conv3d of the input with this layer's weight and bias."""
        if self.padding_mode != "zeros":
            return ops.conv3d(self._padded(input), self.weight, self.bias, self.stride, 0, self.dilation, self.groups)
        return ops.conv3d(input, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)


class _ConvTransposeNd(_ConvNd):
    _transposed = True

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, output_padding=0,
                 groups: int = 1, bias: bool = True, dilation=1, padding_mode: str = "zeros", device=None,
                 dtype=None) -> None:
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {type(self).__name__}')
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, output_padding, device, dtype)

    def _output_padding(self, input: Tensor, output_size) -> tuple:
        """The output padding that gives `output_size` (spatial, or with the leading dims), checked to lie
        within the sizes this layer's stride can reach, as torch's."""
        n = self._dims
        if output_size is None:
            return _tuple(self.output_padding, n)
        lead = 2 if input.dim() == n + 2 else 1  # (the message shows output_size as given: no list())
        if len(output_size) == lead + n:
            output_size = output_size[lead:]
        if len(output_size) != n:
            raise ValueError(f"ConvTranspose{n}D: for {input.dim()}D input, output_size must have {n} or "
                             f"{lead + n} elements (got {len(output_size)})")
        stride, padding = _tuple(self.stride, n), _tuple(self.padding, n)
        kernel, dilation = _tuple(self.kernel_size, n), _tuple(self.dilation, n)
        low = [(input.shape[lead + d] - 1) * stride[d] - 2 * padding[d] + dilation[d] * (kernel[d] - 1) + 1
               for d in range(n)]
        high = [low[d] + stride[d] - 1 for d in range(n)]
        if any(not low[d] <= output_size[d] <= high[d] for d in range(n)):
            raise ValueError(f"requested an output size of {output_size}, but valid sizes range from {low} to "
                             f"{high} (for an input of {input.shape[2:]})")
        return tuple(output_size[d] - low[d] for d in range(n))


class ConvTranspose1d(_ConvTransposeNd):
    """1-D transposed convolution."""

    _dims = 1

    def forward(self, input: Tensor, output_size=None) -> Tensor:
        """conv_transpose1d with this layer's weight and bias; `output_size` picks the output padding."""
        return ops.conv_transpose1d(input, self.weight, self.bias, self.stride, self.padding,
                                    self._output_padding(input, output_size), self.groups, self.dilation)


class ConvTranspose2d(_ConvTransposeNd):
    """2-D transposed convolution."""

    _dims = 2

    def forward(self, input: Tensor, output_size=None) -> Tensor:
        """conv_transpose2d with this layer's weight and bias; `output_size` picks the output padding."""
        return ops.conv_transpose2d(input, self.weight, self.bias, self.stride, self.padding,
                                    self._output_padding(input, output_size), self.groups, self.dilation)


class ConvTranspose3d(_ConvTransposeNd):
    """3-D transposed convolution."""

    _dims = 3

    def forward(self, input: Tensor, output_size=None) -> Tensor:
        """conv_transpose3d with this layer's weight and bias; `output_size` picks the output padding."""
        return ops.conv_transpose3d(input, self.weight, self.bias, self.stride, self.padding,
                                    self._output_padding(input, output_size), self.groups, self.dilation)


class Unfold(Module):
    """Extract sliding local blocks (im2col)."""

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1) -> None:
        super().__init__()
        self.kernel_size, self.dilation, self.padding, self.stride = kernel_size, dilation, padding, stride

    def forward(self, input: Tensor) -> Tensor:
        """F.unfold of the input."""
        return _unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, dilation={self.dilation}, padding={self.padding}, "
                f"stride={self.stride}")


class Fold(Module):
    """Combine sliding local blocks into a tensor (col2im)."""

    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1) -> None:
        super().__init__()
        self.output_size, self.kernel_size = output_size, kernel_size
        self.dilation, self.padding, self.stride = dilation, padding, stride

    def forward(self, input: Tensor) -> Tensor:
        """F.fold of the input."""
        return ops.fold(input, self.output_size, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self) -> str:
        return (f"output_size={self.output_size}, kernel_size={self.kernel_size}, dilation={self.dilation}, "
                f"padding={self.padding}, stride={self.stride}")

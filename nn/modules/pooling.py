"""Pooling layers: max, average, adaptive, power-average, fractional max pools and max unpooling in 1-D, 2-D
and 3-D."""
from __future__ import annotations

from ... import ops
from ...tensor import Tensor
from .. import functional as F
from ..module import Module

__all__ = ["MaxPool1d", "MaxPool2d", "MaxPool3d", "AvgPool1d", "AvgPool2d", "AvgPool3d", "AdaptiveAvgPool1d",
           "AdaptiveAvgPool2d", "AdaptiveAvgPool3d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "AdaptiveMaxPool3d",
           "LPPool1d", "LPPool2d", "LPPool3d", "MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d", "FractionalMaxPool2d",
           "FractionalMaxPool3d"]


class _MaxPoolNd(Module):
    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices: bool = False,
                 ceil_mode: bool = False) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.dilation = padding, dilation
        self.return_indices, self.ceil_mode = return_indices, ceil_mode

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class MaxPool1d(_MaxPoolNd):
    """1-D max pooling."""

    def forward(self, input: Tensor):
        """max_pool1d of the input."""
        return ops.max_pool1d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                              ceil_mode=self.ceil_mode, return_indices=self.return_indices)


class MaxPool2d(_MaxPoolNd):
    """2-D max pooling."""

    def forward(self, input: Tensor):
        """max_pool2d of the input."""
        return ops.max_pool2d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                              ceil_mode=self.ceil_mode, return_indices=self.return_indices)


class MaxPool3d(_MaxPoolNd):
    """3-D max pooling."""

    def forward(self, input: Tensor):
        """max_pool3d of the input."""
        return ops.max_pool3d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                              ceil_mode=self.ceil_mode, return_indices=self.return_indices)


class _AvgPoolNd(Module):
    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
                 count_include_pad: bool = True, divisor_override=None) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.ceil_mode = padding, ceil_mode
        self.count_include_pad, self.divisor_override = count_include_pad, divisor_override

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool1d(_AvgPoolNd):
    """1-D average pooling."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
                 count_include_pad: bool = True) -> None:
        # PyTorch stores 1-d pool geometry as 1-tuples (and prints it so)
        one = lambda v: tuple(v) if isinstance(v, (tuple, list)) else (v,)  # noqa: E731
        super().__init__(one(kernel_size), one(stride if stride is not None else kernel_size), one(padding),
                         ceil_mode, count_include_pad)

    def forward(self, input: Tensor) -> Tensor:
        """avg_pool1d of the input."""
        return ops.avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                              self.count_include_pad)


class AvgPool2d(_AvgPoolNd):
    """2-D average pooling."""

    def forward(self, input: Tensor) -> Tensor:
        """avg_pool2d of the input."""
        return ops.avg_pool2d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                              self.count_include_pad, self.divisor_override)


class AvgPool3d(_AvgPoolNd):
    """3-D average pooling."""

    def forward(self, input: Tensor) -> Tensor:
        """avg_pool3d of the input."""
        return ops.avg_pool3d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                              self.count_include_pad, self.divisor_override)


class _AdaptivePool(Module):
    def __init__(self, output_size, return_indices: bool = False) -> None:
        super().__init__()
        self.output_size = output_size
        self.return_indices = return_indices

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class _AdaptiveAvgPoolNd(_AdaptivePool):
    """The adaptive average pools' base (torch's name, for isinstance checks)."""


class _AdaptiveMaxPoolNd(_AdaptivePool):
    """The adaptive max pools' base (torch's name, for isinstance checks)."""


class AdaptiveAvgPool1d(_AdaptiveAvgPoolNd):
    """1-D adaptive average pooling to `output_size`."""

    def __init__(self, output_size) -> None:
        super().__init__(output_size)

    def forward(self, input: Tensor) -> Tensor:
        """adaptive_avg_pool1d of the input."""
        return ops.adaptive_avg_pool1d(input, self.output_size)


class AdaptiveAvgPool2d(_AdaptiveAvgPoolNd):
    """2-D adaptive average pooling to `output_size`."""

    def __init__(self, output_size) -> None:
        super().__init__(output_size)

    def forward(self, input: Tensor) -> Tensor:
        """adaptive_avg_pool2d of the input."""
        return ops.adaptive_avg_pool2d(input, self.output_size)


class AdaptiveAvgPool3d(_AdaptiveAvgPoolNd):
    """3-D adaptive average pooling to `output_size`."""

    def __init__(self, output_size) -> None:
        super().__init__(output_size)

    def forward(self, input: Tensor) -> Tensor:
        """adaptive_avg_pool3d of the input."""
        return ops.adaptive_avg_pool3d(input, self.output_size)


class AdaptiveMaxPool1d(_AdaptiveMaxPoolNd):
    """1-D adaptive max pooling to `output_size`."""

    def forward(self, input: Tensor):
        """adaptive_max_pool1d of the input."""
        return ops.adaptive_max_pool1d(input, self.output_size, self.return_indices)


class AdaptiveMaxPool2d(_AdaptiveMaxPoolNd):
    """2-D adaptive max pooling to `output_size`."""

    def forward(self, input: Tensor):
        """adaptive_max_pool2d of the input."""
        return ops.adaptive_max_pool2d(input, self.output_size, self.return_indices)


class AdaptiveMaxPool3d(_AdaptiveMaxPoolNd):
    """3-D adaptive max pooling to `output_size`."""

    def forward(self, input: Tensor):
        """adaptive_max_pool3d of the input."""
        return ops.adaptive_max_pool3d(input, self.output_size, self.return_indices)


class _LPPoolNd(Module):
    _dims = 1

    def __init__(self, norm_type: float, kernel_size, stride=None, ceil_mode: bool = False) -> None:
        super().__init__()
        self.norm_type = norm_type
        self.kernel_size = kernel_size
        self.stride = stride
        self.ceil_mode = ceil_mode

    def forward(self, input: Tensor) -> Tensor:
        """lp_pool of the input: (sum of x^p over each window)^(1/p)."""
        pool = (F.lp_pool1d, F.lp_pool2d, F.lp_pool3d)[self._dims - 1]
        return pool(input, float(self.norm_type), self.kernel_size, self.stride, self.ceil_mode)

    def extra_repr(self) -> str:
        return (f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, stride={self.stride}, "
                f"ceil_mode={self.ceil_mode}")


class LPPool1d(_LPPoolNd):
    """1-D power-average pooling."""

    _dims = 1


class LPPool2d(_LPPoolNd):
    """2-D power-average pooling."""

    _dims = 2


class LPPool3d(_LPPoolNd):
    """3-D power-average pooling."""

    _dims = 3


def _ntuple(value, n: int) -> tuple:
    return tuple(value) if isinstance(value, (list, tuple)) else (value,) * n


class _MaxUnpoolNd(Module):
    _dims = 1

    def __init__(self, kernel_size, stride=None, padding=0) -> None:
        super().__init__()
        self.kernel_size = _ntuple(kernel_size, self._dims)
        self.stride = _ntuple(stride if stride is not None else kernel_size, self._dims)
        self.padding = _ntuple(padding, self._dims)

    def forward(self, input: Tensor, indices: Tensor, output_size=None) -> Tensor:
        """max_unpool of the input: values back at the max pool's `indices`, zeros elsewhere."""
        unpool = (F.max_unpool1d, F.max_unpool2d, F.max_unpool3d)[self._dims - 1]
        return unpool(input, indices, self.kernel_size, self.stride, self.padding, output_size)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpoolNd):
    """The partial inverse of MaxPool1d."""

    _dims = 1


class MaxUnpool2d(_MaxUnpoolNd):
    """The partial inverse of MaxPool2d."""

    _dims = 2


class MaxUnpool3d(_MaxUnpoolNd):
    """The partial inverse of MaxPool3d."""

    _dims = 3


class _FractionalMaxPoolNd(Module):
    _dims = 2

    def __init__(self, kernel_size, output_size=None, output_ratio=None, return_indices: bool = False,
                 _random_samples: Tensor | None = None) -> None:
        super().__init__()
        n = self._dims
        self.kernel_size = _ntuple(kernel_size, n)
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)
        self.output_size = _ntuple(output_size, n) if output_size is not None else None
        self.output_ratio = _ntuple(output_ratio, n) if output_ratio is not None else None
        name = type(self).__name__
        if output_size is None and output_ratio is None:
            raise ValueError(f"{name} requires specifying either an output size, or a pooling ratio")
        if output_size is not None and output_ratio is not None:
            raise ValueError("only one of output_size and output_ratio may be specified")
        if self.output_ratio is not None and not all(0 < r < 1 for r in self.output_ratio):
            raise ValueError(f"output_ratio must be between 0 and 1 (got {output_ratio})")

    def forward(self, input: Tensor):
        """fractional_max_pool of the input (fresh random windows on each call unless samples were given)."""
        pool = F.fractional_max_pool2d if self._dims == 2 else F.fractional_max_pool3d
        return pool(input, self.kernel_size, self.output_size, self.output_ratio, self.return_indices,
                    _random_samples=self._random_samples)


class FractionalMaxPool2d(_FractionalMaxPoolNd):
    """2-D fractional max pooling."""

    _dims = 2


class FractionalMaxPool3d(_FractionalMaxPoolNd):
    """3-D fractional max pooling."""

    _dims = 3

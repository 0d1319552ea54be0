"""Padding layers: constant (and zero), reflection, replication and circular, in 1, 2 and 3 dims."""
from __future__ import annotations

from ...tensor import Tensor
from .. import functional as F
from ..module import Module

__all__ = ["ConstantPad1d", "ConstantPad2d", "ConstantPad3d", "ZeroPad1d", "ZeroPad2d", "ZeroPad3d",
           "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d", "ReplicationPad2d",
           "ReplicationPad3d", "CircularPad1d", "CircularPad2d", "CircularPad3d"]


def _expand(padding, dims: int) -> tuple:
    """An int pads every side; otherwise the (left, right, top, bottom, ...) tuple as given."""
    return (padding,) * (2 * dims) if isinstance(padding, int) else tuple(padding)


class _PadNd(Module):
    """Holds the padding tuple; subclasses fix `_mode` and the number of padded dims `_dims`."""

    _mode = "constant"
    _dims = 1

    def __init__(self, padding) -> None:
        super().__init__()
        self.padding = _expand(padding, self._dims)

    def forward(self, input: Tensor) -> Tensor:
        """The padded input."""
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class _ConstantPadNd(_PadNd):
    def __init__(self, padding, value: float) -> None:
        super().__init__(padding)
        self.value = value

    def forward(self, input: Tensor) -> Tensor:
        """The input padded with `value`."""
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    """Pad the last dim with a constant."""

    _dims = 1


class ConstantPad2d(_ConstantPadNd):
    """Pad the last 2 dims with a constant."""

    _dims = 2


class ConstantPad3d(_ConstantPadNd):
    """Pad the last 3 dims with a constant."""

    _dims = 3


class _ZeroPad:
    def __init__(self, padding) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ZeroPad1d(_ZeroPad, ConstantPad1d):
    """Pad the last dim with zeros."""


class ZeroPad2d(_ZeroPad, ConstantPad2d):
    """Pad the last 2 dims with zeros."""


class ZeroPad3d(_ZeroPad, ConstantPad3d):
    """Pad the last 3 dims with zeros."""


class _ReflectionPadNd(_PadNd):
    """The reflection pads' base (torch's name, for isinstance checks)."""


class _ReplicationPadNd(_PadNd):
    """The replication pads' base (torch's name, for isinstance checks)."""


class ReflectionPad1d(_ReflectionPadNd):
    """Pad the last dim with its reflection (edge not repeated)."""

    _mode, _dims = "reflect", 1


class ReflectionPad2d(_ReflectionPadNd):
    """Pad the last 2 dims with their reflection."""

    _mode, _dims = "reflect", 2


class ReflectionPad3d(_ReflectionPadNd):
    """Pad the last 3 dims with their reflection."""

    _mode, _dims = "reflect", 3


class ReplicationPad1d(_ReplicationPadNd):
    """Pad the last dim by repeating its edge values."""

    _mode, _dims = "replicate", 1


class ReplicationPad2d(_ReplicationPadNd):
    """Pad the last 2 dims by repeating their edge values."""

    _mode, _dims = "replicate", 2


class ReplicationPad3d(_ReplicationPadNd):
    """Pad the last 3 dims by repeating their edge values."""

    _mode, _dims = "replicate", 3


class _CircularPadNd(_PadNd):
    _mode = "circular"

    def forward(self, input: Tensor) -> Tensor:
        """The input padded by wrapping around."""
        if input.dim() not in (self._dims + 1, self._dims + 2):
            raise ValueError(f"expected {self._dims + 1}D or {self._dims + 2}D input (got {input.dim()}D input)")
        return F.pad(input, self.padding, "circular")


class CircularPad1d(_CircularPadNd):
    """Pad the last dim by wrapping around."""

    _dims = 1


class CircularPad2d(_CircularPadNd):
    """Pad the last 2 dims by wrapping around."""

    _dims = 2


class CircularPad3d(_CircularPadNd):
    """Pad the last 3 dims by wrapping around."""

    _dims = 3

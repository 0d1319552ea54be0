"""Convert the weights of a model's 2-D/3-D (transposed) convolutions to a memory format."""
from __future__ import annotations

from ..modules.conv import Conv2d
from ..modules.conv import ConvTranspose2d
from ..modules.conv import Conv3d
from ..modules.conv import ConvTranspose3d

__all__ = ["convert_conv2d_weight_memory_format", "convert_conv3d_weight_memory_format"]


# channel dim innermost: the permutation that makes a (N, C, *spatial) tensor's copy channels-last
_CHANNELS_LAST = {"channels_last": (0, 2, 3, 1), "channels_last_3d": (0, 2, 3, 4, 1)}


def _laid_out(weight, memory_format):
    """A copy of `weight` with `memory_format`'s strides (tidal's clone keeps row-major order)."""
    order = _CHANNELS_LAST.get(getattr(memory_format, "name", str(memory_format)))
    if order is None or len(order) != weight.dim():
        return weight.clone()
    inverse = tuple(order.index(d) for d in range(len(order)))
    return weight.permute(order).contiguous().permute(inverse)


def _convert(module, kinds: tuple, memory_format):
    if isinstance(module, kinds):
        module.weight.data = _laid_out(module.weight.detach(), memory_format)
    for child in module.children():
        _convert(child, kinds, memory_format)
    return module


def convert_conv2d_weight_memory_format(module, memory_format):
    """Give every Conv2d/ConvTranspose2d weight under `module` the layout `memory_format`; returns `module`."""
    return _convert(module, (Conv2d, ConvTranspose2d), memory_format)


def convert_conv3d_weight_memory_format(module, memory_format):
    """Give every Conv3d/ConvTranspose3d weight under `module` the layout `memory_format`; returns `module`."""
    return _convert(module, (Conv3d, ConvTranspose3d), memory_format)

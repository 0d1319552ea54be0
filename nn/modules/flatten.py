"""Flatten and Unflatten: reshape a range of dims into one, or one dim into several."""
from __future__ import annotations

from ...tensor import Tensor
from ..module import Module

__all__ = ["Flatten", "Unflatten"]


class Flatten(Module):
    """Flatten dims start_dim..end_dim into one."""

    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        super().__init__()
        self.start_dim = start_dim
        self.end_dim = end_dim

    def forward(self, input: Tensor) -> Tensor:
        """input.flatten(start_dim, end_dim)."""
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Split dim `dim` into `unflattened_size`."""

    def __init__(self, dim: int | str, unflattened_size) -> None:
        super().__init__()
        # torch checks the sizes whatever dim is: a sequence first, then each element
        if not isinstance(unflattened_size, (tuple, list)):
            raise TypeError(f"unflattened_size must be a tuple of ints, but found type "
                            f"{type(unflattened_size).__name__}")
        for pos, size in enumerate(unflattened_size):
            if not isinstance(size, int):
                raise TypeError(f"unflattened_size must be tuple of ints, but found element of type "
                                f"{type(size).__name__} at pos {pos}")
        self.dim = dim
        self.unflattened_size = unflattened_size

    def forward(self, input: Tensor) -> Tensor:
        """input.unflatten(dim, unflattened_size)."""
        return input.unflatten(self.dim, self.unflattened_size)

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"

"""CrossMapLRN2d: the legacy cross-channel local response normalization layer."""
from __future__ import annotations

from ...tensor import Tensor
from ..functional_lrn import cross_map_lrn2d
from ..module import Module

__all__ = ["CrossMapLRN2d"]


class CrossMapLRN2d(Module):
    """Local response normalization across channels, as Lua Torch computed it (see nn.LocalResponseNorm)."""

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1) -> None:
        super().__init__()
        self.size = size
        self.alpha = alpha
        self.beta = beta
        self.k = k

    def forward(self, input: Tensor) -> Tensor:
        """The normalized (N, C, H, W) input."""
        return cross_map_lrn2d(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return f"{self.size!r}, alpha={self.alpha!r}, beta={self.beta!r}, k={self.k!r}"

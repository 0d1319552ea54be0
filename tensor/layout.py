"""`torch.strided`, `torch.contiguous_format` and friends: the tokens scripts pass as `layout=` and `memory_format=`.
tidal tensors are always strided; ops/movement/memory_format.py gives each memory format its strides."""
from __future__ import annotations

__all__ = ["layout", "memory_format", "strided", "sparse_coo", "jagged", "contiguous_format", "preserve_format",
           "channels_last", "channels_last_3d"]


class layout:
    """A tensor layout token (`strided`, or `sparse_coo` for ops/factories/sparse_coo.py's tensors)."""

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return "torch." + self.name

    def __reduce__(self):
        return self.name  # pickles as the module-level singleton


class memory_format:
    """A memory-format token."""

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return "torch." + self.name

    def __reduce__(self):
        return self.name


strided = layout("strided")
sparse_coo = layout("sparse_coo")  # ops/factories/sparse_coo.py's tensors
jagged = layout("jagged")  # nested/: torch.nested's jagged layout
contiguous_format = memory_format("contiguous_format")
preserve_format = memory_format("preserve_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")

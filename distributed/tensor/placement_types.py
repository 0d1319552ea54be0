"""DTensor placements as torch names them, each the face of one tidal sbp: `Shard(dim)` is
`split(dim)`, `Replicate()` is `broadcast`, `Partial(reduce_op)` is `partial(reduce_op)` (`Partial()`:
`partial_sum`)."""
from __future__ import annotations

import operator

from ...comm.placement_sbp import REDUCE_OPS, SbpKind, broadcast, partial, split

__all__ = ["Placement", "Shard", "Replicate", "Partial", "to_sbp", "from_sbp"]


class Placement:
    """How a DTensor maps onto one dimension of its device mesh."""

    __slots__ = ()

    def is_shard(self, dim: int | None = None) -> bool:
        """Whether this is Shard (on `dim`, when given)."""
        return False

    def is_replicate(self) -> bool:
        """Whether this is Replicate."""
        return False

    def is_partial(self, reduce_op: str | None = None) -> bool:
        """Whether this is Partial (with `reduce_op`, when given)."""
        return False


class Shard(Placement):
    """Each rank of the mesh dimension holds one slice of the tensor along `dim` (torch.chunk's parts)."""

    __slots__ = ("dim",)

    def __init__(self, dim: int):
        self.dim = operator.index(dim)

    def is_shard(self, dim: int | None = None) -> bool:
        """Whether this is Shard (on `dim`, when given)."""
        return dim is None or dim == self.dim

    def __eq__(self, other) -> bool:
        return type(other) is Shard and other.dim == self.dim

    def __hash__(self) -> int:
        return hash(("Shard", self.dim))

    def __repr__(self) -> str:
        return f"Shard(dim={self.dim})"

    def __str__(self) -> str:
        return f"S({self.dim})"


class Replicate(Placement):
    """Each rank of the mesh dimension holds the whole tensor."""

    __slots__ = ()

    def is_replicate(self) -> bool:
        """True."""
        return True

    def __eq__(self, other) -> bool:
        return type(other) is Replicate

    def __hash__(self) -> int:
        return hash("Replicate")

    def __repr__(self) -> str:
        return "Replicate()"

    def __str__(self) -> str:
        return "R"


class Partial(Placement):
    """The tensor is the ranks' tensors along the mesh dimension reduced by `reduce_op` ("sum", "avg", "max",
    "min", "product", "band", "bor", "bxor")."""

    __slots__ = ("reduce_op",)

    def __init__(self, reduce_op: str = "sum"):
        if reduce_op not in REDUCE_OPS:   # torch fails only when it reduces; tidal says so at once
            raise ValueError(f"Partial({reduce_op!r}): reduce_op must be one of {', '.join(REDUCE_OPS)}")
        self.reduce_op = reduce_op

    def is_partial(self, reduce_op: str | None = None) -> bool:
        """Whether this is Partial (with `reduce_op`, when given)."""
        return reduce_op is None or reduce_op == self.reduce_op

    def __eq__(self, other) -> bool:
        return type(other) is Partial and other.reduce_op == self.reduce_op

    def __hash__(self) -> int:
        return hash(("Partial", self.reduce_op))

    def __repr__(self) -> str:
        return f"Partial({self.reduce_op})"

    def __str__(self) -> str:
        return f"P({self.reduce_op})"


def to_sbp(placement: Placement, ndim: int) -> SbpKind:
    """The sbp of `placement` for a tensor with `ndim` dims (Shard(-1) is split(ndim - 1))."""
    if isinstance(placement, Shard):
        dim = placement.dim + ndim if placement.dim < 0 else placement.dim
        if not 0 <= dim < max(ndim, 1):
            raise IndexError(f"Shard(dim={placement.dim}) is out of range for a tensor with {ndim} dims")
        return split(dim)
    if isinstance(placement, Replicate):
        return broadcast
    if isinstance(placement, Partial):
        return partial(placement.reduce_op)
    raise TypeError(f"expected a Placement (Shard, Replicate or Partial), got {type(placement).__name__}")


def from_sbp(sbp: SbpKind) -> Placement:
    """The placement of tidal's `sbp`."""
    if sbp.is_split:
        return Shard(sbp.dim)
    return Replicate() if sbp is broadcast else Partial(sbp.op)

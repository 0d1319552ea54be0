"""Where a global tensor lives and how it is laid out there, OneFlow's way.

`placement("cpu", ranks=[0, 1])` names the ranks (a list, or a nested list for a 2-D grid of
ranks); `sbp` says, per grid dimension, how the logical tensor maps onto those ranks:
`split(dim)` (each rank holds one equal slice along `dim`), `broadcast` (each rank holds the
whole value) or `partial_sum` (the value is the sum of every rank's tensor); `partial(op)` is a
partial value reduced by another op ("avg", "max", "min", ...: DTensor's Partial(reduce_op)).
"""
from __future__ import annotations

import itertools
import operator

import numpy as np

__all__ = ["placement", "sbp", "Placement", "SbpKind", "split", "broadcast", "partial_sum", "partial",
           "REDUCE_OPS"]

REDUCE_OPS = ("sum", "avg", "max", "min", "product", "band", "bor", "bxor")  # torch.distributed.ReduceOp's


class SbpKind:
    """One grid dimension's distribution: split(dim), broadcast or partial(op) (immutable, interned)."""

    __slots__ = ("kind", "dim", "op")

    def __init__(self, kind: str, dim: int | None = None, op: str | None = None):
        self.kind, self.dim, self.op = kind, dim, op

    @property
    def is_split(self) -> bool:
        """Whether this is split(dim)."""
        return self.kind == "S"

    @property
    def is_partial(self) -> bool:
        """Whether this is a partial value (partial_sum or partial(op))."""
        return self.kind == "P"

    def __eq__(self, other) -> bool:
        return isinstance(other, SbpKind) and self.kind == other.kind and self.dim == other.dim and \
            self.op == other.op

    def __hash__(self) -> int:
        return hash((self.kind, self.dim, self.op))

    def __repr__(self) -> str:
        if self.kind == "S":
            return f"tidal.sbp.split(dim={self.dim})"
        if self.kind == "B":
            return "tidal.sbp.broadcast"
        return "tidal.sbp.partial_sum" if self.op == "sum" else f"tidal.sbp.partial({self.op!r})"

    def __reduce__(self):
        # copies and pickles are the interned objects again, so `s is broadcast` holds everywhere
        if self.kind == "S":
            return (split, (self.dim,))
        return (partial, (self.op,)) if self.kind == "P" else (_named, (self.kind,))

    def __copy__(self) -> "SbpKind":
        return self

    def __deepcopy__(self, memo) -> "SbpKind":
        return self

    def short(self) -> str:
        """S(0), B or P: the notation of the SBP papers."""
        if self.kind == "P" and self.op != "sum":
            return f"P({self.op})"
        return f"S({self.dim})" if self.kind == "S" else self.kind


_splits: dict = {}


def split(dim: int) -> SbpKind:
    """Each rank holds one equal slice of the tensor along `dim`."""
    dim = operator.index(dim)
    if dim < 0:
        raise ValueError(f"split(): dim must be non-negative, got {dim}")
    hit = _splits.get(dim)
    if hit is None:
        hit = _splits[dim] = SbpKind("S", dim)
    return hit


broadcast = SbpKind("B")
partial_sum = SbpKind("P", op="sum")
_partials: dict = {"sum": partial_sum}


def partial(op: str = "sum") -> SbpKind:
    """The value is every rank's tensor reduced by `op` (one of REDUCE_OPS); partial("sum") is partial_sum."""
    hit = _partials.get(op)
    if hit is None:
        if op not in REDUCE_OPS:
            raise ValueError(f"partial(): reduce op must be one of {', '.join(REDUCE_OPS)}, got {op!r}")
        hit = _partials[op] = SbpKind("P", op=op)
    return hit


def _named(kind: str) -> SbpKind:
    return broadcast if kind == "B" else partial_sum


class _SbpNamespace:
    """`tidal.sbp`: split, broadcast, partial_sum and the sbp type."""

    split = staticmethod(split)
    broadcast = broadcast
    partial_sum = partial_sum
    sbp = SbpKind

    def __repr__(self) -> str:
        return "<module 'tidal.sbp'>"


sbp = _SbpNamespace()


class Placement:
    """A device type and the ranks holding a global tensor, as a 1-D list or an n-D grid."""

    __slots__ = ("type", "_grid", "_hash")

    def __init__(self, type: str = "cpu", ranks=None):
        if not isinstance(type, str):
            raise TypeError(f"placement(): argument 'type' must be str, not {builtin_type(type).__name__}")
        if type != "cpu":
            raise RuntimeError(f"placement(): tidal has global tensors on 'cpu' only, got {type!r}")
        if ranks is None:
            raise TypeError("placement(): missing required argument 'ranks'")
        grid = np.array(ranks, dtype=object)
        if grid.ndim == 0 or grid.size == 0 or not all(isinstance(r, (int, np.integer)) and not isinstance(r, bool)
                                                      for r in grid.flat):
            raise TypeError(f"placement(): ranks must be a non-empty (nested) list of ints, got {ranks!r}")
        grid = grid.astype(np.int64)
        flat = grid.ravel().tolist()
        if len(set(flat)) != len(flat) or min(flat) < 0:
            raise ValueError(f"placement(): ranks must be distinct non-negative ints, got {grid.tolist()}")
        self.type, self._grid = type, grid
        self._hash = hash((type, grid.shape, tuple(flat)))

    @property
    def ranks(self) -> np.ndarray:
        """The ranks, shaped as the grid."""
        return self._grid.copy()

    @property
    def hierarchy(self) -> tuple:
        """The grid's shape."""
        return tuple(self._grid.shape)

    @property
    def ndim(self) -> int:
        """The number of grid dimensions (the length of an sbp tuple for this placement)."""
        return self._grid.ndim

    def flat_ranks(self) -> tuple:
        """Every rank, in grid (row-major) order."""
        return tuple(self._grid.ravel().tolist())

    def coords(self, rank: int) -> tuple | None:
        """The grid coordinates of `rank` (None outside the placement)."""
        hits = np.argwhere(self._grid == rank)
        return tuple(int(c) for c in hits[0]) if len(hits) else None

    def line(self, rank: int, axis: int) -> tuple:
        """The ranks sharing every grid coordinate of `rank` but the one along `axis`, in order."""
        index = list(self.coords(rank))
        index[axis] = slice(None)
        return tuple(self._grid[tuple(index)].tolist())

    def lines(self, axis: int) -> list:
        """Every line of ranks along grid `axis` (in a fixed order: the same on every rank)."""
        others = [range(n) for k, n in enumerate(self._grid.shape) if k != axis]
        out = []
        for fixed in itertools.product(*others):
            index = list(fixed)
            index.insert(axis, slice(None))
            out.append(tuple(self._grid[tuple(index)].tolist()))
        return out

    def __eq__(self, other) -> bool:
        return isinstance(other, Placement) and self.type == other.type and \
            self._grid.shape == other._grid.shape and bool((self._grid == other._grid).all())

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        return f'tidal.placement(type="{self.type}", ranks={self._grid.tolist()})'


builtin_type = type
placement = Placement

"""Boxing: redistributing a global tensor's local shard from one sbp to another.

A 1-D step changes the sbp of one grid axis over the line of ranks along that axis (a process
group): all-gather (S->B), local slice (B->S), all-reduce (P->B), reduce-scatter (P->S),
all-to-all (S(i)->S(j)), keep-on-the-first-rank (B->P) or zero padding (S->P). An n-D boxing
is a plan of such steps, one axis at a time. Every step is an autograd Function whose backward
is the transposed step under the gradient convention "the gradient of S(i) is S(i), of B is B
and of P is B", so gradients flow through redistribution on the ranks' shards.
"""
from __future__ import annotations

from .. import ops
from ..autograd.function import Function
from ..tensor import Tensor
from . import collectives
from .placement_sbp import Placement, SbpKind, broadcast, partial_sum
from .process_group import ProcessGroup, _state, default_group

__all__ = ["box", "step_cost", "line_group", "reduce_gradient", "chunk_span", "shard_shape"]


# -- uneven splits: torch.chunk's rule ----------------------------------------------------------------
def chunk_span(size: int, n: int, k: int) -> tuple:
    """(offset, length) of part k of a dim of `size` split over n ranks as torch.chunk does: parts of
    ceil(size / n), the last ones smaller or empty."""
    chunk = -(-size // n) if n else size
    offset = min(k * chunk, size)
    return offset, max(0, min(chunk, size - offset))


def shard_shape(shape: tuple, placement: Placement, sbp: tuple, rank: int, upto: int | None = None) -> list:
    """The shape of `rank`'s shard of a tensor of global `shape` laid out as `sbp`, applying the splits of
    the grid axes before `upto` (all by default), outer axes first, as torch nests them."""
    sizes = list(shape)
    coords = placement.coords(rank)
    for axis, s in enumerate(sbp[:upto]):
        if s.is_split:
            sizes[s.dim] = chunk_span(sizes[s.dim], placement.hierarchy[axis], coords[axis])[1]
    return sizes


# -- process groups of a placement's lines ----------------------------------------------------------
def line_group(ranks: tuple) -> ProcessGroup:
    """The process group of `ranks` (in this order), made on first use and kept with the world."""
    world = default_group()
    if ranks == world.ranks:
        return world
    cache = world.state.setdefault("placement_groups", {})
    group = cache.get(ranks)
    if group is None:
        # Named by its ranks, so every member makes the same group without a collective call.
        name = "placement-" + ".".join(map(str, ranks))
        group = ProcessGroup(name, ranks, world.backend, _state.client.scope(name, ranks), world.rank())
        _state.groups.append(group)
        cache[ranks] = group
    return group


def _group(placement: Placement, axis: int) -> ProcessGroup:
    return line_group(placement.line(default_group().rank(), axis))


# -- the raw 1-D steps (no autograd; local shards in, local shards out) -------------------------------
def _collectives():
    return collectives


def _pad_to(x: Tensor, dim: int, size: int) -> Tensor:
    """`x` zero-padded at the end of `dim` to `size`."""
    if x.shape[dim] == size:
        return x
    shape = list(x.shape)
    shape[dim] = size
    out = ops.zeros(shape, dtype=x.dtype, device=x.device)
    out.narrow(dim, 0, x.shape[dim]).copy_(x)
    return out


def _gather(x: Tensor, group: ProcessGroup, dim: int, whole: int | None = None) -> Tensor:
    n = group.size()
    whole = x.shape[dim] * n if whole is None else whole
    chunk = -(-whole // n)
    x = _pad_to(x, dim, chunk).contiguous()          # uneven parts travel padded to one chunk
    out = Tensor._empty((n,) + tuple(x.shape), x.dtype, x.device)
    _collectives().all_gather_into_tensor(out, x, group=group)
    shape = list(x.shape)
    shape[dim] *= n
    full = out.movedim(0, dim).reshape(shape)
    return full if whole == chunk * n else full.narrow(dim, 0, whole)


def _slice(x: Tensor, group: ProcessGroup, dim: int) -> Tensor:
    offset, length = chunk_span(x.shape[dim], group.size(), group.rank())
    return x.narrow(dim, offset, length).clone()


def _reduce_op(op: str):
    return getattr(_collectives().ReduceOp, op.upper())


def _all_reduce(x: Tensor, group: ProcessGroup, op: str = "sum") -> Tensor:
    out = x.contiguous().clone()
    _collectives().all_reduce(out, _reduce_op(op), group=group)
    return out


def _reduce_scatter(x: Tensor, group: ProcessGroup, dim: int, op: str = "sum") -> Tensor:
    n, size = group.size(), x.shape[dim]
    chunk = -(-size // n)
    moved = _pad_to(x, dim, chunk * n).movedim(dim, 0).contiguous()
    out = Tensor._empty((chunk,) + tuple(moved.shape[1:]), x.dtype, x.device)
    _collectives().reduce_scatter_tensor(out, moved, _reduce_op(op), group=group)
    out = out.movedim(0, dim)
    length = chunk_span(size, n, group.rank())[1]
    return out if length == chunk else out.narrow(dim, 0, length)


def _all_to_all(x: Tensor, group: ProcessGroup, src: int, dst: int, whole: int | None = None) -> Tensor:
    n, size = group.size(), x.shape[dst]
    if size % n or (whole is not None and whole != x.shape[src] * n):
        return _slice(_gather(x, group, src, whole), group, dst)   # uneven on either side: gather, then cut
    pieces = x.unflatten(dst, (n, size // n)).movedim(dst, 0).contiguous()  # piece k goes to rank k
    got = Tensor._empty(tuple(pieces.shape), x.dtype, x.device)
    _collectives().all_to_all_single(got, pieces, group=group)               # piece k came from rank k
    shape = list(got.shape[1:])
    shape[src] *= n
    return got.movedim(0, src).reshape(shape)


def _partition(x: Tensor, group: ProcessGroup, op: str) -> Tensor:
    """A whole value as partial values that `op` reduces back to it: the first rank's value and zeros for a
    sum (exact), the value itself on every rank for avg/max/min (torch's Replicate -> Partial)."""
    if op == "sum":
        return x.clone() if group.rank() == 0 else ops.zeros_like(x)
    if op in ("avg", "max", "min"):
        return x.clone()
    raise ValueError(f"Replicate to Partial({op}) conversion is not supported.")


def _zero_pad(x: Tensor, group: ProcessGroup, dim: int, whole: int | None = None) -> Tensor:
    n, m = group.size(), x.shape[dim]
    whole = n * m if whole is None else whole
    shape = list(x.shape)
    shape[dim] = whole
    out = ops.zeros(shape, dtype=x.dtype)
    out.narrow(dim, chunk_span(whole, n, group.rank())[0], m).copy_(x)
    return out


def _step(x: Tensor, group: ProcessGroup, src: SbpKind, dst: SbpKind, line: tuple | None) -> Tensor:
    """One axis from `src` to `dst` (src != dst); `line` is the shape of the tensor the ranks of this axis
    share (None: even splits, so it follows from the shard)."""
    if src.is_split:
        whole = None if line is None else line[src.dim]
        if dst.is_split:
            return _all_to_all(x, group, src.dim, dst.dim, whole)
        if dst is partial_sum:
            return _zero_pad(x, group, src.dim, whole)
        full = _gather(x, group, src.dim, whole)
        return full if dst is broadcast else _partition(full, group, dst.op)
    if src is broadcast:
        return _slice(x, group, dst.dim) if dst.is_split else _partition(x, group, dst.op)
    if dst.is_split:
        return _reduce_scatter(x, group, dst.dim, src.op)
    full = _all_reduce(x, group, src.op)
    return full if dst is broadcast else _partition(full, group, dst.op)   # partial to another reduce op


def _grad_sbp(s: SbpKind) -> SbpKind:
    """The sbp of the gradient of a tensor with sbp `s` (a partial value's gradient is B, whatever its op,
    as torch's DTensor has it)."""
    return broadcast if s.is_partial else s


class _Box(Function):
    """One 1-D boxing step; backward is the transposed step."""

    @staticmethod
    def forward(ctx, x, group, src, dst, line):
        ctx.step = (group, src, dst, line)
        return _step(x, group, src, dst, line)

    @staticmethod
    def backward(ctx, grad):
        group, src, dst, line = ctx.step
        back_src, back_dst = _grad_sbp(dst), _grad_sbp(src)
        if back_src == back_dst:
            return grad, None, None, None, None
        return _Box.apply(grad, group, back_src, back_dst, line), None, None, None, None


class _ReduceGradient(Function):
    """Identity forward; backward all-reduces the (partial) gradient of a broadcast input (Megatron's f)."""

    @staticmethod
    def forward(ctx, x, group):
        ctx.group = group
        return x.detach()

    @staticmethod
    def backward(ctx, grad):
        return _ReduceGradientBack.apply(grad, ctx.group), None


class _ReduceGradientBack(Function):
    """All-reduce forward; identity backward (the transposed f, for double backward)."""

    @staticmethod
    def forward(ctx, x, group):
        return _all_reduce(x, group)

    @staticmethod
    def backward(ctx, grad):
        return grad, None


def reduce_gradient(x: Tensor, placement: Placement, axes) -> Tensor:
    """`x` unchanged; in backward its gradient is summed over the ranks of each grid axis in `axes`."""
    for axis in axes:
        x = _ReduceGradient.apply(x, _group(placement, axis))
    return x


# -- n-D plans ---------------------------------------------------------------------------------------
def _valid(state: list, axis: int, new: SbpKind) -> bool:
    """A step on `axis` works on shards when no inner axis splits the dims it touches."""
    dims = {s.dim for s in (state[axis], new) if s.is_split}
    return not any(s.is_split and s.dim in dims for s in state[axis + 1:])


def plan(src: tuple, dst: tuple) -> list:
    """The 1-D steps (axis, from, to) turning nd-sbp `src` into `dst`."""
    if src == dst:
        return []
    state, steps = list(src), []
    for axis in reversed(range(len(src))):        # inner axes first: their shards nest inside outer ones
        if state[axis] != dst[axis]:
            if not _valid(state, axis, dst[axis]):
                break
            steps.append((axis, state[axis], dst[axis]))
            state[axis] = dst[axis]
    else:
        return steps
    # Two axes split the same dim: go through broadcast, inner axes first, then out again outer first.
    state, steps = list(src), []
    for axis in reversed(range(len(src))):
        if state[axis] != broadcast:
            steps.append((axis, state[axis], broadcast))
            state[axis] = broadcast
    for axis in range(len(dst)):
        if dst[axis] != broadcast:
            steps.append((axis, broadcast, dst[axis]))
    return steps


def box(x: Tensor, placement: Placement, src: tuple, dst: tuple, shape: tuple | None = None) -> Tensor:
    """This rank's shard of the tensor whose shard `x` has nd-sbp `src`, redistributed to `dst`. With the
    global `shape`, splits may be uneven (torch.chunk's parts); without, they must be even."""
    state = list(src)
    rank = default_group().rank() if shape is not None else None
    for axis, a, b in plan(src, dst):
        # the ranks along `axis` share the tensor as the outer axes' splits leave it (inner ones do not
        # split the dims this step touches: see _valid)
        line = None if shape is None else tuple(shard_shape(shape, placement, tuple(state), rank, axis))
        x = _Box.apply(x, _group(placement, axis), a, b, line)
        state[axis] = b
    return x


# Bytes a rank receives per byte of its shard; local steps cost a little (they copy), so that equal
# signatures prefer the one that moves nothing at all.
_COST = {("S", "B"): lambda n: n - 1, ("P", "B"): lambda n: 2 * (n - 1) / n, ("P", "S"): lambda n: (n - 1) / n,
         ("S", "S"): lambda n: (n - 1) / n, ("B", "S"): lambda n: 0.01 / n, ("B", "P"): lambda n: 0.01,
         ("S", "P"): lambda n: n - 1}   # zero padding: n times the memory, and P is dear to reduce later


def step_cost(nbytes: float, src: SbpKind, dst: SbpKind, n: int) -> float:
    """About how many bytes a rank receives redistributing a shard of `nbytes` along an axis of n ranks."""
    if src == dst:
        return 0.0
    if src.kind == dst.kind == "P":   # another reduce op: through the whole value
        return nbytes * (_COST[("P", "B")](n) + _COST[("B", "P")](n))
    return nbytes * _COST[(src.kind, dst.kind)](n)

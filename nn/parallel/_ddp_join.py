"""DistributedDataParallel under the join context manager (torch's _DDPJoinHook): what a rank that ran out of inputs
does while the others still train, and how all ranks agree on the final model.

Each iteration of the running ranks issues, in order: the join notification (Join.notify_join_context), when
buffers are broadcast an all-reduce (MAX) choosing the rank to broadcast them from (a running one: a joined rank's
buffers are stale) and that broadcast, an all-reduce saying whether this backward syncs gradients, and, when it
does, the usage all-reduce (find_unused_parameters) and one all-reduce per gradient bucket. A joined rank's main
hook issues the same ones with neutral values: zero gradients, rank -1. With divide_by_initial_world_size the
buckets are averaged over the whole world (joined ranks count as zeros); without, summed and divided by the number
of ranks still running.
"""
from __future__ import annotations

from ... import ops
from ...autograd.grad_mode import no_grad
from ...comm import collectives as C
from ...comm.join import JoinHook
from ...tensor import dtype as dt
from ._reducer import _broadcast_coalesced

__all__ = ["DDPJoinHook", "find_common_rank", "bucket_op"]


def find_common_rank(ddp, rank: int, candidate: bool) -> int:
    """The largest rank among the candidates (all-reduce MAX of the rank, -1 for a non-candidate)."""
    t = ops.tensor([rank if candidate else -1])
    C.all_reduce(t, op=C.ReduceOp.MAX, group=ddp.process_group)
    common = int(t.item())
    if common == -1:
        raise ValueError("BUG! Expected rank_cond to be true for at least one process. This indicates a bug in "
                         "PyTorch, please report an issue.")
    return common


def bucket_op(ddp):
    """The reduction of gradient buckets: the average over the world, or (join without
    divide_by_initial_world_size) the sum the running ranks then divide by their number."""
    join = getattr(ddp, "_join_config", None)
    if join is not None and join.enable and not ddp._divide_by_initial_world_size:
        return C.ReduceOp.SUM
    return C.ReduceOp.AVG


def sync_flag(ddp, value: float) -> float:
    """All-reduce of this rank's 'sync gradients this backward' flag: the sum over ranks."""
    t = ops.full((1,), value)
    C.all_reduce(t, group=ddp.process_group)
    return t.item()


class DDPJoinHook(JoinHook):
    """Shadows a DDP iteration on a joined rank; syncs the final model from the last rank to join."""

    def __init__(self, ddp, divide_by_initial_world_size: bool) -> None:
        self.ddp = ddp
        ddp._divide_by_initial_world_size = divide_by_initial_world_size

    def main_hook(self) -> None:
        """The buffer broadcast, the sync flag and the backward's all-reduces of one iteration, with zeros."""
        ddp = self.ddp
        rank = ddp.process_group.rank()
        if ddp.require_forward_param_sync and ddp.broadcast_buffers and ddp.modules_buffers:
            _broadcast_coalesced(ddp.modules_buffers, ddp.process_group, find_common_rank(ddp, rank, False))
        should_sync = sync_flag(ddp, 0.0) != 0
        ddp.require_forward_param_sync = should_sync
        if not should_sync:
            return
        reducer = ddp.reducer
        if reducer.find_unused:
            C.all_reduce(ops.zeros((len(reducer.params),), dtype=dt.int32), group=ddp.process_group)
        op = bucket_op(ddp)
        with no_grad():
            for bucket in reducer.buckets:
                C.all_reduce(ops.zeros_like(bucket.flat), op=op, group=ddp.process_group)

    def post_hook(self, is_last_joiner: bool) -> None:
        """Every rank takes the parameters (and broadcast buffers) of the last rank to join."""
        ddp = self.ddp
        src = find_common_rank(ddp, ddp.process_group.rank(), is_last_joiner)
        state = list(ddp.module.parameters()) + (ddp.modules_buffers if ddp.broadcast_buffers else [])
        _broadcast_coalesced(state, ddp.process_group, src)

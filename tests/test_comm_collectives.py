"""Collectives on real ranks (2 and 4 processes on loopback), every op and dtype against NumPy, async
handles, ordering with compute, subgroups, argument errors and a rank dying mid all-reduce. The rank
side lives in comm_ranks.py. Every test has a timeout; a pool that stops answering is killed."""
import pytest

import comm_ranks as R
from comm_ranks import RankPool, no_failures




# -- the tests ----------------------------------------------------------------------------------------
@pytest.mark.timeout(90)
def test_all_reduce_every_dtype_and_op(ranks):
    no_failures(ranks.run(R.all_reduce_everything, timeout=80))


@pytest.mark.timeout(60)
def test_reduce_scatter_and_reduce(ranks):
    no_failures(ranks.run(R.reduce_and_scatter_everything, timeout=50))


@pytest.mark.timeout(60)
def test_all_gather_and_broadcast(ranks):
    no_failures(ranks.run(R.gather_broadcast_everything, timeout=50))


@pytest.mark.timeout(60)
def test_all_to_all(ranks):
    no_failures(ranks.run(R.all_to_all_everything, timeout=50))


@pytest.mark.timeout(60)
def test_send_recv(ranks):
    no_failures(ranks.run(R.point_to_point, timeout=50))


@pytest.mark.timeout(60)
def test_async_handles(ranks):
    no_failures(ranks.run(R.async_handles, timeout=50))


@pytest.mark.timeout(60)
def test_collectives_order_with_compute(ranks):
    no_failures(ranks.run(R.stream_ordering, timeout=50))


@pytest.mark.timeout(60)
def test_large_tensors_in_zero_copy_pieces(ranks):
    no_failures(ranks.run(R.large_tensors, timeout=50))


@pytest.mark.timeout(60)
def test_non_contiguous_tensors(ranks):
    no_failures(ranks.run(R.non_contiguous, timeout=50))


@pytest.mark.timeout(60)
def test_subgroups(ranks):
    no_failures(ranks.run(R.subgroups, timeout=50))


@pytest.mark.timeout(60)
def test_argument_errors(ranks):
    no_failures(ranks.run(R.validation_errors, timeout=50))


def test_reduce_op_looks_like_torch():
    from tidal.comm.collectives import ReduceOp
    assert repr(ReduceOp.SUM) == "<RedOpType.SUM: 0>" and str(ReduceOp.AVG) == "RedOpType.AVG"
    assert ReduceOp.RedOpType.MAX is ReduceOp.MAX
    assert [op.name for op in ReduceOp] == ["SUM", "AVG", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR"]


@pytest.mark.timeout(60)
def test_a_dead_rank_fails_the_others():
    pool = RankPool(2)
    try:
        for r in range(2):
            pool.inboxes[r].put((R.die_or_all_reduce, (1,)))
        rank, ok, message = pool.outbox.get(timeout=20)
        assert rank == 0 and ok, message
        assert "after" in message and float(message.split("after ")[1].split(" s")[0]) < 10, message
        assert "rank 1" in message, message
    finally:
        pool.close(kill=True)  # the job is aborted: nothing to shut down in order

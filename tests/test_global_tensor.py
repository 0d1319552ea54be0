"""Global tensors on real ranks (2 and 4 processes): boxing between every pair of S(0), S(1), B, P
with gradients, a 2x2 grid, op signatures against NumPy, a tensor-parallel MLP against the local
model, and the errors. The rank side lives in global_ranks.py."""
import copy
import pickle

import pytest

import global_ranks as G
import tidal
from comm_ranks import no_failures




@pytest.mark.timeout(120)
def test_boxing_every_pair(ranks):
    no_failures(ranks.run(G.boxing_pairs, timeout=100))


@pytest.mark.timeout(120)
def test_boxing_on_a_grid(ranks):
    if ranks.size != 4:
        pytest.skip("a 2x2 grid needs 4 ranks")
    no_failures(ranks.run(G.boxing_grid, timeout=100))


@pytest.mark.timeout(120)
def test_placement_of_some_ranks(ranks):
    if ranks.size != 4:
        pytest.skip("needs ranks outside the placement")
    no_failures(ranks.run(G.subset_placement, timeout=50, ranks=[1, 3]))


@pytest.mark.timeout(120)
def test_elementwise_signatures(ranks):
    no_failures(ranks.run(G.elementwise_ops, timeout=100))


@pytest.mark.timeout(120)
def test_matmul_reductions_views(ranks):
    no_failures(ranks.run(G.matmul_and_shapes, timeout=100))


@pytest.mark.timeout(120)
def test_tensor_parallel_mlp(ranks):
    no_failures(ranks.run(G.tensor_parallel_mlp, timeout=100))


@pytest.mark.timeout(120)
def test_errors(ranks):
    no_failures(ranks.run(G.errors, timeout=100))


# -- single process: the API's objects ----------------------------------------------------------------------
def test_placement_and_sbp_objects():
    p = tidal.placement("cpu", ranks=[0, 1])
    assert repr(p) == 'tidal.placement(type="cpu", ranks=[0, 1])'
    assert p == tidal.placement(type="cpu", ranks=[0, 1]) and hash(p) == hash(tidal.placement("cpu", [0, 1]))
    assert p != tidal.placement("cpu", ranks=[1, 0])
    grid = tidal.placement("cpu", ranks=[[0, 1], [2, 3]])
    assert grid.hierarchy == (2, 2) and grid.ndim == 2 and grid.lines(1) == [(0, 1), (2, 3)]
    assert grid.line(2, 0) == (0, 2) and grid != tidal.placement("cpu", ranks=[0, 1, 2, 3])
    assert repr(tidal.sbp.split(0)) == "tidal.sbp.split(dim=0)" and tidal.sbp.split(1) == tidal.sbp.split(1)
    assert repr(tidal.sbp.broadcast) == "tidal.sbp.broadcast" and repr(tidal.sbp.partial_sum) == "tidal.sbp.partial_sum"
    assert len({tidal.sbp.split(0), tidal.sbp.split(0), tidal.sbp.broadcast}) == 2
    assert tidal.ones(2).is_global is False
    assert copy.deepcopy(tidal.sbp.broadcast) is tidal.sbp.broadcast
    assert pickle.loads(pickle.dumps((tidal.sbp.split(1), tidal.sbp.partial_sum))) == (tidal.sbp.split(1),
                                                                                       tidal.sbp.partial_sum)
    assert pickle.loads(pickle.dumps(grid)) == grid
    with pytest.raises(ValueError, match="distinct"):
        tidal.placement("cpu", ranks=[0, 0])
    with pytest.raises(TypeError, match="ranks must be"):
        tidal.placement("cpu", ranks=["a"])
    with pytest.raises(RuntimeError, match="'cpu' only"):
        tidal.placement("cuda", ranks=[0])
    with pytest.raises(ValueError, match="non-negative"):
        tidal.sbp.split(-1)


def test_to_global_needs_a_process_group():
    from tidal import comm
    if comm.is_initialized():
        pytest.skip("a process group exists in this process")
    with pytest.raises(RuntimeError, match="init_process_group"):
        tidal.ones(2).to_global(tidal.placement("cpu", ranks=[0]), tidal.sbp.broadcast)

"""DistributedDataParallel on real ranks (2 and 4 processes on loopback) against one process on the
whole batch, and DistributedSampler against torch's. The rank side lives in ddp_ranks.py."""
import math

import pytest
import torch

import ddp_ranks as D
from comm_ranks import RankPool, no_failures
from tidal.utils.data import DistributedSampler
from tidal.utils.data.distributed import torch_randperm


@pytest.fixture(scope="module")
def pair():
    pool = RankPool(2)
    yield pool
    pool.close()


@pytest.fixture(scope="module")
def quad():
    pool = RankPool(4)
    yield pool
    pool.close()


@pytest.fixture(params=["pair", "quad"], ids=["2ranks", "4ranks"])
def ranks(request):
    """2 ranks, then 4 (only where 4 add something: averaging over more ranks, per-rank messages)."""
    return request.getfixturevalue(request.param)


# -- DDP ------------------------------------------------------------------------------------------------------
@pytest.mark.timeout(60)
@pytest.mark.parametrize("bucket_as_view", [False, True], ids=["copied", "bucket_view"])
def test_training_matches_one_process_on_the_whole_batch(pair, bucket_as_view):
    no_failures(pair.run(D.train_matches_full_batch, bucket_as_view, timeout=50))


@pytest.mark.timeout(60)
def test_training_on_4_ranks(quad):
    no_failures(quad.run(D.train_matches_full_batch, False, timeout=50))


@pytest.mark.timeout(60)
def test_buckets_are_reduced_while_backward_runs(pair):
    no_failures(pair.run(D.buckets_launch_during_backward, timeout=50))


@pytest.mark.timeout(60)
def test_no_sync_accumulates_then_averages(pair):
    no_failures(pair.run(D.no_sync_accumulates, timeout=50))


@pytest.mark.timeout(60)
def test_find_unused_parameters(ranks):
    no_failures(ranks.run(D.find_unused, timeout=50))


@pytest.mark.timeout(60)
@pytest.mark.parametrize("broadcast", [True, False])
def test_buffers_come_from_rank0(pair, broadcast):
    no_failures(pair.run(D.buffers_follow_rank0, broadcast, timeout=50))


@pytest.mark.timeout(60)
def test_state_dict_and_construction_errors(pair):
    no_failures(pair.run(D.state_and_errors, timeout=50))


@pytest.mark.timeout(60)
def test_unused_parameter_error_at_next_forward(ranks):
    messages = ranks.run(D.unused_without_find_unused, timeout=50)
    for rank, message in enumerate(messages):
        assert message.startswith("Expected to have finished reduction in the prior iteration before starting a "
                                  "new one. This error indicates that your module has parameters that were not "
                                  "used in producing loss."), message
        assert "find_unused_parameters=True" in message
        assert f"Parameter indices which did not receive grad for rank {rank}: 4 5\n" in message


@pytest.mark.timeout(60)
def test_sampler_defaults_to_the_process_group(pair):
    no_failures(pair.run(D.sampler_from_group, timeout=50))


@pytest.mark.parametrize("limits", [[160, 800], [10 ** 9], [100, 160, 800], [1]])
def test_bucket_assignment_like_torch(limits):
    """torch's assignment, reversed as torch's DDP does: the last-registered parameters' bucket first."""
    import tidal
    from tidal.nn.parallel._reducer import bucket_assignment
    sizes = [(10, "float64"), (10, "float32"), (100, "float64"), (5, "float64"), (200, "float32"), (3, "float64"),
             (50, "float64")]
    ours = [tidal.zeros(n, dtype=getattr(tidal, d)) for n, d in sizes]
    theirs = [torch.zeros(n, dtype=getattr(torch, d)) for n, d in sizes]
    want = torch.distributed._compute_bucket_assignment_by_size(theirs, limits)[0]
    assert bucket_assignment(ours, limits) == list(reversed(want))


def test_ddp_needs_a_process_group():
    import tidal
    from tidal.nn.parallel import DistributedDataParallel
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        DistributedDataParallel(tidal.nn.Linear(2, 2))


# -- DistributedSampler ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("n", [0, 1, 2, 7, 100, 1000])
@pytest.mark.parametrize("seed", [0, 5, -3, 2 ** 40 + 1])
def test_randperm_is_torchs(n, seed):
    g = torch.Generator()
    g.manual_seed(seed)
    assert torch_randperm(n, seed) == torch.randperm(n, generator=g).tolist()


@pytest.mark.parametrize("length", [1, 5, 10, 11, 13])
@pytest.mark.parametrize("replicas", [1, 3, 4])
@pytest.mark.parametrize("shuffle", [False, True])
@pytest.mark.parametrize("drop_last", [False, True])
def test_sampler_matches_torch(length, replicas, shuffle, drop_last):
    dataset = list(range(length))
    for epoch in (0, 3):
        shares = []
        for rank in range(replicas):
            ours = DistributedSampler(dataset, replicas, rank, shuffle=shuffle, seed=11, drop_last=drop_last)
            theirs = torch.utils.data.DistributedSampler(dataset, replicas, rank, shuffle=shuffle, seed=11,
                                                         drop_last=drop_last)
            ours.set_epoch(epoch)
            theirs.set_epoch(epoch)
            assert list(ours) == list(theirs)
            assert len(ours) == len(theirs) == len(list(ours))
            shares.append(list(ours))
        every = sorted(i for share in shares for i in share)
        if drop_last:  # disjoint shares, all of the same size
            assert len(set(every)) == len(every) and len(every) == replicas * (length // replicas)
        else:          # every index at least once, padded to a multiple of the replicas
            assert set(every) == set(dataset) and len(every) == replicas * math.ceil(length / replicas)


def test_sampler_epochs_differ_and_repeat():
    sampler = DistributedSampler(range(50), num_replicas=2, rank=0)
    first = list(sampler)
    sampler.set_epoch(1)
    assert list(sampler) != first
    sampler.set_epoch(0)
    assert list(sampler) == first


def test_sampler_errors():
    with pytest.raises(ValueError, match=r"Invalid rank 2, rank should be in the interval \[0, 1\]"):
        DistributedSampler(range(4), num_replicas=2, rank=2)
    with pytest.raises(ValueError, match="Invalid rank -1"):
        DistributedSampler(range(4), num_replicas=2, rank=-1)
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        DistributedSampler(range(4))


def test_sampler_in_a_dataloader():
    import tidal
    from tidal.utils.data import DataLoader, TensorDataset
    data = TensorDataset(tidal.arange(10))
    loader = DataLoader(data, batch_size=2, sampler=DistributedSampler(data, 2, 1, shuffle=False))
    assert [b[0].tolist() for b in loader] == [[1, 3], [5, 7], [9]]

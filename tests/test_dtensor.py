"""torch.distributed.tensor on tidal's global tensors: placements and meshes, redistribute between
every pair of placements on 2 real ranks, and a tensor-parallel MLP (parallelize_module with
Colwise/Rowwise) trained on 2 ranks giving the losses and weights of the same MLP trained by torch
in one process. The rank side lives in dtensor_ranks.py."""
import numpy as np
import pytest
import torch

import dtensor_ranks as R
import tidal.compat
from comm_ranks import no_failures

SIZE = 2


def _weights(rng, sizes: list) -> list:
    return [rng.standard_normal(s) * 0.5 for s in sizes]


def _torch_mlp(weights: list) -> torch.nn.Module:
    m = torch.nn.Sequential(torch.nn.Linear(6, 4 * SIZE), torch.nn.Tanh(), torch.nn.Linear(4 * SIZE, 3)).double()
    with torch.no_grad():
        for p, w in zip(m.parameters(), weights):
            p.copy_(torch.tensor(w))
    return m


MLP_SHAPES = [(4 * SIZE, 6), (4 * SIZE,), (3, 4 * SIZE), (3,)]


# -- single process ----------------------------------------------------------------------------------------------
def test_placement_objects_match_torch():
    from torch.distributed.tensor import Partial as TP, Replicate as TR, Shard as TS
    from tidal.distributed.tensor import Partial, Replicate, Shard
    for ours, theirs in [(Shard(0), TS(0)), (Shard(-1), TS(-1)), (Replicate(), TR()), (Partial(), TP())]:
        assert repr(ours) == repr(theirs) and str(ours) == str(theirs)
        assert (ours.is_shard(), ours.is_replicate(), ours.is_partial()) == \
            (theirs.is_shard(), theirs.is_replicate(), theirs.is_partial())
    assert Shard(1) == Shard(1) and Shard(1) != Shard(0) and Replicate() != Partial()
    assert len({Shard(0), Shard(0), Replicate(), Replicate()}) == 2
    assert Shard(1).is_shard(1) and not Shard(1).is_shard(0) and Partial().is_partial("sum")


def test_compat_names():
    tc = tidal.compat
    from tidal.distributed.tensor import DTensor
    from tidal.comm import GlobalTensor
    assert tc.distributed.tensor.DTensor is DTensor is GlobalTensor   # one tensor class, two faces
    assert tc.distributed.init_device_mesh is tc.distributed.device_mesh.init_device_mesh
    assert callable(tc.distributed.fsdp.fully_shard) and callable(tc.distributed.checkpoint.save)
    from tidal.distributed.tensor import parallel
    assert {"ColwiseParallel", "RowwiseParallel", "SequenceParallel", "parallelize_module"} <= set(parallel.__all__)


def test_meshes_need_cpu():
    from tidal.distributed.device_mesh import DeviceMesh
    with pytest.raises(RuntimeError, match="'cpu' only"):
        DeviceMesh("cuda", [0, 1])


# -- 2 ranks --------------------------------------------------------------------------------------------------------
@pytest.mark.timeout(120)
def test_redistribute_every_pair(pool):
    no_failures(pool.run(R.redistribute_every_pair, timeout=100))


@pytest.mark.timeout(120)
def test_mesh_and_errors(pool):
    no_failures(pool.run(R.mesh_and_errors, timeout=100))


@pytest.mark.timeout(120)
def test_tensor_parallel_mlp_trains_like_torch(pool):
    rng = np.random.default_rng(11)
    weights = _weights(rng, MLP_SHAPES)
    x, y = rng.standard_normal((5, 6)), rng.standard_normal((5, 3))
    steps = 4
    model = _torch_mlp(weights)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    losses = []
    for _ in range(steps):
        loss = torch.nn.functional.mse_loss(model(torch.tensor(x)), torch.tensor(y))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    for got in pool.run(R.tensor_parallel_training, weights, x, y, steps, timeout=100):
        assert got["layout"] == {"0.weight": ["Shard(dim=0)"], "0.bias": ["Shard(dim=0)"],
                                 "2.weight": ["Shard(dim=1)"], "2.bias": ["Replicate()"]}
        assert got["out_type"] == "Tensor"   # use_local_output: the Rowwise output is a plain (replicated) tensor
        np.testing.assert_allclose(got["losses"], losses, rtol=1e-12)
        for ours, p in zip(got["weights"], model.parameters()):
            np.testing.assert_allclose(ours, p.detach().numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.timeout(120)
def test_distribute_module_and_sequence_parallel(pool):
    rng = np.random.default_rng(12)
    weights = _weights(rng, MLP_SHAPES)
    x = rng.standard_normal((4, 6))
    want = _torch_mlp(weights)(torch.tensor(x)).detach().numpy()
    seq = torch.arange(2 * 2 * SIZE * 5, dtype=torch.float64).reshape(2, 2 * SIZE, 5) ** 1.5 / 7
    want_seq = torch.nn.LayerNorm(5).double()(seq).detach().numpy()
    for got in pool.run(R.distribute_module_hooks, weights, x, timeout=100):
        assert got["failures"] == []
        assert got["layout"] == {"0.weight": "Shard(dim=0)", "0.bias": "Shard(dim=0)", "2.weight": "Replicate()",
                                 "2.bias": "Replicate()"}
        np.testing.assert_allclose(got["out"], want, rtol=1e-12)
        assert got["seq_placements"] == "(Shard(dim=1),)"
        np.testing.assert_allclose(got["seq_full"], want_seq, rtol=1e-10, atol=1e-12)


def _torch_factories(shape: tuple) -> dict:
    """torch's DTensor factories on a fake 2-rank group (they make local tensors only): per rank and layout."""
    import torch.distributed as dist
    from torch.distributed.tensor import Partial, Replicate, Shard, empty, full, ones, zeros
    from torch.distributed.device_mesh import init_device_mesh
    from torch.testing._internal.distributed.fake_pg import FakeStore
    layouts = {"S0": Shard(0), "S1": Shard(1), "R": Replicate(), "P": Partial()}
    ranks = []
    for rank in range(SIZE):
        dist.init_process_group("fake", store=FakeStore(), rank=rank, world_size=SIZE)
        try:
            mesh = init_device_mesh("cpu", (SIZE,))
            per = {}
            for spec in R.FACTORY_LAYOUTS:
                made = {"zeros": zeros(shape, device_mesh=mesh, placements=[layouts[spec]]),
                        "ones": ones(*shape, dtype=torch.float64, device_mesh=mesh, placements=[layouts[spec]]),
                        "full": full(shape, 2.5, requires_grad=True, device_mesh=mesh, placements=[layouts[spec]]),
                        "empty": empty(shape, device_mesh=mesh, placements=[layouts[spec]])}
                per[spec] = {k: (repr(v.placements), tuple(v.shape), str(v.dtype).split(".")[-1], v.requires_grad,
                                 v.to_local().detach().numpy() if k != "empty" else tuple(v.to_local().shape))
                             for k, v in made.items()}
            ranks.append(per)
        finally:
            dist.destroy_process_group()
    return ranks


@pytest.mark.timeout(120)
def test_factories_and_prepare_module_input_output(pool):
    shape = (5, 3)   # uneven on both dims over 2 ranks
    theirs = _torch_factories(shape)
    rows = np.arange(2 * SIZE * 3, dtype=np.float64).reshape(2 * SIZE, 3) / 10
    for rank, got in enumerate(pool.run(R.factories_and_prepare, shape, timeout=100)):
        for spec in R.FACTORY_LAYOUTS:
            for kind, want in theirs[rank][spec].items():
                ours = got[spec][kind]
                assert ours[:4] == want[:4], (rank, spec, kind)
                np.testing.assert_array_equal(ours[4], want[4])
            whole, parts, placements = got[spec]["randn"]   # the parts of one global draw, whatever the layout
            np.testing.assert_array_equal(parts, whole)
            uniform, placements_u = got[spec]["rand"]
            assert placements == placements_u == want[0] and uniform.shape == shape
            assert 0 <= uniform.min() and uniform.max() < 1 and len(np.unique(uniform)) == uniform.size
        prepared = got["prepared"]
        assert prepared["seen"] == [("GlobalTensor", "(Replicate(),)")] and prepared["type"] == "Tensor"
        np.testing.assert_allclose(prepared["value"], np.tanh(np.split(rows, SIZE)[rank]), rtol=1e-12)


@pytest.mark.timeout(120)
def test_loss_parallel_as_torch(pool):
    """Cross-entropy of logits sharded (unevenly) on the class dim inside loss_parallel: torch's values and
    gradients, a Replicate loss, the logits never gathered (only the max, the sum of exponentials and the
    picked log-probabilities are all-reduced)."""
    rng = np.random.default_rng(13)
    logits, weight = rng.standard_normal((6, 5)) * 2, rng.uniform(0.5, 2.0, 5)
    target = np.array([0, 4, 2, -1, 3, 1])   # -1: ignored
    for rank, got in enumerate(pool.run(R.parallel_loss, logits, target, weight, timeout=100)):
        for reduction, weighted in R.LOSS_CASES:
            x = torch.tensor(logits, requires_grad=True)
            loss = torch.nn.functional.cross_entropy(x, torch.tensor(target), weight=torch.tensor(weight) if weighted
                                                     else None, reduction=reduction, ignore_index=-1)
            (loss.sum() if reduction == "none" else loss).backward()
            ours = got[(reduction, weighted)]
            np.testing.assert_allclose(ours["value"], loss.detach().numpy(), rtol=1e-12)
            np.testing.assert_allclose(ours["grad"], x.grad.chunk(SIZE, 1)[rank].numpy(), rtol=1e-10, atol=1e-14)
            assert ours["placements"] == "(Replicate(),)" and "S(1)->B" not in ours["steps"], ours["steps"]
        logp = torch.log_softmax(torch.tensor(logits), 1)
        assert got["log_softmax"]["placements"] == "(Shard(dim=1),)" and "S(1)->B" not in got["log_softmax"]["steps"]
        np.testing.assert_allclose(got["log_softmax"]["local"], logp.chunk(SIZE, 1)[rank].numpy(), rtol=1e-12)
        want = torch.nn.CrossEntropyLoss(ignore_index=-1)(torch.tensor(logits), torch.tensor(target)).item()
        assert got["module"] == pytest.approx(want, rel=1e-12) and got["restored"]
        assert "requires exactly one mesh dim to shard tensor dimension 1" in got["wrong_layout"]


@pytest.mark.timeout(120)
def test_local_map_and_implicit_replication(pool):
    rng = np.random.default_rng(17)
    w, x, bias = rng.standard_normal((6, 4)), rng.standard_normal((4, 5)), rng.standard_normal(5)
    wt = torch.tensor(w, requires_grad=True)
    (wt @ torch.tensor(x)).sum().backward()
    for rank, got in enumerate(pool.run(R.experimental_local_map, w, x, bias, timeout=100)):
        assert got["placements"] == "(Partial(sum),)"
        assert got["seen"] == [("Tensor", (6, 4 // SIZE), (4 // SIZE, 5))]   # func saw the local tensors
        np.testing.assert_allclose(got["full"], w @ x, rtol=1e-12)
        np.testing.assert_allclose(got["grad"], wt.grad.chunk(SIZE, 1)[rank].numpy(), rtol=1e-12)
        assert "in local_map has a mismatched placements" in got["mismatch"]
        np.testing.assert_allclose(got["redistributed"], w @ x, rtol=1e-12)
        assert got["without"] == "TypeError"
        assert got["implicit"][0] == "(Shard(dim=0),)"
        np.testing.assert_allclose(got["implicit"][1], x + bias, rtol=1e-12)

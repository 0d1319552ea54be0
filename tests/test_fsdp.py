"""FSDP2 (fully_shard) and torch.distributed.checkpoint on tidal's global tensors, on 2 real ranks:
a sharded MLP trained with Adam (each rank on half the batch) gives the losses and weights of the
same MLP trained by torch in one process on the whole batch; gradient accumulation without sync;
a checkpoint saved on 2 ranks loads on 2 ranks (into other layouts too) and in 1 process. The rank
side lives in fsdp_ranks.py."""
import numpy as np
import pytest
import torch

import fsdp_ranks as F
import tidal
from tidal import nn

SIZE = 2
SHAPES = [(8, 6), (8,), (4, 8), (4,), (3, 4), (3,)]


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(21)
    weights = [rng.standard_normal(s) * 0.5 for s in SHAPES]
    return weights, rng.standard_normal((8, 6)), rng.standard_normal((8, 3))


def _torch_model(weights: list) -> torch.nn.Module:
    m = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.Tanh(), torch.nn.Linear(8, 4), torch.nn.Tanh(),
                              torch.nn.Linear(4, 3)).double()
    with torch.no_grad():
        for p, w in zip(m.parameters(), weights):
            p.copy_(torch.tensor(w))
    return m


def _torch_training(weights, x, y, steps: int):
    model = _torch_model(weights)
    opt = torch.optim.Adam(model.parameters(), lr=0.05)
    losses, norms = [], []
    for _ in range(steps):
        loss = torch.nn.functional.mse_loss(model(torch.tensor(x)), torch.tensor(y))
        opt.zero_grad()
        loss.backward()
        norms.append(float(torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)))
        opt.step()
        losses.append(loss.item())
    return losses, norms, [p.detach().numpy() for p in model.parameters()]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("reshard_after_forward", [True, False])
def test_fully_shard_trains_like_torch(pool, data, reshard_after_forward):
    weights, x, y = data
    steps = 4
    losses, norms, final = _torch_training(weights, x, y, steps)
    for rank, got in enumerate(pool.run(F.fsdp_training, weights, x, y, steps, reshard_after_forward, timeout=100)):
        assert got["layout"] == {name: ["Shard(dim=0)"] for name in got["layout"]}
        # the last layer's 3 rows split as torch.chunk does (and as torch's FSDP2 shards them): 2 rows, then 1
        assert got["local_shapes"] == {"0.weight": (4, 6), "0.bias": (4,), "2.weight": (2, 8), "2.bias": (2,),
                                       "4.weight": ((2, 4), (1, 4))[rank], "4.bias": ((2,), (1,))[rank]}
        assert got["classes"] == ["FSDPSequential", True, True]
        # between forward and backward the module holds whole tensors only without reshard_after_forward
        assert got["registered"] == (["GlobalParameter"] * 2 * steps if reshard_after_forward
                                     else ["Tensor", "GlobalParameter"] * steps)
        np.testing.assert_allclose(got["losses"], losses, rtol=1e-10)
        np.testing.assert_allclose(got["norms"], norms, rtol=1e-10)
        for ours, want in zip(got["weights"], final):
            np.testing.assert_allclose(ours, want, rtol=1e-8, atol=1e-10)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("mesh_shape", [(SIZE, 1), (1, SIZE)], ids=["replicate", "shard"])
def test_hybrid_shard_on_a_2d_mesh(pool, data, mesh_shape):
    weights, x, y = data
    losses, norms, final = _torch_training(weights, x, y, 3)
    for got in pool.run(F.fsdp_training, weights, x, y, 3, True, mesh_shape, timeout=100):
        assert got["layout"]["0.weight"] == ["Replicate()", "Shard(dim=0)"]
        assert got["local_shapes"]["0.weight"] == (8 // mesh_shape[1], 6)
        np.testing.assert_allclose(got["losses"], losses, rtol=1e-10)
        np.testing.assert_allclose(got["norms"], norms, rtol=1e-10)
        for ours, want in zip(got["weights"], final):
            np.testing.assert_allclose(ours, want, rtol=1e-8, atol=1e-10)


@pytest.mark.timeout(120)
def test_reshard_after_forward_frees_the_gathered_weights(pool, data):
    """With reshard_after_forward the graph keeps no gathered weight (saved-tensor hooks note which parameter
    an op saved; backward gathers it again); without, the module keeps them until backward. Same gradients."""
    weights, x, y = data
    model = _torch_model(weights)
    torch.nn.functional.mse_loss(model(torch.tensor(x)), torch.tensor(y)).backward()
    for got in pool.run(F.gathered_lifetime, weights, x, y, timeout=100):
        assert got["alive_True"] == [False, False, False]
        assert got["alive_False"] == [True, True, True]
        for ours, other, p in zip(got["grads_True"], got["grads_False"], model.parameters()):
            np.testing.assert_allclose(ours, p.grad.numpy(), rtol=1e-10, atol=1e-12)
            np.testing.assert_allclose(other, p.grad.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.timeout(120)
def test_gradient_accumulation_without_sync(pool, data):
    weights, x, y = data
    model = _torch_model(weights)
    rows, half = len(x) // SIZE, len(x) // SIZE // 2
    total = 0
    for r in range(SIZE):
        for k in range(2):
            lo = r * rows + k * half
            out = model(torch.tensor(x[lo:lo + half]))
            total = total + torch.nn.functional.mse_loss(out, torch.tensor(y[lo:lo + half])) / SIZE
    total.backward()
    for got in pool.run(F.gradient_accumulation, weights, x, y, timeout=100):
        assert not isinstance(got[0], str), got
        for ours, p in zip(got, model.parameters()):
            np.testing.assert_allclose(ours, p.grad.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.timeout(120)
def test_checkpoint_saved_on_2_loads_on_2_and_1(pool, data, tmp_path):
    weights, x, y = data
    path = str(tmp_path / "ckpt")
    saved = pool.run(F.save_checkpoint, weights, x, y, path, timeout=100)[0]
    assert saved["layouts"]["0.weight"] == "(Shard(dim=0),)" and saved["layouts"]["4.bias"] == "(Shard(dim=0),)"
    # the values are torch's after one Adam step
    model = _torch_model(weights)
    opt = torch.optim.Adam(model.parameters(), lr=0.05)
    torch.nn.functional.mse_loss(model(torch.tensor(x)), torch.tensor(y)).backward()
    opt.step()
    for (name, p), key in zip(model.named_parameters(), saved["model"]):
        assert name == key
        np.testing.assert_allclose(saved["model"][name], p.detach().numpy(), rtol=1e-10)
        np.testing.assert_allclose(saved["exp_avg"][name], opt.state[p]["exp_avg"].numpy(), rtol=1e-10)
    # 2 ranks: a fresh sharded model and optimizer, and other layouts
    for rank, got in enumerate(pool.run(F.load_checkpoint, weights, path, timeout=100)):
        assert got["epoch"] == 7 and got["step"] == 1
        for name in saved["model"]:
            np.testing.assert_array_equal(got["model"][name], saved["model"][name])
            np.testing.assert_array_equal(got["exp_avg"][name], saved["exp_avg"][name])
        local, placements = got["other"]["0.weight"]
        assert placements == "(Shard(dim=1),)"
        np.testing.assert_array_equal(local, np.split(saved["model"]["0.weight"], SIZE, axis=1)[rank])
        np.testing.assert_array_equal(got["other"]["2.weight"][0], saved["model"]["2.weight"])
    # 1 process, no process group: whole tensors, and an optimizer state keyed by parameter names
    import tidal.distributed.checkpoint as dcp
    from tidal.distributed.checkpoint.state_dict import get_state_dict, set_state_dict
    plain = F._model([w * 0 for w in weights])
    adam = tidal.optim.Adam(plain.parameters(), lr=0.05)
    model_sd, optim_sd = get_state_dict(plain, adam)
    state = {"model": model_sd, "optim": optim_sd, "epoch": 0}
    dcp.load(state, checkpoint_id=path)
    set_state_dict(plain, adam, model_state_dict=state["model"], optim_state_dict=state["optim"])
    assert state["epoch"] == 7
    for (name, p), q in zip(plain.named_parameters(), model.parameters()):
        np.testing.assert_array_equal(p.detach().numpy(), saved["model"][name])
        np.testing.assert_allclose(adam.state[p]["exp_avg"].numpy(), opt.state[q]["exp_avg"].numpy(), rtol=1e-10)


def test_checkpoint_errors(tmp_path):
    import tidal.distributed.checkpoint as dcp
    done = dcp.async_save({"w": tidal.ones(2, 3), "lr": 0.1, "betas": (0.9, 0.99)}, checkpoint_id=tmp_path)
    assert sorted(done.result().state_dict_metadata) == ["betas", "lr", "w"]
    state = {"w": tidal.zeros(2, 3), "lr": 1.0, "betas": (0.0, 0.0)}
    dcp.load(state, storage_reader=dcp.FileSystemReader(tmp_path))
    assert state["lr"] == 0.1 and state["betas"] == (0.9, 0.99) and state["w"].tolist() == [[1.0] * 3] * 2
    with pytest.raises(RuntimeError, match="Missing key in checkpoint state_dict: b."):
        dcp.load({"b": tidal.zeros(2)}, checkpoint_id=tmp_path)
    with pytest.raises(RuntimeError, match="Size mismatch"):
        dcp.load({"w": tidal.zeros(3, 2)}, checkpoint_id=tmp_path)
    with pytest.raises(TypeError, match="plain values"):
        dcp.save({"f": object()}, checkpoint_id=tmp_path / "x")
    with pytest.raises(RuntimeError, match="cannot both be None"):
        dcp.save({"w": tidal.ones(1)})
    with pytest.raises(FileNotFoundError, match="no distributed checkpoint"):
        dcp.load({"w": tidal.ones(1)}, checkpoint_id=tmp_path / "missing")


def test_fully_shard_errors():
    from tidal.distributed.fsdp import fully_shard
    with pytest.raises(ValueError, match="do not implement forward"):
        fully_shard(object())
    with pytest.raises(NotImplementedError, match="list of modules"):
        fully_shard([nn.Linear(2, 2)])


@pytest.mark.timeout(120)
def test_mixed_precision_policy(pool, data):
    weights, x, y = data
    model = _torch_model(weights)
    torch.nn.functional.mse_loss(model(torch.tensor(x)), torch.tensor(y)).backward()
    for got in pool.run(F.mixed_precision, weights, x, y, timeout=100):
        assert got["out_dtype"] == "tidal.float32"
        assert got["param_dtypes"] == got["grad_dtypes"] == ["tidal.float64"]   # shards and their grads keep theirs
        for ours, p in zip(got["grads"], model.parameters()):
            np.testing.assert_allclose(ours, p.grad.numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.timeout(120)
def test_explicit_prefetch_as_torch(pool, data):
    """set_modules_to_forward_prefetch / set_modules_to_backward_prefetch: the next layer is gathered before its
    forward starts, the previous layer's re-gather is issued before this layer's gradients are reduced; the
    training is torch's either way."""
    weights, x, y = data
    losses = _torch_training(weights, x, y, 3)[0]
    for got in pool.run(F.prefetching, weights, x, y, 3, timeout=100):
        for prefetch in (True, False):
            np.testing.assert_allclose(got[f"losses_{prefetch}"], losses, rtol=1e-10)
        assert got["seen_True"] == ["Tensor", "Tensor"]             # gathered by the layer before
        assert got["seen_False"] == ["GlobalParameter", "GlobalParameter"]

        def first(events, kind, layer):
            return events.index((kind, layer))
        with_, without = got["backward_True"], got["backward_False"]
        assert sorted(with_) == sorted(without)                      # the same collectives, once each
        # (the first layer's weight is not saved: its input needs no gradient, so nothing re-gathers it)
        assert first(with_, "gather", 1) < first(with_, "reduce", 2)
        assert first(without, "gather", 1) > first(without, "reduce", 2)
        assert got["error"].startswith("Expects FSDPModule but got <class ")


@pytest.fixture(scope="module")
def pool4():
    from comm_ranks import RankPool
    ranks = RankPool(4)
    yield ranks
    ranks.close()


def _torch_tp_reference(seed: int, steps: int) -> tuple:
    """Weights, data, and torch's losses and trained model for the MLP the 4-rank tests parallelize (one
    process, the whole batch)."""
    rng = np.random.default_rng(seed)
    weights = [rng.standard_normal(s) * 0.5 for s in [(8, 6), (8,), (3, 8), (3,)]]
    x, y = rng.standard_normal((4, 6)), rng.standard_normal((4, 3))
    model = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3)).double()
    with torch.no_grad():
        for p, w in zip(model.parameters(), weights):
            p.copy_(torch.tensor(w))
    opt = torch.optim.Adam(model.parameters(), lr=0.05)
    losses = []
    for _ in range(steps):
        loss = torch.nn.functional.mse_loss(model(torch.tensor(x)), torch.tensor(y))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return weights, x, y, losses, model


@pytest.mark.timeout(180)
def test_fully_shard_over_tensor_parallel_trains_like_torch(pool4):
    """2-D parallelism on 4 ranks: tensor parallel on mesh['tp'], FSDP over mesh['dp']; torch's losses and
    weights from one process on the whole batch."""
    weights, x, y, losses, model = _torch_tp_reference(4, 2)
    for rank, got in enumerate(pool4.run(F.fsdp_over_tensor_parallel, weights, x, y, 2, timeout=150)):
        tp, dp = rank % 2, rank // 2
        # the tp layout first, then FSDP's Shard(0) over dp of each tp-local tensor (torch.chunk's parts)
        assert got["layout"] == {
            "0.weight": (("tp", "dp"), ["Shard(dim=0)", "Shard(dim=0)"], (2, 6)),
            "0.bias": (("tp", "dp"), ["Shard(dim=0)", "Shard(dim=0)"], (2,)),
            "2.weight": (("tp", "dp"), ["Shard(dim=1)", "Shard(dim=0)"], ((2, 4), (1, 4))[dp]),
            "2.bias": (("tp", "dp"), ["Replicate()", "Shard(dim=0)"], ((2,), (1,))[dp])}, (rank, tp)
        np.testing.assert_allclose(got["losses"], losses, rtol=1e-10)
        for ours, p in zip(got["weights"], model.parameters()):
            np.testing.assert_allclose(ours, p.detach().numpy(), rtol=1e-8, atol=1e-10)


@pytest.mark.timeout(180)
@pytest.mark.parametrize("shape", [(2, 1, 2), (1, 2, 2)], ids=["replicas2", "shards2"])
def test_hsdp_over_tensor_parallel_trains_like_torch(pool4, shape, tmp_path):
    """3-D parallelism on 4 ranks: tensor parallel on mesh['tp'], HSDP over mesh['dp_replicate', 'dp_shard']
    (gradients reduce-scattered over the shards, all-reduced over the replicas); torch's losses and weights
    from one process on the whole batch, and the layout: the tp placement, Replicate, then FSDP's Shard(0)
    of each tp-local tensor over the shard ranks (torch.chunk's parts). A dcp checkpoint of the trained model
    and its state dict load into fresh models (dcp.load, then load_state_dict of DTensors)."""
    weights, x, y, losses, model = _torch_tp_reference(5, 2)
    replicas, shards, _ = shape
    for rank, got in enumerate(pool4.run(F.hsdp_over_tensor_parallel, weights, x, y, 2, shape, str(tmp_path),
                                              timeout=150)):
        shard = (rank // 2) % shards
        names = ("tp", "dp_replicate", "dp_shard")
        tp_local = {"0.weight": (4, 6), "0.bias": (4,), "2.weight": (3, 4), "2.bias": (3,)}
        for name, (mesh_names, placements, local) in got["layout"].items():
            whole = tp_local[name]
            part = torch.zeros(whole).chunk(shards, 0)
            assert mesh_names == names and placements[1:] == ["Replicate()", "Shard(dim=0)"], (rank, name)
            assert local == (tuple(part[shard].shape) if shard < len(part) else (0,) + whole[1:]), (rank, name)
        assert [got["layout"][n][1][0] for n in tp_local] == ["Shard(dim=0)", "Shard(dim=0)", "Shard(dim=1)",
                                                               "Replicate()"]
        np.testing.assert_allclose(got["losses"], losses, rtol=1e-10)
        for ours, resumed, copied, p in zip(got["weights"], got["resumed"], got["copied"], model.parameters()):
            np.testing.assert_allclose(ours, p.detach().numpy(), rtol=1e-8, atol=1e-10)
            np.testing.assert_array_equal(resumed, ours)
            np.testing.assert_array_equal(copied, ours)


@pytest.mark.timeout(120)
def test_forward_method_and_explicit_unshard(pool, data):
    weights, x, _ = data
    model = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.Tanh(), torch.nn.Linear(8, 4), torch.nn.Tanh(),
                                torch.nn.Linear(4, 3)).double()
    with torch.no_grad():
        for p, w in zip(model.parameters(), weights):
            p.copy_(torch.tensor(w))
    xt = torch.tensor(x)
    score = torch.tanh(xt @ model[0].weight.t() + model[0].bias).sum(1) * 2.0
    score.sum().backward()
    want_score, want_grad = score.detach().numpy(), model[0].weight.grad.numpy()
    for got in pool.run(F.forward_method_and_unshard, weights, x, timeout=100):
        np.testing.assert_allclose(got["score"], want_score, rtol=1e-12)
        np.testing.assert_allclose(got["grad"], want_grad, rtol=1e-12)   # every rank had the same x: the mean
        assert got["after"] == "GlobalParameter"   # resharded after the method, as after forward
        np.testing.assert_allclose(got["forward"], model(xt).detach().numpy(), rtol=1e-12)
        assert got["handle"] and got["gathers"] == len(weights)   # forward used the explicit unshard's gathers
        assert got["plain_unchanged"]
        assert got["missing"].endswith("does not have a method decode")

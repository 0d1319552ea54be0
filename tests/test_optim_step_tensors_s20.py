"""Optimizer step counts as torch keeps them: `state['step']` is a 0-d tensor of the scalar dtype (SparseAdam: an
int), a user's write into it or a loaded state dict changes the count the next step uses, a state dict shares the
optimizer's own tensors, and a step still never waits for the device."""
import copy
import io

import numpy as np
import pytest
import torch

import tidal
import tidal.compat as ttorch

COUNTED = {
    "Adam": dict(lr=0.1), "AdamW": dict(lr=0.1), "Adamax": dict(lr=0.1), "NAdam": dict(lr=0.1),
    "RAdam": dict(lr=0.1), "ASGD": dict(lr=0.1, t0=2), "Adagrad": dict(lr=0.1, lr_decay=0.5),
    "Adadelta": dict(lr=0.5), "Rprop": dict(lr=0.1), "RMSprop": dict(lr=0.1), "Adafactor": dict(lr=0.1),
}


def _pair(name, shapes=((3, 4), (5,)), seed=0, **overrides):
    """The same parameters and optimizer in torch and in tidal.compat."""
    rng = np.random.default_rng(seed)
    values = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    kw = {**COUNTED[name], **overrides}
    out = []
    for lib in (torch, ttorch):
        params = [lib.nn.Parameter(lib.tensor(v)) for v in values]
        out.append((params, getattr(lib.optim, name)(params, **kw)))
    return out


def _grads(pairs, seed):
    rng = np.random.default_rng(100 + seed)
    grads = [rng.standard_normal(tuple(p.shape)).astype(np.float32) for p in pairs[0][0]]
    for lib, (params, _) in zip((torch, ttorch), pairs):
        for p, g in zip(params, grads):
            p.grad = lib.tensor(g)


def _step(pairs, seed):
    _grads(pairs, seed)
    for _, opt in pairs:
        opt.step()


def _same_params(pairs, rtol=1e-5, atol=1e-6):
    for want, got in zip(pairs[0][0], pairs[1][0]):
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=rtol, atol=atol)


@pytest.mark.parametrize("name", list(COUNTED))
def test_step_is_a_0d_scalar_tensor_as_torch(name):
    pairs = _pair(name)
    for k in range(3):
        _step(pairs, k)
    (tp, topt), (p, opt) = pairs
    want, got = topt.state[tp[0]]["step"], opt.state[p[0]]["step"]
    assert isinstance(got, ttorch.Tensor) and torch.is_tensor(want)
    assert tuple(got.shape) == tuple(want.shape) == ()
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1] == "float32"
    assert got.item() == want.item() == 3.0
    _same_params(pairs)


def test_sparse_adam_keeps_an_int_count_as_torch():
    counts = []
    for lib in (torch, ttorch):
        p = lib.nn.Parameter(lib.ones(4))
        opt = lib.optim.SparseAdam([p], lr=0.1)
        p.grad = lib.ones(4).to_sparse()
        opt.step()
        counts.append(opt.state[p]["step"])
    assert type(counts[0]) is type(counts[1]) is int and counts[0] == counts[1] == 1


@pytest.mark.parametrize("write", ["fill_", "iadd", "copy_", "replace"])
@pytest.mark.parametrize("name", ["Adam", "NAdam", "RAdam", "Adagrad", "ASGD"])
def test_a_written_step_changes_the_next_update(name, write):
    pairs = _pair(name)
    _step(pairs, 0)
    for lib, (params, opt) in zip((torch, ttorch), pairs):
        state = opt.state[params[0]]
        if write == "fill_":
            state["step"].fill_(40)
        elif write == "iadd":
            state["step"] += 39
        elif write == "copy_":
            state["step"].copy_(lib.tensor(40.0))
        else:
            state["step"] = lib.tensor(40.0)
    _step(pairs, 1)
    (tp, topt), (p, opt) = pairs
    assert opt.state[p[0]]["step"].item() == topt.state[tp[0]]["step"].item() == 41.0
    assert opt.state[p[1]]["step"].item() == topt.state[tp[1]]["step"].item() == 2.0
    _same_params(pairs)


def test_a_kept_state_dict_sees_later_steps():
    pairs = _pair("Adam")
    _step(pairs, 0)
    dicts = [opt.state_dict() for _, opt in pairs]
    for k in (1, 2):
        _step(pairs, k)
    assert dicts[1]["state"][0]["step"].item() == dicts[0]["state"][0]["step"].item() == 3.0
    assert dicts[1]["state"][0]["step"] is pairs[1][1].state[pairs[1][0][0]]["step"]


@pytest.mark.parametrize("name", ["Adam", "Adagrad", "Rprop", "NAdam", "ASGD"])
def test_a_loaded_state_dict_shares_its_step_tensors_as_torch(name):
    """torch's load_state_dict keeps the dict's own step tensors: the loaded optimizer counts on in them, so the
    original optimizer's counts move too, and its next update uses them."""
    first = _pair(name)
    _step(first, 0)
    second = _pair(name, seed=1)
    for (_, opt), (_, other) in zip(first, second):
        other.load_state_dict(opt.state_dict())
    _step(second, 1)
    _step(second, 2)
    (tp, topt), (p, opt) = first
    assert opt.state[p[0]]["step"].item() == topt.state[tp[0]]["step"].item() == 3.0
    assert second[1][1].state[second[1][0][0]]["step"] is opt.state[p[0]]["step"]
    _step(first, 3)  # the original steps on from the shared count
    assert opt.state[p[0]]["step"].item() == topt.state[tp[0]]["step"].item() == 4.0
    _same_params(first)
    _same_params(second)


def test_a_saved_and_loaded_state_dict_continues_the_count():
    pairs = _pair("AdamW")
    for k in range(2):
        _step(pairs, k)
    fresh = _pair("AdamW")
    for lib, (_, opt), (_, other) in zip((torch, ttorch), pairs, fresh):
        buf = io.BytesIO()
        lib.save(opt.state_dict(), buf)
        buf.seek(0)
        other.load_state_dict(lib.load(buf))
    for (params, _), (fresh_params, _) in zip(pairs, fresh):
        with (torch if params is pairs[0][0] else ttorch).no_grad():
            for a, b in zip(fresh_params, params):
                a.copy_(b)
    _step(fresh, 2)
    (tp, topt), (p, opt) = fresh
    assert opt.state[p[0]]["step"].item() == topt.state[tp[0]]["step"].item() == 3.0
    _same_params(fresh)


def test_a_count_saved_as_a_number_becomes_a_tensor_as_torch():
    pairs = _pair("Adam")
    _step(pairs, 0)
    for _, opt in pairs:
        sd = copy.deepcopy(opt.state_dict())
        for state in sd["state"].values():
            state["step"] = 7.0  # an old checkpoint's count
        opt.load_state_dict(sd)
    (tp, topt), (p, opt) = pairs
    assert torch.is_tensor(topt.state[tp[0]]["step"]) and isinstance(opt.state[p[0]]["step"], ttorch.Tensor)
    _step(pairs, 1)
    assert opt.state[p[0]]["step"].item() == topt.state[tp[0]]["step"].item() == 8.0
    _same_params(pairs)


def test_float64_default_dtype_counts_in_float64():
    old = (torch.get_default_dtype(), ttorch.get_default_dtype())
    torch.set_default_dtype(torch.float64)
    ttorch.set_default_dtype(ttorch.float64)
    try:
        dtypes = []
        for lib in (torch, ttorch):
            p = lib.nn.Parameter(lib.ones(3))
            opt = lib.optim.Adam([p])
            p.grad = lib.ones(3)
            opt.step()
            dtypes.append(str(opt.state[p]["step"].dtype).split(".")[-1])
        assert dtypes == ["float64", "float64"]
    finally:
        torch.set_default_dtype(old[0])
        ttorch.set_default_dtype(old[1])


def test_a_float32_count_stops_at_2_to_the_24_as_torch():
    pairs = _pair("Adam")
    _step(pairs, 0)
    for params, opt in pairs:
        opt.state[params[0]]["step"].fill_(2.0 ** 24)
    _step(pairs, 1)
    (tp, topt), (p, opt) = pairs
    assert opt.state[p[0]]["step"].item() == topt.state[tp[0]]["step"].item() == 2.0 ** 24
    _same_params(pairs)


@pytest.mark.parametrize("name", ["Adam", "NAdam", "ASGD", "Adagrad"])
def test_steps_do_not_read_the_counts_back(name, monkeypatch):
    """The counts are mirrored on the host: after the first step no step reads a tensor back (no .item())."""
    _, (params, opt) = _pair(name)
    for p in params:
        p.grad = ttorch.ones(p.shape)
    opt.step()
    reads = []
    real_item = tidal.Tensor.item
    monkeypatch.setattr(tidal.Tensor, "item", lambda self: reads.append(self) or real_item(self))
    for _ in range(3):
        opt.step()
    assert reads == []
    opt.state[params[0]]["step"].fill_(10)  # a user's write: read once, then mirrored again
    opt.step()
    opt.step()
    assert len(reads) == 1
    monkeypatch.undo()
    assert opt.state[params[0]]["step"].item() == 12.0 and opt.state[params[1]]["step"].item() == 6.0


@pytest.mark.parametrize("name,keys", [("NAdam", ("mu_product",)), ("ASGD", ("eta", "mu"))])
def test_other_scalar_state_is_0d_tensors_as_torch(name, keys):
    pairs = _pair(name)
    for k in range(3):
        _step(pairs, k)
    (tp, topt), (p, opt) = pairs
    for key in keys:
        want, got = topt.state[tp[0]][key], opt.state[p[0]][key]
        assert isinstance(got, ttorch.Tensor) and tuple(got.shape) == ()
        assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
        assert got.item() == want.item()
    for params, opt in pairs:  # a user's write changes the next update
        for key in keys:
            opt.state[params[0]][key].mul_(0.5)
    _step(pairs, 3)
    _same_params(pairs)


def test_nadam_state_loaded_into_float64_parameters_as_torch():
    """torch loads mu_product in the parameter's dtype (a float64 copy) and keeps the step tensor as it is."""
    pairs = _pair("NAdam")
    _step(pairs, 0)
    results = []
    for lib, (params, opt) in zip((torch, ttorch), pairs):
        doubles = [lib.nn.Parameter(p.detach().double()) for p in params]
        other = lib.optim.NAdam(doubles, lr=0.1)
        sd = opt.state_dict()
        other.load_state_dict(sd)
        state = other.state[doubles[0]]
        results.append((str(state["mu_product"].dtype).split(".")[-1], str(state["step"].dtype).split(".")[-1],
                        state["step"] is sd["state"][0]["step"], state["mu_product"] is sd["state"][0]["mu_product"]))
        for p, q in zip(doubles, params):
            p.grad = q.grad.double()
        other.step()
        results.append([p.detach().numpy().round(6).tolist() for p in doubles])
        results.append(state["mu_product"].item())
    assert results[3:5] == results[0:2]
    assert abs(results[5] - results[2]) < 1e-12

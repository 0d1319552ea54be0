"""NAdam, RAdam, Adamax, ASGD, Rprop, Adafactor and SparseAdam against torch.optim: same parameters and
gradients, parameters and state compared every step, state dicts exchanged both ways."""
from __future__ import annotations

import copy
import re

import numpy as np
import pytest
import torch

import tidal
import tidal.optim as optim
from tidal.optim import foreach as foreach_module

# a matrix, a vector, a scalar, a transposed (non-contiguous) matrix, a stack of matrices
SHAPES = [(3, 4), (5,), (), (4, 3), (2, 3, 4)]
TOL = {"float64": dict(rtol=1e-11, atol=1e-13), "float32": dict(rtol=2e-5, atol=2e-6)}

CONFIGS = {
    "NAdam": [dict(), dict(lr=0.01, weight_decay=0.1), dict(weight_decay=0.2, decoupled_weight_decay=True),
              dict(momentum_decay=0.1, betas=(0.5, 0.7), eps=1e-3, maximize=True),
              dict(foreach=True, capturable=False, differentiable=False)],
    "RAdam": [dict(), dict(lr=0.05, weight_decay=0.1), dict(weight_decay=0.2, decoupled_weight_decay=True),
              dict(betas=(0.5, 0.6), eps=1e-3, maximize=True), dict(foreach=False)],
    "Adamax": [dict(), dict(weight_decay=0.1), dict(lr=0.05, betas=(0.5, 0.8), eps=0.1, maximize=True)],
    "ASGD": [dict(), dict(lr=0.1, t0=3), dict(lr=0.05, lambd=0.1, alpha=0.5, t0=2, weight_decay=0.1, maximize=True)],
    "Rprop": [dict(), dict(lr=0.1, etas=(0.3, 1.7), step_sizes=(0.05, 0.2)), dict(maximize=True, foreach=True)],
    "Adafactor": [dict(), dict(lr=0.1, weight_decay=0.1),
                  dict(eps=(1e-3, 1e-2), d=1.5, beta2_decay=-0.5, maximize=True)],
}
CASES = [(name, kw) for name, configs in CONFIGS.items() for kw in configs]
SCALAR_STATE = ("step", "mu_product", "eta", "mu")


def _case_id(case) -> str:
    name, kw = case
    return name + "-" + "-".join(f"{k}={v}" for k, v in kw.items())


def _leaf(lib, arr: np.ndarray, transposed: bool):
    t = lib.tensor(arr.T.copy() if transposed else arr)
    return (t.t() if transposed else t).requires_grad_()


def _param_pair(dtype: str, seed: int = 0):
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(s).astype(dtype) for s in SHAPES]
    return ([_leaf(tidal, a, i == 3) for i, a in enumerate(arrays)],
            [_leaf(torch, a, i == 3) for i, a in enumerate(arrays)])


def _set_grads(params_lists, rng, dtype: str, step: int) -> None:
    """The same gradients for every list of parameters (tidal or torch); some entries are skipped or zero."""
    for i, p in enumerate(params_lists[0]):
        if i == 2 and step % 3 == 1:  # a parameter without gradient this step is skipped
            for params in params_lists:
                params[i].grad = None
            continue
        g = (rng.standard_normal(tuple(p.shape)) * (1 + step)).astype(dtype)
        if i == 1 and step % 2 == 1:
            g[::2] = 0  # zero gradients (Rprop's sign logic, Adamax's eps floor)
        for params in params_lists:
            lib = torch if isinstance(params[i], torch.Tensor) else tidal
            params[i].grad = lib.tensor(g.T.copy()).t() if i == 3 else lib.tensor(g)


def _close(ours, theirs, tol, what: str = "") -> None:
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), err_msg=what, **tol)


def _assert_state_matches(opt, topt, ours, theirs, tol) -> None:
    for p, q in zip(ours, theirs):
        expected, got = topt.state.get(q, {}), opt.state.get(p, {})
        assert set(got) == set(expected)
        for key, value in expected.items():
            if key in SCALAR_STATE:  # host numbers, equal to torch's scalar tensors
                assert got[key] == float(value), key
            else:
                _close(got[key], value, tol, key)


# every configuration in float64; float32 for one configuration per optimizer (its update runs the same code)
DTYPE_CASES = [(case, "float64") for case in CASES] + [((n, CONFIGS[n][1]), "float32") for n in CONFIGS]


@pytest.mark.parametrize("case, dtype", DTYPE_CASES, ids=lambda v: v if isinstance(v, str) else _case_id(v))
def test_matches_torch(case, dtype):
    name, kw = case
    ours, theirs = _param_pair(dtype)
    opt, topt = getattr(optim, name)(ours, **kw), getattr(torch.optim, name)(theirs, **kw)
    rng = np.random.default_rng(1)
    for step in range(6):
        _set_grads([ours, theirs], rng, dtype, step)
        opt.step()
        topt.step()
        for p, q in zip(ours, theirs):
            _close(p, q, TOL[dtype], f"step {step}")
            assert p.dtype == getattr(tidal, dtype)
        _assert_state_matches(opt, topt, ours, theirs, TOL[dtype])


@pytest.mark.parametrize("case", [(n, CONFIGS[n][-1]) for n in CONFIGS], ids=_case_id)
def test_tensor_path_matches_torch(case, monkeypatch):
    """Where the multi-tensor kernel does not apply, the same function runs on the tensors."""
    monkeypatch.setattr(foreach_module, "_DTYPES", ())
    name, kw = case
    ours, theirs = _param_pair("float64", seed=5)
    opt, topt = getattr(optim, name)(ours, **kw), getattr(torch.optim, name)(theirs, **kw)
    rng = np.random.default_rng(6)
    for step in range(4):
        _set_grads([ours, theirs], rng, "float64", step)
        opt.step()
        topt.step()
    for p, q in zip(ours, theirs):
        _close(p, q, TOL["float64"])
    _assert_state_matches(opt, topt, ours, theirs, TOL["float64"])


def test_param_groups_with_their_own_hyperparameters():
    ours, theirs = _param_pair("float64")
    for name, extra in [("NAdam", dict(momentum_decay=0.05)), ("RAdam", dict(betas=(0.5, 0.9))),
                        ("ASGD", dict(t0=2, lr=0.2)), ("Rprop", dict(etas=(0.4, 1.1))), ("Adafactor", dict(d=2.0))]:
        def groups(params):
            return [{"params": params[:2], "lr": 0.05, **extra}, {"params": params[2:]}]
        mine, theirs_ = [p.detach().clone().requires_grad_() for p in ours], \
            [q.detach().clone().requires_grad_() for q in theirs]
        opt, topt = getattr(optim, name)(groups(mine), lr=0.01), getattr(torch.optim, name)(groups(theirs_), lr=0.01)
        assert opt.state_dict()["param_groups"] == topt.state_dict()["param_groups"]
        rng = np.random.default_rng(2)
        for step in range(4):
            _set_grads([mine, theirs_], rng, "float64", step)
            opt.step()
            topt.step()
        for p, q in zip(mine, theirs_):
            _close(p, q, TOL["float64"], name)


def _to_torch(value):
    if isinstance(value, tidal.Tensor):
        return torch.from_numpy(value.numpy().copy())
    if isinstance(value, dict):
        return {k: _to_torch(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_to_torch(v) for v in value]
    return value


def _to_tidal(value):
    if isinstance(value, torch.Tensor):
        return tidal.tensor(value.numpy())
    if isinstance(value, dict):
        return {k: _to_tidal(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_to_tidal(v) for v in value]
    return value


@pytest.mark.parametrize("case", [(n, CONFIGS[n][1]) for n in CONFIGS], ids=_case_id)
def test_state_dicts_cross_load_with_torch(case):
    name, kw = case
    ours, theirs = _param_pair("float64")
    opt, topt = getattr(optim, name)(ours, **kw), getattr(torch.optim, name)(theirs, **kw)
    rng = np.random.default_rng(3)
    for step in range(4):
        _set_grads([ours, theirs], rng, "float64", step)
        opt.step()
        topt.step()
    sd, tsd = opt.state_dict(), topt.state_dict()
    assert sd["param_groups"] == tsd["param_groups"]  # key names and values, exactly
    assert set(sd["state"]) == set(tsd["state"])
    for index, state in tsd["state"].items():
        assert set(sd["state"][index]) == set(state)

    # tidal continues from torch's state dict, torch from tidal's and from its own: the loaded ones continue as
    # torch's own reload does (torch loads NAdam's mu_product and ASGD's eta and mu in the parameter's dtype, float64
    # here, where its own optimizer kept float32), the others as each other
    from_torch = [tidal.tensor(q.detach().numpy()).requires_grad_() for q in theirs]
    loaded = getattr(optim, name)(from_torch, **kw)
    loaded.load_state_dict(_to_tidal(copy.deepcopy(tsd)))
    _assert_state_matches(loaded, topt, from_torch, theirs, TOL["float64"])
    from_ours = [torch.tensor(p.detach().numpy()).requires_grad_() for p in ours]
    tloaded = getattr(torch.optim, name)(from_ours, **kw)
    tloaded.load_state_dict(_to_torch(copy.deepcopy(sd)))
    reloaded = [torch.tensor(q.detach().numpy()).requires_grad_() for q in theirs]
    treloaded = getattr(torch.optim, name)(reloaded, **kw)
    treloaded.load_state_dict(copy.deepcopy(tsd))
    for step in range(4, 8):
        _set_grads([ours, theirs, from_torch, from_ours, reloaded], rng, "float64", step)
        for o in (opt, topt, loaded, tloaded, treloaded):
            o.step()
    for p, q, a, b, r in zip(ours, theirs, from_torch, from_ours, reloaded):
        _close(p, q, TOL["float64"])
        _close(a, r, TOL["float64"])
        _close(b, r, TOL["float64"])


def _torch_error(fn):
    try:
        fn()
    except Exception as exc:  # noqa: BLE001 - whatever torch raises
        return exc
    raise AssertionError("torch raised nothing")


@pytest.mark.parametrize("name, kw", [
    ("NAdam", dict(lr=-1.0)), ("NAdam", dict(betas=(1.0, 0.9))), ("NAdam", dict(momentum_decay=-0.1)),
    ("NAdam", dict(weight_decay=-1.0)), ("RAdam", dict(eps=-1.0)), ("RAdam", dict(betas=(0.9, 1.5))),
    ("Adamax", dict(lr=-0.1)), ("Adamax", dict(weight_decay=-0.1)), ("ASGD", dict(lr=-0.1)),
    ("ASGD", dict(weight_decay=-0.1)), ("Rprop", dict(lr=-0.1)), ("Rprop", dict(etas=(1.5, 2.0))),
    ("Rprop", dict(etas=(0.5, 0.9))), ("Adafactor", dict(lr=-0.1)), ("Adafactor", dict(beta2_decay=0.5)),
    ("Adafactor", dict(eps=(-1.0, 1e-3))), ("Adafactor", dict(eps=(None, -1.0))), ("Adafactor", dict(d=0.5)),
    ("Adafactor", dict(weight_decay=-0.1)), ("SparseAdam", dict(lr=0.0)), ("SparseAdam", dict(eps=0.0)),
    ("SparseAdam", dict(betas=(0.9, 1.0))),
])
def test_invalid_hyperparameters(name, kw):
    expected = _torch_error(lambda: getattr(torch.optim, name)([torch.zeros(2, requires_grad=True)], **kw))
    with pytest.raises(type(expected), match=re.escape(str(expected))):
        getattr(optim, name)([tidal.zeros(2, requires_grad=True)], **kw)


def test_repr_matches_torch():
    for name in list(CONFIGS) + ["SparseAdam"]:
        ours = getattr(optim, name)([tidal.zeros(2, requires_grad=True)])
        theirs = getattr(torch.optim, name)([torch.zeros(2, requires_grad=True)])
        assert repr(ours) == repr(theirs)


def test_sparse_adam_refuses_dense_gradients_and_loads_torch_state():
    emb = torch.nn.Embedding(6, 3, sparse=True, dtype=torch.float64)
    topt = torch.optim.SparseAdam(emb.parameters(), lr=0.1, betas=(0.8, 0.9))
    emb(torch.tensor([1, 4])).sum().backward()
    topt.step()
    weight = tidal.tensor(emb.weight.detach().numpy()).requires_grad_()
    opt = optim.SparseAdam([weight], lr=0.1, betas=(0.8, 0.9))
    opt.load_state_dict(_to_tidal(copy.deepcopy(topt.state_dict())))
    assert opt.state_dict()["param_groups"] == topt.state_dict()["param_groups"]
    state, tstate = opt.state[weight], topt.state[emb.weight]
    assert state["step"] == tstate["step"] == 1
    _close(state["exp_avg"], tstate["exp_avg"], TOL["float64"])
    q = torch.zeros(2, requires_grad=True)
    q.grad = torch.ones(2)
    expected = _torch_error(torch.optim.SparseAdam([q]).step)
    weight.grad = tidal.ones(6, 3, dtype=tidal.float64)
    with pytest.raises(type(expected), match=re.escape(str(expected))):
        opt.step()


@pytest.mark.parametrize("name", list(CONFIGS))
def test_step_never_waits_for_the_device(name):
    ours, _ = _param_pair("float32")
    for p in ours:
        p.grad = tidal.ones(p.shape)
    opt = getattr(optim, name)(ours, **CONFIGS[name][-1])
    opt.step()  # state creation happens here
    tidal.sync()
    vm = tidal.vm.get_vm(tidal.device("cpu"))
    vm.stats.reset()
    opt.step()
    assert vm.stats.syncs == 0
    tidal.sync()
    if tidal.vm.get_mode() == "async" and tidal.vm.get_fusion()["enabled"]:
        # one multi-tensor kernel per group (Adafactor: one for factored parameters, one for the rest), and one
        # that writes the group's 0-d state tensors (counts, NAdam's mu_product; ASGD's eta and mu after the update)
        assert vm.stats.kernels == (2 if name == "Adafactor" else 1) + (2 if name == "ASGD" else 1)


FLAGS = ("foreach", "maximize", "differentiable", "capturable", "decoupled_weight_decay")


@pytest.mark.parametrize("name", list(CONFIGS))
def test_unpickling_an_older_optimizer_restores_its_flags_as_torch(name):
    """An optimizer pickled before its flags existed: unpickling gives its groups torch's values for them, in
    torch's order, and keeps step counts saved as tensors (a number becomes torch's 0-d tensor)."""
    ours, theirs = _param_pair("float64")
    groups = []
    for lib, params in ((tidal, ours), (torch, theirs)):
        opt = getattr(lib.optim, name)(params)
        _set_grads([params], np.random.default_rng(2), "float64", 0)
        opt.step()
        state = copy.copy(opt.__getstate__())
        state["param_groups"] = [{k: v for k, v in g.items() if k not in FLAGS} for g in opt.param_groups]
        for per_param in opt.state.values():
            per_param["step"] = lib.tensor(float(per_param["step"]))
        old = type(opt).__new__(type(opt))
        old.__setstate__(state)
        groups.append([[(k, v) for k, v in g.items() if k != "params"] for g in old.param_groups])
        if lib is tidal:
            assert all(isinstance(s["step"], tidal.Tensor) and s["step"].item() == 1.0 for s in old.state.values())
    assert groups[0] == groups[1]


def test_compat_exposes_the_optimizers():
    import tidal.compat as ttorch
    from tidal.compat._importer import target_name
    for name in list(CONFIGS) + ["SparseAdam", "Muon"]:
        assert getattr(ttorch.optim, name) is getattr(optim, name)
    assert ttorch.optim.swa_utils.AveragedModel is optim.swa_utils.AveragedModel
    assert target_name("torch.optim.swa_utils") == "tidal.optim.swa_utils"



# -- Muon (2-D parameters only) -----------------------------------------------------------------------
MUON_CONFIGS = [dict(), dict(nesterov=False, lr=0.02, weight_decay=0.0),
                dict(adjust_lr_fn="match_rms_adamw", momentum=0.5),
                dict(ns_steps=3, ns_coefficients=(2.0, -1.5, 0.5), eps=1e-3, adjust_lr_fn="original")]


def _muon_pair(dtype: str, seed: int = 0):
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(s).astype(dtype) for s in [(3, 5), (6, 2), (4, 4)]]
    return ([_leaf(tidal, a, i == 2) for i, a in enumerate(arrays)],
            [_leaf(torch, a, i == 2) for i, a in enumerate(arrays)])


def _set_matrix_grads(params_lists, rng, dtype: str) -> None:
    for i, p in enumerate(params_lists[0]):
        g = rng.standard_normal(tuple(p.shape)).astype(dtype)
        for params in params_lists:
            params[i].grad = (torch if isinstance(params[i], torch.Tensor) else tidal).tensor(g)


@pytest.mark.parametrize("kw, dtype", [(kw, "float64") for kw in MUON_CONFIGS] + [(MUON_CONFIGS[0], "float32")],
                         ids=str)
def test_muon_matches_torch(kw, dtype):
    ours, theirs = _muon_pair(dtype)
    opt, topt = optim.Muon(ours, **kw), torch.optim.Muon(theirs, **kw)
    rng = np.random.default_rng(1)
    for step in range(4):
        _set_matrix_grads([ours, theirs], rng, dtype)
        opt.step()
        topt.step()
        for p, q in zip(ours, theirs):
            _close(p, q, TOL[dtype], f"step {step}")
        _assert_state_matches(opt, topt, ours, theirs, TOL[dtype])
    # state dicts cross-load: tidal continues from torch's, torch from tidal's
    sd, tsd = opt.state_dict(), topt.state_dict()
    assert sd["param_groups"] == tsd["param_groups"] and set(sd["state"][0]) == set(tsd["state"][0])
    from_torch = [tidal.tensor(q.detach().numpy()).requires_grad_() for q in theirs]
    loaded = optim.Muon(from_torch, **kw)
    loaded.load_state_dict(_to_tidal(copy.deepcopy(tsd)))
    from_ours = [torch.tensor(p.detach().numpy()).requires_grad_() for p in ours]
    tloaded = torch.optim.Muon(from_ours, **kw)
    tloaded.load_state_dict(_to_torch(copy.deepcopy(sd)))
    _set_matrix_grads([theirs, from_torch, from_ours], rng, dtype)
    topt.step()
    loaded.step()
    tloaded.step()
    for q, a, b in zip(theirs, from_torch, from_ours):
        _close(a, q, TOL[dtype])
        _close(b, q, TOL[dtype])


@pytest.mark.parametrize("kw", [dict(lr=-1.0), dict(momentum=-0.1), dict(weight_decay=-0.1),
                                dict(adjust_lr_fn="sqrt")], ids=str)
def test_muon_errors(kw):
    expected = _torch_error(lambda: torch.optim.Muon([torch.zeros(2, 2, requires_grad=True)], **kw))
    with pytest.raises(type(expected), match=re.escape(str(expected))):
        optim.Muon([tidal.zeros(2, 2, requires_grad=True)], **kw)
    with pytest.raises(ValueError, match=re.escape("Muon only supports 2D parameters whereas we found a parameter "
                                                   "with size: tidal.Size([3])")):
        optim.Muon([tidal.zeros(2, 2, requires_grad=True), tidal.zeros(3, requires_grad=True)])
    assert repr(optim.Muon([tidal.zeros(2, 2, requires_grad=True)])) == \
        repr(torch.optim.Muon([torch.zeros(2, 2, requires_grad=True)]))


# -- swa_utils ----------------------------------------------------------------------------------------
swa, tswa = optim.swa_utils, torch.optim.swa_utils


def _model_pair(seed: int = 0):
    """The same small model with batch norm in tidal and torch (float64)."""
    torch.manual_seed(seed)
    theirs = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4), torch.nn.ReLU(),
                                 torch.nn.Linear(4, 2)).double()
    ours = tidal.nn.Sequential(tidal.nn.Linear(3, 4), tidal.nn.BatchNorm1d(4), tidal.nn.ReLU(),
                               tidal.nn.Linear(4, 2)).double()
    ours.load_state_dict(_to_tidal(dict(theirs.state_dict())))
    return ours, theirs


def _perturb(ours, theirs, rng) -> None:
    """A 'training step': new parameter values and new batch-norm statistics, the same in both."""
    with torch.no_grad(), tidal.no_grad():
        x = rng.standard_normal((5, 3))
        ours.train()(tidal.tensor(x))
        theirs.train()(torch.tensor(x))
        for p, q in zip(ours.parameters(), theirs.parameters()):
            step = rng.standard_normal(tuple(q.shape)) * 0.1
            p.add_(tidal.tensor(step))
            q.add_(torch.tensor(step))


def _assert_modules_match(ours, theirs) -> None:
    sd, tsd = ours.state_dict(), theirs.state_dict()
    assert list(sd) == list(tsd)
    for key, value in tsd.items():
        assert sd[key].dtype == getattr(tidal, str(value.dtype).split(".")[1]), key
        _close(sd[key], value, TOL["float64"], key)


@pytest.mark.parametrize("how", ["swa", "swa-buffers", "ema-avg_fn", "ema-multi-buffers", "swa-multi"])
def test_averaged_model_matches_torch(how):
    ours, theirs = _model_pair()
    kw = {"swa": {}, "swa-buffers": dict(use_buffers=True), "swa-multi": "multi_swa",
          "ema-avg_fn": "ema", "ema-multi-buffers": "multi_ema"}[how]

    def make(lib, model):
        utils = swa if lib is tidal else tswa
        extra = {"multi_swa": dict(multi_avg_fn=utils.get_swa_multi_avg_fn()),
                 "ema": dict(avg_fn=utils.get_ema_avg_fn(0.9)),
                 "multi_ema": dict(multi_avg_fn=utils.get_ema_multi_avg_fn(0.8), use_buffers=True)}
        return utils.AveragedModel(model, **(extra[kw] if isinstance(kw, str) else kw))
    averaged, taveraged = make(tidal, ours), make(torch, theirs)
    rng = np.random.default_rng(7)
    for _ in range(4):
        _perturb(ours, theirs, rng)
        averaged.update_parameters(ours)
        taveraged.update_parameters(theirs)
        _assert_modules_match(averaged, taveraged)
    assert int(averaged.n_averaged) == 4
    x = rng.standard_normal((2, 3))
    _close(averaged.eval()(tidal.tensor(x)), taveraged.eval()(torch.tensor(x)), TOL["float64"])


def test_multi_avg_fns_on_lists():
    rng = np.random.default_rng(8)
    a, b = rng.standard_normal((2, 4, 3))
    for count in (2, torch.tensor(2)):  # a tensor count gives a weight in the default dtype, as in torch
        for ours_fn, torch_fn in [(swa.get_swa_multi_avg_fn(), tswa.get_swa_multi_avg_fn()),
                                  (swa.get_ema_multi_avg_fn(0.7), tswa.get_ema_multi_avg_fn(0.7))]:
            mine, theirs = [tidal.tensor(a)], [torch.tensor(a)]
            ours_fn(mine, [tidal.tensor(b)], tidal.tensor(2) if isinstance(count, torch.Tensor) else count)
            torch_fn(theirs, [torch.tensor(b)], count)
            np.testing.assert_allclose(mine[0].numpy(), theirs[0].numpy(), rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(swa.get_swa_avg_fn()(tidal.tensor(a), tidal.tensor(b), 3).numpy(),
                               tswa.get_swa_avg_fn()(torch.tensor(a), torch.tensor(b), 3).numpy(), rtol=1e-15)
    for make in ("get_ema_multi_avg_fn", "get_ema_avg_fn"):
        expected = _torch_error(lambda: getattr(tswa, make)(1.5))
        with pytest.raises(type(expected), match=re.escape(str(expected))):
            getattr(swa, make)(1.5)
    with pytest.raises(AssertionError, match="Only one of avg_fn and multi_avg_fn should be provided"):
        swa.AveragedModel(tidal.nn.Linear(2, 2), avg_fn=swa.get_swa_avg_fn(),
                          multi_avg_fn=swa.get_swa_multi_avg_fn())


def test_update_bn_matches_torch():
    ours, theirs = _model_pair(seed=1)
    ours.eval()
    theirs.eval()
    rng = np.random.default_rng(9)
    batches = [rng.standard_normal((4, 3)) for _ in range(3)]
    # batches as tensors and as (input, target) pairs
    swa.update_bn([tidal.tensor(batches[0])] + [(tidal.tensor(x), 0) for x in batches[1:]], ours)
    tswa.update_bn([torch.tensor(batches[0])] + [(torch.tensor(x), 0) for x in batches[1:]], theirs)
    _assert_modules_match(ours, theirs)
    assert not ours.training and ours[1].momentum == 0.1
    plain = tidal.nn.Linear(3, 2)
    swa.update_bn([tidal.ones(2, 3)], plain)  # no batch norm: nothing to do
    assert plain.training


@pytest.mark.parametrize("kw", [dict(swa_lr=0.05), dict(swa_lr=[0.01, 0.2], anneal_strategy="linear"),
                                dict(swa_lr=0.3, anneal_epochs=0), dict(swa_lr=0.02, anneal_epochs=3)], ids=str)
def test_swalr_matches_torch(kw):
    def make(lib, lib_optim, lib_swa):
        params = [lib.zeros(2, requires_grad=True), lib.zeros(3, requires_grad=True)]
        opt = lib_optim.SGD([{"params": params[:1]}, {"params": params[1:], "lr": 0.5}], lr=0.1)
        return opt, lib_swa.SWALR(opt, **kw)
    opt, sched = make(tidal, optim, swa)
    topt, tsched = make(torch, torch.optim, tswa)
    assert sched.get_last_lr() == tsched.get_last_lr()
    for _ in range(13):
        opt.step()
        topt.step()
        sched.step()
        tsched.step()
        assert sched.get_last_lr() == tsched.get_last_lr()
        assert [g["swa_lr"] for g in opt.param_groups] == [g["swa_lr"] for g in topt.param_groups]
    state = sched.state_dict()
    assert "optimizer" not in state and "anneal_func" not in state
    assert state["_anneal_strategy"] == tsched.state_dict()["_anneal_strategy"]
    other_opt, other = make(tidal, optim, swa)
    other.load_state_dict(copy.deepcopy(state))
    assert other.anneal_func(0.5) == sched.anneal_func(0.5) and other.last_epoch == sched.last_epoch


@pytest.mark.parametrize("kw", [dict(swa_lr=0.1, anneal_strategy="exp"), dict(swa_lr=0.1, anneal_epochs=-1),
                                dict(swa_lr=0.1, anneal_epochs=2.5), dict(swa_lr=[0.1, 0.2, 0.3])], ids=str)
def test_swalr_errors(kw):
    expected = _torch_error(lambda: tswa.SWALR(torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1), **kw))
    with pytest.raises(type(expected), match=re.escape(str(expected))):
        swa.SWALR(optim.SGD([tidal.zeros(1, requires_grad=True)], lr=0.1), **kw)

"""Optimizers against torch.optim: identical parameters and gradients, parameters and state compared each step."""
from __future__ import annotations

import copy
import re

import numpy as np
import pytest
import torch

import tidal
import tidal.optim as optim

SHAPES = [(3, 4), (5,), (), (4, 3)]  # the last one is a transposed (non-contiguous) parameter
TOL = {"float64": dict(rtol=1e-11, atol=1e-13), "float32": dict(rtol=2e-5, atol=2e-6)}

CONFIGS = {
    "SGD": [dict(lr=0.1), dict(lr=0.1, momentum=0.9), dict(lr=0.05, momentum=0.8, dampening=0.3),
            dict(lr=0.1, momentum=0.9, nesterov=True), dict(lr=0.1, weight_decay=0.1),
            dict(lr=0.1, momentum=0.5, weight_decay=0.05, maximize=True)],
    "Adam": [dict(), dict(lr=0.05, amsgrad=True), dict(lr=0.01, weight_decay=0.1), dict(maximize=True),
             dict(lr=0.02, betas=(0.3, 0.6), eps=1e-3), dict(lr=0.03, amsgrad=True, weight_decay=0.2, maximize=True)],
    "AdamW": [dict(), dict(lr=0.05, amsgrad=True), dict(lr=0.01, weight_decay=0.5),
              dict(maximize=True, betas=(0.8, 0.9))],
    "RMSprop": [dict(), dict(centered=True), dict(momentum=0.9), dict(lr=0.02, alpha=0.4, eps=1e-4),
                dict(centered=True, momentum=0.5, weight_decay=0.1), dict(maximize=True, centered=True)],
    "Adagrad": [dict(), dict(lr=0.1, lr_decay=0.05), dict(weight_decay=0.1), dict(initial_accumulator_value=0.5),
                dict(eps=1e-3, maximize=True)],
    "Adadelta": [dict(), dict(rho=0.5), dict(lr=0.5, weight_decay=0.1), dict(eps=1e-3, maximize=True)],
}
CASES = [(name, kw) for name, configs in CONFIGS.items() for kw in configs]


def _case_id(case) -> str:
    name, kw = case
    return name + "-" + "-".join(f"{k}={v}" for k, v in kw.items())


def _leaf(lib, arr: np.ndarray, transposed: bool):
    t = lib.tensor(arr.T.copy() if transposed else arr)
    t = t.t() if transposed else t
    return t.requires_grad_()


def _param_pair(shapes, dtype: str, seed: int = 0):
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(s).astype(dtype) for s in shapes]
    ours = [_leaf(tidal, a, i == 3) for i, a in enumerate(arrays)]
    theirs = [_leaf(torch, a, i == 3) for i, a in enumerate(arrays)]
    return ours, theirs


def _set_grads(ours, theirs, rng, dtype: str, step: int) -> None:
    for i, (p, q) in enumerate(zip(ours, theirs)):
        if i == 2 and step % 3 == 1:  # a parameter without gradient this step is skipped
            p.grad = q.grad = None
            continue
        g = (rng.standard_normal(q.shape) * (1 + step)).astype(dtype)
        if i == 3:  # non-contiguous gradient
            p.grad, q.grad = tidal.tensor(g.T.copy()).t(), torch.tensor(g.T.copy()).t()
        else:
            p.grad, q.grad = tidal.tensor(g), torch.tensor(g)


def _assert_close(ours, theirs, tol, what: str = "") -> None:
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), err_msg=what, **tol)


def _assert_state_matches(opt, topt, ours, theirs, tol) -> None:
    for p, q in zip(ours, theirs):
        expected = topt.state.get(q, {})
        got = opt.state.get(p, {})
        assert set(got) == set(expected)
        for key, value in expected.items():
            if key == "step":
                assert got[key] == float(value)
            elif isinstance(value, torch.Tensor):
                _assert_close(got[key], value, tol, key)
            else:
                assert got[key] == value


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_matches_torch(case, dtype):
    name, kw = case
    ours, theirs = _param_pair(SHAPES, dtype)
    opt, topt = getattr(optim, name)(ours, **kw), getattr(torch.optim, name)(theirs, **kw)
    rng = np.random.default_rng(1)
    for step in range(7):
        _set_grads(ours, theirs, rng, dtype, step)
        opt.step()
        topt.step()
        for p, q in zip(ours, theirs):
            _assert_close(p, q, TOL[dtype], f"step {step}")
            assert p.dtype == getattr(tidal, dtype)
        _assert_state_matches(opt, topt, ours, theirs, TOL[dtype])


@pytest.mark.parametrize("name", list(CONFIGS))
def test_param_groups_with_their_own_hyperparameters(name):
    extra = {"SGD": dict(momentum=0.5), "Adam": dict(betas=(0.5, 0.9)), "AdamW": dict(weight_decay=0.3),
             "RMSprop": dict(centered=True), "Adagrad": dict(lr_decay=0.1), "Adadelta": dict(rho=0.6)}[name]
    ours, theirs = _param_pair(SHAPES, "float64")

    def groups(params):
        return [{"params": params[:2], "lr": 0.05, **extra}, {"params": params[2:]}]
    opt, topt = getattr(optim, name)(groups(ours), lr=0.01), getattr(torch.optim, name)(groups(theirs), lr=0.01)
    assert [{k: v for k, v in g.items() if k != "params"} for g in opt.param_groups] == \
        [{k: v for k, v in g.items() if k != "params"} for g in topt.param_groups]
    rng = np.random.default_rng(2)
    for step in range(5):
        _set_grads(ours, theirs, rng, "float64", step)
        opt.step()
        topt.step()
    for p, q in zip(ours, theirs):
        _assert_close(p, q, TOL["float64"])


def _to_torch(value):
    if isinstance(value, tidal.Tensor):
        return torch.from_numpy(value.numpy().copy())
    if isinstance(value, dict):
        return {k: _to_torch(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_to_torch(v) for v in value]
    return value


@pytest.mark.parametrize("case", [(n, CONFIGS[n][1]) for n in CONFIGS], ids=_case_id)
def test_state_dict_structure_and_round_trip(case):
    name, kw = case
    ours, theirs = _param_pair(SHAPES, "float64")
    opt, topt = getattr(optim, name)(ours, **kw), getattr(torch.optim, name)(theirs, **kw)
    rng = np.random.default_rng(3)
    for step in range(3):
        _set_grads(ours, theirs, rng, "float64", step)
        opt.step()
        topt.step()
    sd, tsd = opt.state_dict(), topt.state_dict()
    assert sd["param_groups"] == tsd["param_groups"]
    assert set(sd["state"]) == set(tsd["state"])
    for index, state in tsd["state"].items():
        assert set(sd["state"][index]) == set(state)
        if "step" in state:
            assert sd["state"][index]["step"] == float(state["step"])

    # load into a fresh optimizer over copies of the parameters: both continue identically
    copies = [p.detach().clone().requires_grad_() for p in ours]
    fresh = getattr(optim, name)(copies, **kw)
    fresh.load_state_dict(copy.deepcopy(sd))
    # and torch continues from our state dict
    tfresh_params = [q.detach().clone().requires_grad_() for q in theirs]
    tfresh = getattr(torch.optim, name)(tfresh_params, **kw)
    tfresh.load_state_dict(_to_torch(copy.deepcopy(sd)))
    for step in range(3, 6):
        grads = [None if (i == 2 and step % 3 == 1) else rng.standard_normal(p.shape) for i, p in enumerate(ours)]
        for params in (ours, copies, tfresh_params):
            for p, g in zip(params, grads):
                p.grad = None if g is None else (torch.tensor(g) if isinstance(p, torch.Tensor) else tidal.tensor(g))
        opt.step()
        fresh.step()
        tfresh.step()
    for p, c, q in zip(ours, copies, tfresh_params):
        np.testing.assert_array_equal(p.detach().numpy(), c.detach().numpy())
        _assert_close(p, q, TOL["float64"])


def test_state_dict_references_state_and_load_casts():
    p = tidal.randn(3, dtype=tidal.float64, requires_grad=True)
    opt = optim.Adam([p], lr=0.1)
    p.grad = tidal.ones(3, dtype=tidal.float64)
    opt.step()
    sd = opt.state_dict()
    assert sd["state"][0]["exp_avg"] is opt.state[p]["exp_avg"]
    q = tidal.randn(3, dtype=tidal.float32, requires_grad=True)
    other = optim.Adam([q], lr=0.5)
    saved = copy.deepcopy(sd)
    saved["state"][0]["step"] = tidal.tensor(1.0)  # PyTorch keeps the step as a tensor
    other.load_state_dict(saved)
    state = other.state[q]
    assert state["exp_avg"].dtype == tidal.float32 and state["exp_avg_sq"].dtype == tidal.float32
    assert state["step"] is saved["state"][0]["step"]  # the state dict's own step tensor, as torch keeps it
    assert other.param_groups[0]["lr"] == 0.1 and other.param_groups[0]["params"][0] is q


def test_load_state_dict_errors():
    a, b = (tidal.zeros(2, requires_grad=True) for _ in range(2))
    one = optim.SGD([a, b], lr=0.1)
    two = optim.SGD([{"params": [a]}, {"params": [b]}], lr=0.1)
    with pytest.raises(ValueError, match="loaded state dict has a different number of parameter groups"):
        one.load_state_dict(two.state_dict())
    three = optim.SGD([a], lr=0.1)
    with pytest.raises(ValueError, match="loaded state dict contains a parameter group that doesn't match the "
                                         "size of optimizer's group"):
        three.load_state_dict(one.state_dict())


def test_zero_grad():
    p = tidal.ones(3, requires_grad=True)
    opt = optim.SGD([p], lr=0.1)
    p.grad = tidal.ones(3)
    grad = p.grad
    opt.zero_grad(set_to_none=False)
    assert p.grad is grad
    np.testing.assert_array_equal(p.grad.numpy(), np.zeros(3, np.float32))
    opt.zero_grad()
    assert p.grad is None
    opt.zero_grad()  # no gradient: nothing to do


def _torch_error(fn):
    try:
        fn()
    except Exception as exc:  # noqa: BLE001 - we want whatever torch raises
        return exc
    raise AssertionError("torch raised nothing")


@pytest.mark.parametrize("name, kw", [
    ("SGD", dict(lr=-1.0)), ("SGD", dict(momentum=-0.5)), ("SGD", dict(weight_decay=-1.0)),
    ("SGD", dict(nesterov=True)), ("SGD", dict(nesterov=True, momentum=0.9, dampening=0.1)),
    ("Adam", dict(lr=-0.1)), ("Adam", dict(eps=-1.0)), ("Adam", dict(betas=(1.0, 0.9))),
    ("Adam", dict(betas=(0.9, -0.1))), ("AdamW", dict(weight_decay=-0.1)), ("RMSprop", dict(alpha=-0.1)),
    ("RMSprop", dict(momentum=-0.1)), ("Adagrad", dict(lr_decay=-0.1)),
    ("Adagrad", dict(initial_accumulator_value=-0.1)), ("Adadelta", dict(rho=1.5)), ("LBFGS", dict(lr=-1.0)),
])
def test_invalid_hyperparameters(name, kw):
    expected = _torch_error(lambda: getattr(torch.optim, name)([torch.zeros(2, requires_grad=True)], **kw))
    with pytest.raises(type(expected), match=re.escape(str(expected))):
        getattr(optim, name)([tidal.zeros(2, requires_grad=True)], **kw)


def test_param_group_errors():
    p, q = tidal.zeros(2, requires_grad=True), tidal.zeros(2, requires_grad=True)
    with pytest.raises(ValueError, match="optimizer got an empty parameter list"):
        optim.SGD([], lr=0.1)
    with pytest.raises(TypeError, match="params argument given to the optimizer should be an iterable of Tensors "
                                        "or dicts, but got torch.FloatTensor"):
        optim.SGD(p, lr=0.1)
    with pytest.raises(TypeError, match="optimizer can only optimize Tensors, but one of the params is int"):
        optim.SGD([p, 3], lr=0.1)
    with pytest.raises(ValueError, match="can't optimize a non-leaf Tensor"):
        optim.SGD([p * 2], lr=0.1)
    with pytest.raises(TypeError, match="optimizer parameters need to be organized in ordered collections"):
        optim.SGD([{"params": {p}}], lr=0.1)
    opt = optim.SGD([p], lr=0.1)
    with pytest.raises(ValueError, match="some parameters appear in more than one parameter group"):
        opt.add_param_group({"params": [q, p]})
    with pytest.raises(TypeError, match="param_group must be a dict"):
        opt.add_param_group([q])
    with pytest.warns(UserWarning, match="duplicate parameters"):
        optim.SGD([q, q], lr=0.1)
    opt.add_param_group({"params": q, "lr": 0.5})
    assert opt.param_groups[1]["params"] == [q] and opt.param_groups[1]["momentum"] == 0


def test_required_hyperparameter():
    class Plain(optim.Optimizer):
        def __init__(self, params, lr=optim.optimizer.required):
            super().__init__(params, dict(lr=lr))

        def step(self, closure=None):
            return self._evaluate(closure)

    with pytest.raises(ValueError, match="parameter group didn't specify a value of required optimization "
                                         "parameter lr"):
        Plain([tidal.zeros(1, requires_grad=True)])
    assert Plain([tidal.zeros(1, requires_grad=True)], lr=1).param_groups[0]["lr"] == 1


def test_repr_matches_torch():
    for name in list(CONFIGS) + ["LBFGS"]:
        ours = getattr(optim, name)([tidal.zeros(2, requires_grad=True)])
        theirs = getattr(torch.optim, name)([torch.zeros(2, requires_grad=True)])
        assert repr(ours) == repr(theirs)


def test_named_parameters():
    p = tidal.zeros(2, requires_grad=True)
    opt = optim.SGD([("weight", p)], lr=0.1)
    assert opt.param_groups[0]["param_names"] == ["weight"]
    assert opt.state_dict()["param_groups"][0]["param_names"] == ["weight"]
    with pytest.raises(ValueError, match="cannot add param group without names"):
        opt.add_param_group({"params": [tidal.zeros(1, requires_grad=True)]})


def test_step_hooks_and_closure():
    p = tidal.ones(2, requires_grad=True)
    opt = optim.SGD([p], lr=0.5)
    calls = []
    pre = opt.register_step_pre_hook(lambda o, args, kwargs: calls.append(("pre", o is opt)))
    post = opt.register_step_post_hook(lambda o, args, kwargs: calls.append(("post", o is opt)))
    glob = optim.register_optimizer_step_pre_hook(lambda o, args, kwargs: calls.append(("global", o is opt)))

    def closure():
        calls.append(("closure", tidal.is_grad_enabled()))
        p.grad = tidal.full((2,), 2.0)
        return tidal.tensor(7.0)
    try:
        with tidal.no_grad():
            loss = opt.step(closure)
    finally:
        glob.remove()
    assert loss.item() == 7.0
    assert calls == [("global", True), ("pre", True), ("closure", True), ("post", True)]
    np.testing.assert_array_equal(p.detach().numpy(), np.zeros(2, np.float32))
    assert not p.requires_grad or p.grad_fn is None  # the update recorded no graph
    pre.remove()
    post.remove()
    calls.clear()
    opt.step()
    assert calls == []


def test_optimizer_subclass_without_step_raises_as_torch():
    """The base class's step runs only a declared update: a subclass with neither raises, as torch's."""
    for lib in (tidal, torch):
        class Custom(lib.optim.Optimizer):
            pass
        p = lib.zeros(2, requires_grad=True)
        p.grad = lib.ones(2)
        with pytest.raises(NotImplementedError):
            Custom([p], {"lr": 0.1}).step()


@pytest.mark.parametrize("name", list(CONFIGS))
def test_step_never_waits_for_the_device(name):
    ours, _ = _param_pair([(16, 8), (8,), (3, 5)], "float32")
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
        # the whole group's update is one multi-tensor kernel (AMSGrad: one fused kernel per parameter), and the
        # group's step counts (torch's 0-d step tensors) one more
        counted = 1 if name in ("Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta") else 0
        assert vm.stats.kernels == (len(ours) if CONFIGS[name][-1].get("amsgrad") else 1) + counted


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("name", ["SGD", "Adam"])
def test_low_precision_parameters(name, dtype):
    kw = CONFIGS[name][2]
    rng = np.random.default_rng(4)
    base = rng.standard_normal((4, 5)).astype(np.float32)
    p = tidal.tensor(base).to(getattr(tidal, dtype)).requires_grad_()
    q = torch.tensor(base).to(getattr(torch, dtype)).requires_grad_()
    opt, topt = getattr(optim, name)([p], **kw), getattr(torch.optim, name)([q], **kw)
    for _ in range(4):
        g = rng.standard_normal((4, 5)).astype(np.float32)
        p.grad, q.grad = tidal.tensor(g).to(p.dtype), torch.tensor(g).to(q.dtype)
        opt.step()
        topt.step()
    assert p.dtype == getattr(tidal, dtype)
    np.testing.assert_allclose(p.detach().float().numpy(), q.detach().float().numpy(), rtol=2e-2, atol=2e-2)


# -- LBFGS ------------------------------------------------------------------------------------
def _lbfgs_problem(lib, x0: np.ndarray, scale: np.ndarray, shift: np.ndarray):
    """A separable non-quadratic objective built from elementwise ops only: the closure's gradient
    comes from backward through elementwise ops with a ones upstream gradient (no sum backward)."""
    x = lib.tensor(x0.copy(), requires_grad=True)
    a, b, ones = lib.tensor(scale), lib.tensor(shift), lib.tensor(np.ones_like(x0))

    def closure():
        x.grad = None
        z = x - b
        terms = a * z * z + 0.25 * z * z * z * z + 0.5 * x
        terms.backward(ones)
        return terms.detach().sum()
    return x, closure


@pytest.mark.parametrize("kw", [dict(), dict(history_size=2, max_iter=4), dict(lr=0.5, max_iter=3),
                                dict(line_search_fn="strong_wolfe"),
                                dict(line_search_fn="strong_wolfe", history_size=3, max_iter=6, lr=2.0),
                                dict(line_search_fn="strong_wolfe", lr=0.01, max_iter=8),
                                dict(tolerance_change=1e-3, max_iter=10)], ids=str)
def test_lbfgs_matches_torch(kw):
    rng = np.random.default_rng(5)
    x0, scale, shift = rng.standard_normal(7) * 3, rng.uniform(-1, 2, 7), rng.standard_normal(7)
    x, closure = _lbfgs_problem(tidal, x0, scale, shift)
    tx, tclosure = _lbfgs_problem(torch, x0, scale, shift)
    opt, topt = optim.LBFGS([x], **kw), torch.optim.LBFGS([tx], **kw)
    for _ in range(3):
        loss, tloss = opt.step(closure), topt.step(tclosure)
        np.testing.assert_allclose(loss.item(), tloss.item(), rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(x.detach().numpy(), tx.detach().numpy(), rtol=1e-9, atol=1e-11)
        state, tstate = opt.state[x], topt.state[tx]
        assert (state["func_evals"], state["n_iter"]) == (tstate["func_evals"], tstate["n_iter"])
        assert len(state["old_dirs"]) == len(tstate["old_dirs"])
        np.testing.assert_allclose(float(state["t"]), float(tstate["t"]), rtol=1e-9)


def test_lbfgs_stops_at_optimum_and_errors():
    x, closure = _lbfgs_problem(tidal, np.zeros(3), np.ones(3), np.zeros(3))
    opt = optim.LBFGS([x], tolerance_grad=10.0)
    loss = opt.step(closure)  # the gradient (0.5) is already within tolerance: one evaluation, no update
    assert opt.state[x]["func_evals"] == 1 and opt.state[x]["n_iter"] == 0
    np.testing.assert_array_equal(x.detach().numpy(), np.zeros(3))
    assert loss.item() == 0.0
    with pytest.raises(ValueError, match=re.escape("LBFGS doesn't support per-parameter options (parameter groups)")):
        optim.LBFGS([{"params": [tidal.zeros(1, requires_grad=True)]},
                     {"params": [tidal.zeros(1, requires_grad=True)]}])
    with pytest.raises(RuntimeError, match="only 'strong_wolfe' is supported"):
        optim.LBFGS([x], line_search_fn="armijo").step(closure)

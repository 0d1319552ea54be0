"""Optimizers on complex parameters against torch.optim: torch updates a complex parameter through its real
view (the parts as two real numbers), and keeps its state complex; parameters and state compared after 3 steps."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import tidal
import tidal.optim as optim
import tidal.optim.optimizer as optimizer_module

STEPS = 3
TOL = {"complex64": dict(rtol=2e-5, atol=2e-6), "float32": dict(rtol=2e-5, atol=2e-6),
       "complex128": dict(rtol=1e-11, atol=1e-13)}

# every optimizer torch updates through the real view of a complex parameter (its source calls _view_as_real),
# and SGD, whose complex arithmetic is the same as on the parts
CASES = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.1)),
    ("SGD", dict(lr=0.05, momentum=0.8, dampening=0.3, maximize=True)),
    ("Adam", dict(lr=0.05)),
    ("Adam", dict(lr=0.05, amsgrad=True, weight_decay=0.1, maximize=True)),
    ("AdamW", dict(lr=0.05, weight_decay=0.3)),
    ("RMSprop", dict(lr=0.02)),
    ("RMSprop", dict(lr=0.02, centered=True, momentum=0.5, weight_decay=0.1)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.05, initial_accumulator_value=0.5)),
    ("Adadelta", dict(lr=0.5, weight_decay=0.1)),
    ("Adamax", dict(lr=0.05)),
    ("ASGD", dict(lr=0.05, t0=1)),
    ("NAdam", dict(lr=0.05)),
    ("RAdam", dict(lr=0.05, decoupled_weight_decay=True, weight_decay=0.1)),
    ("Rprop", dict(lr=0.05)),
]


def _case_id(case) -> str:
    name, kw = case
    return name + "-" + "-".join(f"{k}={v}" for k, v in kw.items())


def _data(dtypes: list[str], seed: int = 0) -> tuple[list[np.ndarray], list[list[np.ndarray]]]:
    """Initial values of one parameter per dtype (shapes (3, 4), (5,), (2, 3)...) and STEPS gradients each."""
    rng = np.random.default_rng(seed)
    shapes = [(3, 4), (5,), (2, 3)]

    def draw(shape, dtype):
        a = rng.standard_normal(shape)
        if dtype.startswith("complex"):
            a = a + 1j * rng.standard_normal(shape)
        return a.astype(dtype)

    inits = [draw(shapes[i % 3], d) for i, d in enumerate(dtypes)]
    grads = [[draw(a.shape, a.dtype.name) for a in inits] for _ in range(STEPS)]
    return inits, grads


def _run_torch(name: str, kw: dict, inits, grads, foreach: bool, groups=None):
    params = [torch.tensor(a, requires_grad=True) for a in inits]
    opt = getattr(torch.optim, name)(groups(params) if groups else params, foreach=foreach, **kw)
    for step in grads:
        for p, g in zip(params, step):
            p.grad = torch.tensor(g)
        opt.step()
    return params, opt


def _run_tidal(name: str, kw: dict, inits, grads, groups=None):
    params = [tidal.tensor(a, requires_grad=True) for a in inits]
    opt = getattr(optim, name)(groups(params) if groups else params, **kw)
    for step in grads:
        for p, g in zip(params, step):
            p.grad = tidal.tensor(g)
        opt.step()
    return params, opt


def _single_tensor(monkeypatch) -> None:
    """Make the optimizers' step run the update on the tensors, not as the one multi-tensor instruction."""
    run = optimizer_module.foreach
    monkeypatch.setattr(optimizer_module, "foreach", lambda fn, lists, written, kwargs, enabled=True:
                        run(fn, lists, written, kwargs, False))


def _check(t_params, t_opt, x_params, x_opt) -> None:
    for tp, xp in zip(t_params, x_params):
        want = tp.detach().numpy()
        assert xp.dtype.name == str(tp.dtype).removeprefix("torch.")
        np.testing.assert_allclose(xp.detach().numpy(), want, **TOL[want.dtype.name])
        t_state, x_state = t_opt.state[tp], x_opt.state[xp]
        assert set(x_state) == set(t_state)
        for key, value in t_state.items():
            got = x_state[key]
            if isinstance(value, torch.Tensor) and value.dim() > 0:
                assert got.dtype.name == str(value.dtype).removeprefix("torch."), key  # complex state stays complex
                np.testing.assert_allclose(got.detach().numpy(), value.numpy(), **TOL[value.numpy().dtype.name],
                                           err_msg=key)
            else:  # step counts and other scalars: host numbers in tidal, 0-d tensors in torch
                np.testing.assert_allclose(float(got), float(value), rtol=1e-6, err_msg=key)


@pytest.mark.parametrize("case", CASES, ids=_case_id)
@pytest.mark.parametrize("multi_tensor", [True, False], ids=["foreach", "single"])
def test_complex_params_match_torch(case, multi_tensor, monkeypatch):
    name, kw = case
    inits, grads = _data(["complex64", "complex64"])
    if not multi_tensor:
        _single_tensor(monkeypatch)
    x_params, x_opt = _run_tidal(name, kw, inits, grads)
    t_params, t_opt = _run_torch(name, kw, inits, grads, foreach=multi_tensor)
    _check(t_params, t_opt, x_params, x_opt)


@pytest.mark.parametrize("name", ["SGD", "Adam", "RMSprop", "Adagrad", "Rprop"])
def test_mixed_real_and_complex_groups(name):
    # one group mixing float32 and complex64 (one multi-tensor instruction over the real views), and a group
    # mixing complex128 and float32 (run on the tensors), with their own learning rates
    inits, grads = _data(["complex64", "float32", "complex128", "float32"], seed=1)
    kw = dict(lr=0.05, momentum=0.5) if name == "SGD" else dict(lr=0.05)

    def groups(params):
        return [{"params": params[:2]}, {"params": params[2:], "lr": 0.02}]

    x_params, x_opt = _run_tidal(name, kw, inits, grads, groups)
    t_params, t_opt = _run_torch(name, kw, inits, grads, foreach=False, groups=groups)
    _check(t_params, t_opt, x_params, x_opt)


def test_complex_state_dict_round_trip():
    inits, grads = _data(["complex64"])
    x_params, x_opt = _run_tidal("Adam", dict(lr=0.05), inits, grads[:2])
    t_params, t_opt = _run_torch("Adam", dict(lr=0.05), inits, grads[:2], foreach=False)
    saved = x_opt.state_dict()
    assert saved["state"][0]["exp_avg"].dtype == tidal.complex64
    fresh = optim.Adam(x_params, lr=0.05)
    fresh.load_state_dict(saved)
    x_params[0].grad = tidal.tensor(grads[2][0])
    t_params[0].grad = torch.tensor(grads[2][0])
    fresh.step()
    t_opt.step()
    _check(t_params, t_opt, x_params, fresh)


def test_complex_model_through_autograd():
    # a complex linear map fitted with Adam: gradients from backward (torch's conjugate convention), then the update
    rng = np.random.default_rng(2)
    w0 = (rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))).astype(np.complex64)
    x = (rng.standard_normal((4, 2)) + 1j * rng.standard_normal((4, 2))).astype(np.complex64)
    y = (rng.standard_normal((3, 2)) + 1j * rng.standard_normal((3, 2))).astype(np.complex64)
    results = []
    for lib in (torch, tidal):
        w = lib.tensor(w0, requires_grad=True)
        opt = lib.optim.Adam([w], lr=0.05) if lib is torch else optim.Adam([w], lr=0.05)
        for _ in range(STEPS):
            opt.zero_grad()
            loss = (w @ lib.tensor(x) - lib.tensor(y)).abs().pow(2).sum()
            loss.backward()
            opt.step()
        results.append(w.detach().numpy())
    np.testing.assert_allclose(results[1], results[0], **TOL["complex64"])


def test_lbfgs_complex_param():
    inits, _ = _data(["complex64"], seed=3)
    target = _data(["complex64"], seed=4)[0][0]
    results = []
    for lib, module in ((torch, torch.optim), (tidal, optim)):
        w = lib.tensor(inits[0], requires_grad=True)
        opt = module.LBFGS([w], lr=0.5, max_iter=4)

        def closure():
            opt.zero_grad()
            loss = (w - lib.tensor(target)).abs().pow(2).sum()
            loss.backward()
            return loss

        opt.step(closure)
        results.append(w.detach().numpy())
    np.testing.assert_allclose(results[1], results[0], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", ["Adafactor", "Muon"])
def test_refuses_complex_params(name):
    inits, grads = _data(["complex64"])
    for lib, module in ((torch, torch.optim), (tidal, optim)):
        p = lib.tensor(inits[0], requires_grad=True)
        opt = getattr(module, name)([p])
        p.grad = lib.tensor(grads[0][0])
        with pytest.raises(RuntimeError, match=f"^{name} does not support complex parameters$"):
            opt.step()


@pytest.mark.parametrize("use_ema", [False, True], ids=["swa", "ema"])
def test_averaged_model_complex_param(use_ema):
    # torch averages complex parameters with the same lerp as real ones (bit for bit: decay*ema + (1-decay)*p
    # rounds differently)
    rng = np.random.default_rng(5)
    values = [(rng.standard_normal(6) + 1j * rng.standard_normal(6)).astype(np.complex64) for _ in range(4)]
    results = []
    for lib, swa_utils in ((torch, torch.optim.swa_utils), (tidal, optim.swa_utils)):
        model = lib.nn.Module()
        model.w = lib.nn.Parameter(lib.tensor(values[0]))
        kw = dict(multi_avg_fn=swa_utils.get_ema_multi_avg_fn(0.7)) if use_ema else {}
        averaged = swa_utils.AveragedModel(model, **kw)
        for v in values[1:]:
            with lib.no_grad():
                model.w.copy_(lib.tensor(v))
            averaged.update_parameters(model)
        results.append(averaged.module.w.detach().numpy())
    assert results[1].dtype == np.complex64
    np.testing.assert_array_equal(results[1], results[0])

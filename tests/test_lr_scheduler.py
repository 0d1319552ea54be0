"""Learning-rate schedulers against torch.optim.lr_scheduler: the same rates, to the last bit, step by step."""
from __future__ import annotations

import math
import re
import warnings

import pytest
import torch

import tidal
import tidal.optim as optim

LIBS = {"tidal": (tidal, optim), "torch": (torch, torch.optim)}


def _optimizer(lib: str, kind: str = "SGD"):
    tensors, opt = LIBS[lib]
    groups = [{"params": [tensors.zeros(2, requires_grad=True)]},
              {"params": [tensors.zeros(3, requires_grad=True)], "lr": 0.05}]
    if kind == "SGD":
        return opt.SGD(groups, lr=0.1, momentum=0.9)
    return opt.Adam(groups, lr=0.1)


def _decay(epoch):
    return 0.95 ** epoch


def _wave(epoch):
    return 1.0 + 0.5 * math.sin(epoch)


def _shrink(epoch):
    return 0.9 if epoch % 2 else 0.99


class _Halver:
    """A callable object: its __dict__ travels in LambdaLR's state dict."""

    def __init__(self):
        self.base = 0.5

    def __call__(self, epoch):
        return self.base ** (epoch // 4)


SCHEDULES = {
    "StepLR": lambda s, o: s.StepLR(o, step_size=3, gamma=0.5),
    "StepLR-default": lambda s, o: s.StepLR(o, 4),
    "MultiStepLR": lambda s, o: s.MultiStepLR(o, milestones=[2, 5, 5, 9], gamma=0.3),
    "ExponentialLR": lambda s, o: s.ExponentialLR(o, gamma=0.9),
    "CosineAnnealingLR": lambda s, o: s.CosineAnnealingLR(o, T_max=7, eta_min=0.001),
    "CosineAnnealingLR-long": lambda s, o: s.CosineAnnealingLR(o, T_max=40),
    "LambdaLR": lambda s, o: s.LambdaLR(o, _decay),
    "LambdaLR-per-group": lambda s, o: s.LambdaLR(o, [_decay, _wave]),
    "MultiplicativeLR": lambda s, o: s.MultiplicativeLR(o, _shrink),
    "ConstantLR": lambda s, o: s.ConstantLR(o, factor=0.25, total_iters=6),
    "LinearLR": lambda s, o: s.LinearLR(o, start_factor=0.25, total_iters=8),
    "LinearLR-down": lambda s, o: s.LinearLR(o, start_factor=1.0, end_factor=0.1, total_iters=12),
    "PolynomialLR": lambda s, o: s.PolynomialLR(o, total_iters=10, power=2.0),
    "OneCycleLR": lambda s, o: s.OneCycleLR(o, max_lr=1.0, total_steps=31),
    "OneCycleLR-linear": lambda s, o: s.OneCycleLR(o, max_lr=[0.5, 2.0], epochs=3, steps_per_epoch=11,
                                                   anneal_strategy="linear", pct_start=0.25),
    "OneCycleLR-three-phase": lambda s, o: s.OneCycleLR(o, max_lr=1.0, total_steps=40, three_phase=True,
                                                        base_momentum=0.8, max_momentum=[0.9, 0.99]),
    "OneCycleLR-no-momentum": lambda s, o: s.OneCycleLR(o, max_lr=0.3, total_steps=35, cycle_momentum=False,
                                                        div_factor=10.0, final_div_factor=100.0),
    "CyclicLR": lambda s, o: s.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=4),
    "CyclicLR-triangular2": lambda s, o: s.CyclicLR(o, base_lr=[0.01, 0.02], max_lr=0.2, step_size_up=3,
                                                    step_size_down=5, mode="triangular2", base_momentum=0.7),
    "CyclicLR-exp-range": lambda s, o: s.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=5, mode="exp_range",
                                                  gamma=0.9),
    "CosineAnnealingWarmRestarts": lambda s, o: s.CosineAnnealingWarmRestarts(o, T_0=5, eta_min=0.01),
    "CosineAnnealingWarmRestarts-mult": lambda s, o: s.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=2),
    "SequentialLR": lambda s, o: s.SequentialLR(o, [s.LinearLR(o, start_factor=0.1, total_iters=5),
                                                    s.CosineAnnealingLR(o, T_max=20)], milestones=[5]),
    "SequentialLR-three": lambda s, o: s.SequentialLR(o, [s.ConstantLR(o, factor=0.5, total_iters=3),
                                                          s.ExponentialLR(o, gamma=0.8),
                                                          s.StepLR(o, step_size=4, gamma=0.5)], milestones=[4, 12]),
    "ChainedScheduler": lambda s, o: s.ChainedScheduler([s.ExponentialLR(o, gamma=0.95),
                                                         s.StepLR(o, step_size=5, gamma=0.5)]),
    "ChainedScheduler-cosine": lambda s, o: s.ChainedScheduler([s.LinearLR(o, start_factor=0.5, total_iters=4),
                                                                s.CosineAnnealingLR(o, T_max=9)], optimizer=o),
}
ADAM_SCHEDULES = {"OneCycleLR-adam": lambda s, o: s.OneCycleLR(o, max_lr=0.01, total_steps=30),
                  "CyclicLR-adam": lambda s, o: s.CyclicLR(o, base_lr=0.001, max_lr=0.01, step_size_up=6)}


def _momenta(opt) -> list:
    return [g["betas"] if "betas" in g else g["momentum"] for g in opt.param_groups]


def _run(lib: str, make, kind: str = "SGD", steps: int = 30) -> list:
    opt = _optimizer(lib, kind)
    sched = make(LIBS[lib][1].lr_scheduler, opt)
    trace = [(sched.get_last_lr(), [g["lr"] for g in opt.param_groups], _momenta(opt))]
    for _ in range(steps):
        opt.step()
        sched.step()
        trace.append((sched.get_last_lr(), [g["lr"] for g in opt.param_groups], _momenta(opt)))
    return trace


@pytest.mark.parametrize("name", list(SCHEDULES))
def test_rates_match_torch(name):
    assert _run("tidal", SCHEDULES[name]) == _run("torch", SCHEDULES[name])


@pytest.mark.parametrize("name", list(ADAM_SCHEDULES))
def test_momentum_cycles_adam_beta1(name):
    ours = _run("tidal", ADAM_SCHEDULES[name], "Adam", steps=29)
    assert ours == _run("torch", ADAM_SCHEDULES[name], "Adam", steps=29)
    assert len({m[0][0] for _, _, m in ours}) > 5  # beta1 really moves


def test_one_cycle_past_the_end():
    for lib in ("tidal", "torch"):
        opt = _optimizer(lib)
        sched = LIBS[lib][1].lr_scheduler.OneCycleLR(opt, max_lr=1.0, total_steps=5)
        for _ in range(5):
            opt.step()
            sched.step()
        with pytest.raises(ValueError, match="Tried to step 6 times. The specified number of total steps is 5"):
            sched.step()


PLATEAU = [
    dict(), dict(mode="max", patience=2), dict(patience=1, threshold=0.1, threshold_mode="abs", cooldown=2),
    dict(mode="max", factor=0.5, patience=0, threshold_mode="abs", min_lr=[0.02, 0.001]),
    dict(factor=0.5, patience=1, min_lr=0.01, eps=1e-3), dict(patience=3, cooldown=1, threshold=0.05),
]
METRICS = [5.0, 4.0, 4.0, 4.1, 3.9, 3.9, 3.95, 3.8, 3.8, 3.8, 3.8, 3.9, 4.0, 2.0, 2.0, 2.1, 2.05, 2.0, 2.5,
           2.5, 2.5, 1.0, 1.0, 1.0, 1.01, 1.02, 1.0, 0.99, 0.99, 0.99, 1.5, 1.5, 1.5, 1.5]


@pytest.mark.parametrize("kw", PLATEAU, ids=str)
def test_reduce_on_plateau(kw):
    traces = []
    for lib in ("tidal", "torch"):
        opt = _optimizer(lib)
        sched = LIBS[lib][1].lr_scheduler.ReduceLROnPlateau(opt, **kw)
        trace = []
        for m in METRICS + [-x for x in METRICS]:
            sched.step(LIBS[lib][0].tensor(m))
            trace.append((sched.get_last_lr(), sched.num_bad_epochs, sched.cooldown_counter, sched.best))
        traces.append(trace)
    assert traces[0] == traces[1]
    assert len({tuple(t[0]) for t in traces[0]}) > 1 or kw.get("mode") == "max"


def test_reduce_on_plateau_state_dict_and_errors():
    opt = _optimizer("tidal")
    sched = optim.lr_scheduler.ReduceLROnPlateau(opt, patience=0)
    sched.step(1.0)
    sched.step(2.0)
    saved = sched.state_dict()
    assert "optimizer" not in saved and saved["best"] == 1.0
    other = optim.lr_scheduler.ReduceLROnPlateau(_optimizer("tidal"), mode="max")
    other.load_state_dict(saved)
    assert other.mode == "min" and other.best == 1.0 and other.get_last_lr() == sched.get_last_lr()
    with pytest.raises(ValueError, match="Factor should be < 1.0."):
        optim.lr_scheduler.ReduceLROnPlateau(opt, factor=1.0)
    with pytest.raises(ValueError, match="mode avg is unknown!"):
        optim.lr_scheduler.ReduceLROnPlateau(opt, mode="avg")
    with pytest.raises(ValueError, match="threshold mode rms is unknown!"):
        optim.lr_scheduler.ReduceLROnPlateau(opt, threshold_mode="rms")
    with pytest.raises(ValueError, match="expected 2 min_lrs, got 1"):
        optim.lr_scheduler.ReduceLROnPlateau(opt, min_lr=[0.1])


CLOSED_FORM = ["StepLR", "MultiStepLR", "ExponentialLR", "CosineAnnealingLR", "ConstantLR", "LinearLR",
               "PolynomialLR", "LambdaLR", "CosineAnnealingWarmRestarts-mult"]


@pytest.mark.parametrize("name", CLOSED_FORM)
def test_step_with_epoch(name):
    traces = []
    for lib in ("tidal", "torch"):
        opt = _optimizer(lib)
        sched = SCHEDULES[name](LIBS[lib][1].lr_scheduler, opt)
        trace = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for epoch in (3, 4, 10, 2, 7, 7, 15, 0, 25):
                sched.step(epoch)
                trace.append((sched.last_epoch, sched.get_last_lr()))
            sched.step()
            trace.append((sched.last_epoch, sched.get_last_lr()))
        traces.append(trace)
    assert traces[0] == traces[1]


def test_epoch_argument_is_deprecated():
    sched = optim.lr_scheduler.StepLR(_optimizer("tidal"), 2)
    with pytest.warns(UserWarning, match="The epoch parameter in `scheduler.step\\(\\)` was not necessary"):
        sched.step(3)


@pytest.mark.parametrize("name", ["CosineAnnealingLR", "StepLR", "ExponentialLR", "LinearLR", "LambdaLR"])
def test_resume_with_last_epoch(name):
    traces = []
    for lib in ("tidal", "torch"):
        opt = _optimizer(lib)
        for group in opt.param_groups:
            group["initial_lr"] = group["lr"]
        make = SCHEDULES[name]
        sched = make(_Resumed(LIBS[lib][1].lr_scheduler, 6), opt)
        trace = [sched.get_last_lr()]
        for _ in range(12):
            opt.step()
            sched.step()
            trace.append(sched.get_last_lr())
        traces.append(trace)
    assert traces[0] == traces[1]


class _Resumed:
    """A stand-in for the lr_scheduler module whose classes are built with `last_epoch`."""

    def __init__(self, module, last_epoch: int):
        self.module, self.last_epoch = module, last_epoch

    def __getattr__(self, name):
        cls = getattr(self.module, name)
        return lambda *args, **kwargs: cls(*args, last_epoch=self.last_epoch, **kwargs)


def test_resume_needs_initial_lr():
    with pytest.raises(KeyError, match=re.escape("param 'initial_lr' is not specified in param_groups[0] when "
                                                 "resuming scheduler with last_epoch >= 0.")):
        optim.lr_scheduler.StepLR(_optimizer("tidal"), 3, last_epoch=4)


@pytest.mark.parametrize("name", ["StepLR", "CosineAnnealingLR", "LambdaLR", "SequentialLR", "ChainedScheduler",
                                  "OneCycleLR", "CyclicLR", "CosineAnnealingWarmRestarts", "MultiStepLR"])
def test_state_dict_round_trip(name):
    make = SCHEDULES[name]
    opt = _optimizer("tidal")
    sched = make(optim.lr_scheduler, opt)
    for _ in range(9):
        opt.step()
        sched.step()
    saved = sched.state_dict()
    assert "optimizer" not in saved
    topt = _optimizer("torch")
    tsched = make(torch.optim.lr_scheduler, topt)
    tsaved = tsched.state_dict()
    assert set(tsaved) == set(saved)

    opt2 = _optimizer("tidal")
    sched2 = make(optim.lr_scheduler, opt2)
    opt2.load_state_dict(opt.state_dict())
    sched2.load_state_dict(saved)
    for _ in range(12):
        for o, s in ((opt, sched), (opt2, sched2)):
            o.step()
            s.step()
        assert sched.get_last_lr() == sched2.get_last_lr()


def test_lambda_state_dict_keeps_callable_objects():
    halver = _Halver()
    sched = optim.lr_scheduler.LambdaLR(_optimizer("tidal"), [halver, _decay])
    halver.base = 0.25
    saved = sched.state_dict()
    assert saved["lr_lambdas"] == [{"base": 0.25}, None]
    fresh = _Halver()
    other = optim.lr_scheduler.LambdaLR(_optimizer("tidal"), [fresh, _decay])
    other.load_state_dict(saved)
    assert fresh.base == 0.25


def _errors_match(build):
    try:
        build(torch.optim.lr_scheduler, _optimizer("torch"))
    except Exception as exc:  # noqa: BLE001
        expected = exc
    else:
        raise AssertionError("torch raised nothing")
    with pytest.raises(type(expected), match=re.escape(str(expected))):
        build(optim.lr_scheduler, _optimizer("tidal"))


@pytest.mark.parametrize("build", [
    lambda s, o: s.LambdaLR(o, [_decay]),
    lambda s, o: s.MultiplicativeLR(o, 0.5),
    lambda s, o: s.ConstantLR(o, factor=1.5),
    lambda s, o: s.LinearLR(o, start_factor=0.0),
    lambda s, o: s.LinearLR(o, end_factor=1.5),
    lambda s, o: s.OneCycleLR(o, max_lr=1.0),
    lambda s, o: s.OneCycleLR(o, max_lr=1.0, total_steps=0),
    lambda s, o: s.OneCycleLR(o, max_lr=1.0, epochs=0, steps_per_epoch=3),
    lambda s, o: s.OneCycleLR(o, max_lr=1.0, total_steps=10, pct_start=1),
    lambda s, o: s.OneCycleLR(o, max_lr=1.0, total_steps=10, anneal_strategy="exp"),
    lambda s, o: s.OneCycleLR(o, max_lr=[1.0], total_steps=10),
    lambda s, o: s.CyclicLR(o, 0.1, 1.0, mode="square"),
    lambda s, o: s.CosineAnnealingWarmRestarts(o, T_0=0),
    lambda s, o: s.CosineAnnealingWarmRestarts(o, T_0=2, T_mult=0),
    lambda s, o: s.SequentialLR(o, [s.StepLR(o, 2), s.StepLR(o, 3)], milestones=[1, 2]),
    lambda s, o: s.SequentialLR(o, [], milestones=[]),
    lambda s, o: s.SequentialLR(o, [s.ReduceLROnPlateau(o)], milestones=[]),
    lambda s, o: s.ChainedScheduler([]),
    lambda s, o: s.StepLR("not an optimizer", 3),
], ids=lambda f: "")
def test_errors_match_torch(build):
    _errors_match(build)


def test_one_cycle_needs_momentum():
    opt = optim.Adagrad([tidal.zeros(2, requires_grad=True)])
    with pytest.raises(ValueError, match="optimizer must support momentum or beta1 with `cycle_momentum` option"):
        optim.lr_scheduler.OneCycleLR(opt, max_lr=1.0, total_steps=10)

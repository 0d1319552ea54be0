"""Behaviour probed from PyTorch's own unit tests, part 2 (test_nn.py's layers: utilities, recurrent,
normalization, convolution, interpolation, grids, attention, losses, init; test_optim.py and the lr
schedulers): see torch_probe_helpers."""
import warnings

import pytest
import torch

import tidal.compat as tc
from torch_probe_helpers import F, assert_same, registry
from torch_probe_helpers import errs as _errs
from torch_probe_helpers import run as _run

PROBES, probe = registry()


# -- test_nn.py: utilities, recurrent and normalization layers ----------------------------------------
def _linear(t, n_in, n_out):
    m = t.nn.Linear(n_in, n_out)
    with t.no_grad():
        m.weight.copy_(t.arange(float(n_in * n_out)).reshape(n_out, n_in) / (n_in * n_out))
        m.bias.fill_(0.1)
    return m


@probe
def clip_grad_norm_and_value(t):
    m = _linear(t, 10, 10)
    m(t.ones(2, 10)).pow(2).sum().backward()
    norms = [t.nn.utils.clip_grad_norm_(m.parameters(), 1.0),
             t.nn.utils.clip_grad_norm_(m.parameters(), 0.5, norm_type="inf"),
             t.nn.utils.clip_grad_norm_(m.parameters(), 0.5, norm_type=1), t.nn.utils.clip_grad_norm_([], 1.0),
             t.nn.utils.clip_grad_norm_(m.weight, 1.0), m.weight.grad]
    p = t.nn.Parameter(t.ones(3))
    p.grad = t.tensor([-3., 0.5, 2.])
    t.nn.utils.clip_grad_value_(p, 1.0)
    q = t.nn.Parameter(t.ones(2))
    q.grad = t.tensor([float("inf"), 1.])
    return norms + [p.grad, t.nn.utils.get_total_norm([t.tensor([3., 4.]), t.tensor([[1., 2.]])], 1.0)] + _errs([
        lambda: t.nn.utils.clip_grad_value_(p, -1.0),
        lambda: t.nn.utils.clip_grad_norm_([q], 1.0, error_if_nonfinite=True)])


@probe
def parameters_vector_roundtrip(t):
    m = t.nn.Linear(2, 3)
    v = t.nn.utils.parameters_to_vector(m.parameters())
    t.nn.utils.vector_to_parameters(t.arange(9.), m.parameters())
    return [v.shape, m.weight, m.bias] + _errs([
        lambda: t.nn.utils.vector_to_parameters(t.ones(2, 2), m.parameters()),
        lambda: t.nn.utils.parameters_to_vector(m.weight)])


@probe
def weight_and_spectral_norm(t):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = t.nn.utils.weight_norm(_linear(t, 3, 2))
    out = [sorted(k for k, _ in m.named_parameters()), m.weight_g, m.weight_v,
           sorted(k for k, _ in t.nn.utils.remove_weight_norm(m).named_parameters())]
    m = t.nn.utils.parametrizations.weight_norm(_linear(t, 3, 2), dim=None)
    out += [sorted(k for k, _ in m.named_parameters()), m.weight, m.parametrizations.weight.original0]
    m = t.nn.utils.parametrizations.spectral_norm(_linear(t, 3, 2))
    return out + [sorted(k for k, _ in m.named_parameters()), sorted(k for k, _ in m.named_buffers()),
                  t.linalg.matrix_norm(m.weight, 2).round(decimals=2)]


@probe
def parametrize_register_remove(t):
    class Sym(t.nn.Module):
        def forward(self, X):
            return X.triu() + X.triu(1).transpose(-1, -2)
    P = t.nn.utils.parametrize
    m = _linear(t, 3, 3)
    P.register_parametrization(m, "weight", Sym())
    out = [m.weight, P.is_parametrized(m), P.is_parametrized(m, "bias"), type(m).__name__, sorted(m.state_dict())]
    with P.cached():
        out.append(m.weight is m.weight)
    P.remove_parametrizations(m, "weight", leave_parametrized=True)
    return out + [m.weight, type(m).__name__] + _errs([lambda: P.remove_parametrizations(m, "weight")])


def _hidden(t, mod, *shape):
    return (t.ones(shape), t.ones(shape)) if mod in (t.nn.LSTM, t.nn.LSTMCell) else t.ones(shape)


@probe
def recurrent_argument_checks(t):
    out = []
    for mod in (t.nn.RNN, t.nn.LSTM, t.nn.GRU):
        m = mod(3, 4, 2)
        out += _errs([lambda: m(t.ones(5, 2, 4)), lambda: m(t.ones(5, 2, 3), _hidden(t, mod, 2, 3, 4)),
                      lambda: m(t.ones(5, 2, 3), _hidden(t, mod, 1, 2, 4)), lambda: m(t.ones(2, 3, 3, 3)),
                      lambda: m(t.ones(5, 3))[0].shape])
    for mod in (t.nn.RNNCell, t.nn.LSTMCell, t.nn.GRUCell):
        m = mod(3, 4)
        out += _errs([lambda: m(t.ones(2, 5)), lambda: m(t.ones(2, 3), _hidden(t, mod, 3, 4)),
                      lambda: m(t.ones(2, 2, 3))])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return out + _errs([
            lambda: t.nn.RNN(3, 4, nonlinearity="foo"), lambda: t.nn.LSTM(3, 4, dropout=2),
            lambda: t.nn.LSTM(3, 4, proj_size=4), lambda: t.nn.LSTM(3, 4, proj_size=-1), lambda: t.nn.GRU(3, 0),
            lambda: t.nn.GRU(3, 4, num_layers=0), lambda: t.nn.RNN(3, 4, 1, dropout=0.5), lambda: t.nn.LSTM(3, 4.5),
            lambda: t.nn.RNNCell(3, 4, nonlinearity="x"),
            lambda: repr(t.nn.LSTM(3, 4, proj_size=2, bidirectional=True)),
            lambda: [k for k, _ in t.nn.LSTM(3, 4, proj_size=2).named_parameters()]])


@probe
def normalization_checks(t):
    return _errs([
        lambda: t.nn.BatchNorm1d(10)(t.ones(1, 10)), lambda: t.nn.BatchNorm2d(10)(t.ones(1, 10, 1, 1)),
        lambda: t.nn.BatchNorm1d(10).eval()(t.ones(1, 10)).shape, lambda: t.nn.InstanceNorm1d(10)(t.ones(2, 10, 1)),
        lambda: t.nn.BatchNorm1d(3)(t.ones(2, 4)), lambda: t.nn.BatchNorm2d(3)(t.ones(2, 3, 4)),
        lambda: t.nn.GroupNorm(3, 4), lambda: t.nn.GroupNorm(2, 4)(t.ones(2, 6)),
        lambda: t.nn.LayerNorm(3)(t.ones(2, 4)),
        lambda: t.nn.InstanceNorm2d(3)(t.ones(3, 2, 2)).shape])


@probe
def batchnorm_running_stats(t):
    m = t.nn.BatchNorm1d(3, momentum=None)
    x = t.arange(12.).reshape(4, 3)
    m(x)
    m(x * 2)
    out = [m.running_mean, m.running_var, m.num_batches_tracked]
    m2 = t.nn.BatchNorm1d(3, track_running_stats=False)
    out += [m2.running_mean, m2(x), list(t.nn.BatchNorm1d(3, affine=False).state_dict())]
    m.reset_running_stats()
    return out + [m.running_mean, m.num_batches_tracked]


@probe
def layer_norm_double_backward(t):
    x = t.arange(6.).reshape(2, 3).requires_grad_()
    m = t.nn.LayerNorm(3)
    y = m(x)
    g, = t.autograd.grad(y.pow(3).sum(), x, create_graph=True)
    g.sum().backward()
    return y, g, x.grad, m.weight.grad


@probe
def rms_norm(t):
    x = t.arange(6.).reshape(2, 3)
    return t.nn.RMSNorm(3)(x), t.nn.RMSNorm([2, 3], eps=1.)(x), F(t).rms_norm(x, (3,)), repr(t.nn.RMSNorm(3))



# -- test_optim.py / test/optim/test_lrscheduler.py ------------------------------------------------
def _param(t, n=3):
    return t.nn.Parameter(t.arange(float(n)) / 2)


@probe
def optimizer_constructor_checks(t):
    p, o = [_param(t)], t.optim
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the duplicate-parameter warning
        return _errs([
            lambda: o.SGD(p, lr=-1), lambda: o.SGD(p, lr=0.1, momentum=-1), lambda: o.SGD(p, lr=0.1, weight_decay=-1),
            lambda: o.SGD(p, lr=0.1, nesterov=True), lambda: o.Adam(p, betas=(1.0, 0.9)),
            lambda: o.Adam(p, betas=(0.9, -0.1)), lambda: o.Adam(p, eps=-1), lambda: o.Adam(p, weight_decay=-1),
            lambda: o.AdamW(p, lr=-0.1), lambda: o.RMSprop(p, alpha=-1), lambda: o.RMSprop(p, momentum=-1),
            lambda: o.Adagrad(p, lr_decay=-1), lambda: o.Adagrad(p, initial_accumulator_value=-1),
            lambda: o.Adadelta(p, rho=1.5), lambda: o.Adamax(p, betas=(0.9, 1.0)),
            lambda: o.NAdam(p, momentum_decay=-0.2), lambda: o.RAdam(p, eps=-1), lambda: o.ASGD(p, weight_decay=-1),
            lambda: o.Rprop(p, etas=(1.0, 0.5)), lambda: o.Rprop(p, etas=(0.5, 1.0)),
            lambda: o.SGD([], lr=0.1), lambda: o.SGD(t.ones(2), lr=0.1),
            lambda: o.SGD([t.ones(2, requires_grad=True) * 2], lr=0.1),
            lambda: o.SGD([{"params": p}, {"params": p}], lr=0.1),
            lambda: len(o.SGD([p[0], p[0]], lr=0.1).param_groups),
            lambda: o.SGD({p[0]}, lr=0.1), lambda: o.SGD([1], lr=0.1)])


@probe
def optimizer_param_groups_and_state(t):
    a, b = _param(t), _param(t, 2)
    o = t.optim.SGD([a], lr=0.1, momentum=0.9)
    o.add_param_group({"params": b, "lr": 0.5})
    out = [len(o.param_groups), o.param_groups[1]["momentum"], o.param_groups[1]["lr"], sorted(o.param_groups[1])]
    out += _errs([lambda: o.add_param_group({"params": a}), lambda: o.add_param_group({"lr": 1.0}),
                  lambda: o.add_param_group([b]), lambda: o.add_param_group({"params": {_param(t)}})])
    a = _param(t)
    o = t.optim.Adam([a], lr=0.1)
    a.grad = t.ones(3)
    o.step()
    sd = o.state_dict()
    out += [sorted(sd), sd["param_groups"], sorted(sd["state"][0]), sd["state"][0]["step"], sd["state"][0]["exp_avg"]]
    b = _param(t)
    o2 = t.optim.Adam([b], lr=0.5)
    o2.load_state_dict(sd)
    out += [o2.param_groups[0]["lr"], o2.state[b]["exp_avg"], repr(o), repr(t.optim.SGD([a], lr=0.1))]
    return out + _errs([lambda: t.optim.Adam([_param(t), _param(t)], lr=0.1).load_state_dict(sd),
                        lambda: t.optim.Adam([_param(t, 4)]).load_state_dict(sd)])


@probe
def optimizer_closure_and_lbfgs(t):
    a = _param(t)
    o = t.optim.SGD([a], lr=0.1)

    def closure():
        o.zero_grad()
        loss = (a ** 2).sum()
        loss.backward()
        return loss
    out = [o.step(closure), a.clone()]
    o.zero_grad(set_to_none=False)
    out.append(a.grad)
    b = _param(t)
    lb = t.optim.LBFGS([b], lr=1, max_iter=5, line_search_fn="strong_wolfe")

    def closure2():
        lb.zero_grad()
        loss = ((b - 1) ** 2).sum() + (b[0] * b[1]) ** 2
        loss.backward()
        return loss
    for _ in range(2):
        lb.step(closure2)
    return out + [b]


@probe
def optimizer_fused_foreach_checks(t):
    p, O = t.nn.Parameter(t.ones(2)), t.optim
    return _errs([
        lambda: O.Adam([p], fused=True, foreach=True), lambda: O.SGD([p], lr=0.1, fused=True, foreach=True),
        lambda: O.Adam([p], fused=True, differentiable=True), lambda: O.AdamW([p], fused=True, foreach=True),
        lambda: O.Adagrad([p], fused=True, foreach=True), lambda: O.Adam([p], lr=t.tensor(0.1), foreach=True),
        lambda: O.AdamW([p], lr=t.tensor(0.1), foreach=True),
        lambda: O.SGD([p], fused=True, differentiable=True, foreach=True),
        lambda: O.Adagrad([p], fused=True, differentiable=True),
        lambda: O.Adam([p], lr=t.tensor([0.1, 0.2]), foreach=True),
        lambda: O.Adam([p], lr=t.tensor(-0.1), foreach=True),
        lambda: type(O.Adam([p], lr=t.tensor(0.1), foreach=True, capturable=True)).__name__,
        lambda: type(O.Adam([p], fused=True)).__name__])


@probe
def optimizer_hooks(t):
    p = t.nn.Parameter(t.tensor([1., -2., 3.]))
    o, log = t.optim.SGD([p], lr=0.1), []
    pre = o.register_step_pre_hook(lambda opt, a, k: log.append("pre"))
    o.register_step_post_hook(lambda opt, a, k: log.append("post"))
    o.register_state_dict_pre_hook(lambda opt: log.append("sd_pre"))
    o.register_state_dict_post_hook(lambda opt, sd: sd.__setitem__("x", 1) or sd)
    o.register_load_state_dict_pre_hook(lambda opt, sd: log.append("ld_pre"))
    o.register_load_state_dict_post_hook(lambda opt: log.append("ld_post"))
    p.grad = t.ones(3)
    o.step()
    pre.remove()
    o.step()
    sd = o.state_dict()
    o.load_state_dict({"state": {}, "param_groups": sd["param_groups"]})
    return log, sorted(sd), p


@probe
def scaled_dot_product_attention_checks(t):
    sdpa, q = F(t).scaled_dot_product_attention, t.arange(24.).reshape(1, 2, 3, 4) / 10
    return _errs([
        lambda: sdpa(q, q, q), lambda: sdpa(q, q, q, is_causal=True),
        lambda: sdpa(q, q, q, attn_mask=t.ones(3, 3, dtype=t.bool).tril()), lambda: sdpa(q, q, q, scale=0.5),
        lambda: sdpa(q, q, q, attn_mask=t.ones(3, 3), is_causal=True), lambda: sdpa(q, q[..., :2], q),
        lambda: sdpa(q, q, q, enable_gqa=True).shape, lambda: sdpa(q, q[:, :1], q[:, :1], enable_gqa=True),
        lambda: sdpa(q, q[:, :1], q[:, :1]), lambda: sdpa(q[0], q[0], q[0]).shape,
        lambda: sdpa(q, q, q, attn_mask=t.ones(2, 2))])


def _sched_rows(t, makers, steps=7):
    rows = []
    for make in makers:
        o = t.optim.SGD([_param(t)], lr=1.0, momentum=0.9)
        s = make(o)
        row = [s.get_last_lr()]
        for _ in range(steps):
            o.step()
            s.step()
            row.append([round(x, 6) for x in s.get_last_lr()])
        rows.append(row)
    return rows


@probe
def lr_schedulers(t):
    S = t.optim.lr_scheduler
    return _sched_rows(t, [
        lambda o: S.StepLR(o, 2, gamma=0.5), lambda o: S.MultiStepLR(o, [2, 4], 0.1), lambda o: S.ExponentialLR(o, 0.9),
        lambda o: S.CosineAnnealingLR(o, 4, eta_min=0.1), lambda o: S.LambdaLR(o, lambda e: 1 / (e + 1)),
        lambda o: S.MultiplicativeLR(o, lambda e: 0.9), lambda o: S.ConstantLR(o, 0.5, total_iters=3),
        lambda o: S.LinearLR(o, 0.25, 1.0, total_iters=4), lambda o: S.PolynomialLR(o, 4, 2.0),
        lambda o: S.CosineAnnealingWarmRestarts(o, 2, 2, eta_min=0.01),
        lambda o: S.CyclicLR(o, 0.1, 1.0, step_size_up=2),
        lambda o: S.OneCycleLR(o, 1.0, total_steps=8),
        lambda o: S.SequentialLR(o, [S.ConstantLR(o, 0.5, total_iters=2), S.ExponentialLR(o, 0.9)], milestones=[2]),
        lambda o: S.ChainedScheduler([S.ConstantLR(o, 0.5, total_iters=2), S.ExponentialLR(o, 0.9)])])


@probe
def lr_scheduler_checks_and_warnings(t):
    S = t.optim.lr_scheduler
    o = t.optim.SGD([_param(t)], lr=1.0)
    s = S.StepLR(o, 2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        s.step()
    return [str(w.message)[:120] for w in caught] + _errs([
        lambda: S.StepLR(t.optim.SGD([_param(t)], lr=1.0), 2, last_epoch=3), lambda: S.StepLR(3, 2),
        lambda: S.ConstantLR(o, factor=2),
        lambda: S.LinearLR(o, start_factor=0), lambda: S.OneCycleLR(o, 1.0),
        lambda: S.OneCycleLR(o, 1.0, total_steps=-1),
        lambda: S.CosineAnnealingWarmRestarts(o, 0), lambda: S.CosineAnnealingWarmRestarts(o, 2, T_mult=0.5),
        lambda: S.LambdaLR(o, [lambda e: 1, lambda e: 2]), lambda: S.CyclicLR(o, 0.1, 1.0, mode="x"),
        lambda: S.SequentialLR(o, [S.ConstantLR(o)], milestones=[2]),
        lambda: S.OneCycleLR(o, 1.0, total_steps=4, anneal_strategy="x")])


@probe
def reduce_lr_on_plateau(t):
    o = t.optim.SGD([_param(t)], lr=1.0)
    s = t.optim.lr_scheduler.ReduceLROnPlateau(o, patience=1, factor=0.5, cooldown=1, min_lr=0.1)
    out = []
    for metric in [1, 1, 1, 1, 1, 0.5, 1, 1, 1, 1, 1, 1]:
        s.step(metric)
        out.append(o.param_groups[0]["lr"])
    R = t.optim.lr_scheduler.ReduceLROnPlateau
    return out + [s.get_last_lr()] + _errs([lambda: R(o, mode="x"), lambda: R(o, factor=1.0),
                                            lambda: R(o, threshold_mode="y")])


@probe
def swa_utils(t):
    m = _linear(t, 2, 2)
    am = t.optim.swa_utils.AveragedModel(m)
    for _ in range(2):
        with t.no_grad():
            m.weight.add_(2)
        am.update_parameters(m)
    o = t.optim.SGD(m.parameters(), lr=1.0)
    s = t.optim.swa_utils.SWALR(o, swa_lr=0.1, anneal_epochs=3)
    out = [am.module.weight, am.n_averaged, s.get_last_lr()]
    for _ in range(4):
        o.step()
        s.step()
        out.append([round(x, 6) for x in s.get_last_lr()])
    ema = t.optim.swa_utils.AveragedModel(m, multi_avg_fn=t.optim.swa_utils.get_ema_multi_avg_fn(0.5))
    with t.no_grad():
        m.weight.add_(4)
    ema.update_parameters(m)
    return out + [ema.module.weight]


# -- test_nn.py / test/nn/test_convolution.py, interpolation, grids, attention, losses, init -------------
@probe
def convolution_checks(t):
    w = t.ones(4, 2, 3, 3)
    x = t.ones(1, 2, 5, 5)
    return _errs([
        lambda: F(t).conv2d(t.ones(1, 3, 5, 5), w), lambda: F(t).conv2d(t.ones(1, 2, 2, 2), w),
        lambda: F(t).conv2d(t.ones(2, 5, 5), w).shape, lambda: F(t).conv2d(t.ones(1, 4, 5, 5), w, groups=2).shape,
        lambda: F(t).conv2d(t.ones(1, 4, 5, 5), w, groups=3), lambda: F(t).conv2d(x, w, stride=0),
        lambda: F(t).conv2d(x, w, padding=-1), lambda: F(t).conv2d(x, w, padding="same", stride=2),
        lambda: F(t).conv2d(x, w, padding="foo"), lambda: F(t).conv2d(x, w, bias=t.ones(3)),
        lambda: F(t).conv2d(x.double(), w), lambda: F(t).conv1d(t.ones(1, 2, 5), w),
        lambda: F(t).conv_transpose2d(t.ones(1, 4, 3, 3), w, output_padding=2, stride=2),
        lambda: F(t).conv_transpose2d(t.ones(1, 4, 3, 3), w, stride=2, output_padding=1).shape,
        lambda: t.nn.Conv2d(3, 4, 3, groups=2), lambda: t.nn.Conv2d(4, 3, 3, groups=2),
        lambda: t.nn.Conv2d(4, 4, 3, padding="same", stride=2),
        lambda: t.nn.Conv2d(4, 4, 3, padding="valid")(t.ones(1, 4, 5, 5)).shape,
        lambda: t.nn.ConvTranspose2d(2, 2, 3, padding_mode="reflect"), lambda: t.nn.Conv2d(0, 2, 3),
        lambda: t.nn.Conv1d(2, 2, 3, groups=0),
        lambda: t.nn.ConvTranspose1d(2, 2, 3, stride=2)(t.ones(1, 2, 4), output_size=[10]).shape,
        lambda: t.nn.ConvTranspose1d(2, 2, 3, stride=2)(t.ones(1, 2, 4), output_size=[12])])


@probe
def conv_transpose_output_size(t):
    calls = []
    for m, x in [(t.nn.ConvTranspose2d(2, 2, 3, stride=2), t.ones(1, 2, 4, 4)),
                 (t.nn.ConvTranspose2d(2, 2, 3, stride=2), t.ones(2, 4, 4)),
                 (t.nn.ConvTranspose1d(2, 2, 3, stride=3, padding=1, dilation=2), t.ones(1, 2, 4)),
                 (t.nn.ConvTranspose3d(1, 1, 2, stride=2), t.ones(1, 1, 2, 2, 2))]:
        for size in ([10, 9], [2, 9, 9], [1, 2, 9, 9], [9], t.Size([12, 9]), (11,), [10], [8, 8, 8], (5, 4, 5),
                     [1, 1, 5, 5, 5], None):
            calls.append(lambda m=m, x=x, size=size: m(x, output_size=size).shape)
    return _errs(calls + [lambda: t.nn.ConvTranspose2d(2, 2, 3, stride=2)(t.ones(1, 2, 4, 4), [10, 10]).shape])


@probe
def interpolate_checks(t):
    x = t.arange(16.).reshape(1, 1, 4, 4)
    return _errs([
        lambda: F(t).interpolate(x, scale_factor=0.5, mode="bilinear"),
        lambda: F(t).interpolate(x, size=3, mode="bicubic", align_corners=True),
        lambda: F(t).interpolate(x, size=(3, 5), mode="nearest-exact"),
        lambda: F(t).interpolate(x, scale_factor=1.5, mode="area"),
        lambda: F(t).interpolate(x, size=2, scale_factor=2),
        lambda: F(t).interpolate(x), lambda: F(t).interpolate(x, size=2, mode="foo"),
        lambda: F(t).interpolate(x, size=2, mode="nearest", align_corners=True),
        lambda: F(t).interpolate(x, size=2, mode="linear"),
        lambda: F(t).interpolate(x, size=(2, 2, 2)), lambda: F(t).interpolate(x, size=[2, 2, 2]),
        lambda: F(t).interpolate(x, scale_factor=(2, 2, 2)), lambda: F(t).interpolate(x, scale_factor=[2, 2, 2]),
        lambda: F(t).interpolate(x, scale_factor=1.7, mode="bilinear", recompute_scale_factor=True),
        lambda: F(t).interpolate(x, scale_factor=1.7, mode="bilinear"), lambda: F(t).interpolate(x[0, 0], size=2),
        lambda: F(t).interpolate(x, scale_factor=2, mode="bilinear", antialias=True).shape,
        lambda: F(t).interpolate(x, size=2, mode="bilinear", antialias=True),
        lambda: t.nn.Upsample(size=3, mode="trilinear")(x), lambda: F(t).upsample(x, scale_factor=2).shape])


@probe
def interpolate_empty_sizes(t):
    return _errs([
        lambda: F(t).interpolate(t.ones(1, 1, 4, 4), size=0), lambda: F(t).interpolate(t.ones(1, 1, 4), size=0),
        lambda: F(t).interpolate(t.ones(1, 1, 4, 4, 4), size=(1, 0, 2)),
        lambda: F(t).interpolate(t.ones(1, 1, 4, 4), size=(0, 2), mode="bilinear"),
        lambda: F(t).interpolate(t.ones(1, 1, 4), size=0, mode="linear"),
        lambda: F(t).interpolate(t.ones(1, 1, 4, 4), size=0, mode="bicubic"),
        lambda: F(t).interpolate(t.ones(1, 1, 4, 4), size=0, mode="nearest-exact"),
        lambda: F(t).interpolate(t.ones(1, 1, 4, 4), size=0, mode="area"),
        lambda: F(t).interpolate(t.ones(1, 1, 4, 4, 4), size=0, mode="trilinear"),
        lambda: F(t).interpolate(t.ones(1, 1, 4, 4), scale_factor=0.1),
        lambda: F(t).interpolate(t.ones(1, 1, 4, 4), size=-1),
        lambda: F(t).interpolate(t.ones(1, 1, 4, 4), size=0, mode="bilinear", antialias=True),
        lambda: F(t).interpolate(t.ones(1, 1, 0, 4), size=2)])


@probe
def affine_grid_and_grid_sample(t):
    x = t.arange(16.).reshape(1, 1, 4, 4)
    th = t.tensor([[[0.8, 0.1, 0.05], [-0.1, 0.9, 0.]]])
    g = F(t).affine_grid(th, (1, 1, 3, 3), align_corners=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # align_corners' default warning
        return _errs([
            lambda: g, lambda: F(t).grid_sample(x, g, align_corners=False),
            lambda: F(t).grid_sample(x, g, mode="nearest", padding_mode="border", align_corners=True),
            lambda: F(t).grid_sample(x, g * 1.5, padding_mode="reflection", align_corners=False),
            lambda: F(t).grid_sample(x, g, mode="bicubic", align_corners=False),
            lambda: F(t).affine_grid(th, (1, 1, 3)), lambda: F(t).affine_grid(th, [1, 1, 3]),
            lambda: F(t).affine_grid(t.ones(1, 3, 3), (1, 1, 3, 3)), lambda: F(t).grid_sample(x, g, mode="foo"),
            lambda: F(t).grid_sample(x, g[..., :1]), lambda: F(t).affine_grid(th, (2, 1, 3, 3)),
            lambda: F(t).affine_grid(t.ones(3, 2, 3), (2, 1, 3, 3)),
            lambda: F(t).affine_grid(t.ones(1, 3, 4), (2, 1, 3, 3, 3)),
            lambda: F(t).affine_grid(th, (1, 1, 0, 3)), lambda: F(t).grid_sample(x, g, padding_mode="x"),
            lambda: F(t).affine_grid(th, (1, 1, 1, 3), align_corners=True)])


@probe
def multihead_attention_checks(t):
    m = t.nn.MultiheadAttention(4, 2)
    m2 = t.nn.MultiheadAttention(4, 2, kdim=3, vdim=5)
    q = t.ones(3, 2, 4)
    return _errs([
        lambda: t.nn.MultiheadAttention(5, 2), lambda: m(q, q, q)[0].shape, lambda: m(q, q, q)[1].shape,
        lambda: m(q, q, q, average_attn_weights=False)[1].shape, lambda: m(q, q, q, need_weights=False)[1],
        lambda: m(q, t.ones(3, 2, 5), q), lambda: m(q, q, t.ones(4, 2, 4)), lambda: m(q, q, q, attn_mask=t.ones(2, 2)),
        lambda: m(q, q, q, key_padding_mask=t.ones(2, 4, dtype=t.bool)),
        lambda: m(q, q, q, attn_mask=t.zeros(3, 3, dtype=t.bool))[0].shape,
        lambda: m(t.ones(3, 4), t.ones(3, 4), t.ones(3, 4))[0].shape,
        lambda: m(t.ones(3, 4), t.ones(3, 4), t.ones(2, 4)),
        lambda: m2(q, t.ones(3, 2, 3), t.ones(3, 2, 5))[0].shape, lambda: m2(q, t.ones(3, 2, 3), t.ones(4, 2, 5)),
        lambda: [k for k, _ in m.named_parameters()],
        lambda: [k for k, _ in t.nn.MultiheadAttention(4, 2, kdim=3, vdim=5, bias=False,
                                                       add_bias_kv=True).named_parameters()],
        lambda: m(q, q, q, is_causal=True), lambda: t.nn.MultiheadAttention(4, 2, batch_first=True)(q, q, q)[0].shape])


@probe
def transformer_checks(t):
    T = t.nn.Transformer
    return _errs([
        lambda: T(4, 2, 1, 1, 8)(t.ones(3, 2, 4), t.ones(3, 3, 4)),
        lambda: T(4, 2, 1, 1, 8)(t.ones(3, 2, 4), t.ones(5, 2, 5)),
        lambda: T(4, 2, 1, 1, 8)(t.ones(3, 2, 4), t.ones(5, 2, 4)).shape, lambda: T.generate_square_subsequent_mask(3),
        lambda: t.nn.TransformerEncoderLayer(4, 2, activation="foo"), lambda: t.nn.TransformerEncoderLayer(4, 3),
        lambda: [k for k, _ in t.nn.TransformerDecoderLayer(4, 2, 8).named_parameters()],
        lambda: len(t.nn.TransformerEncoder(t.nn.TransformerEncoderLayer(4, 2, 8), 2,
                                            enable_nested_tensor=False).layers)])


@probe
def loss_checks(t):
    x = t.arange(12.).reshape(3, 4) / 10
    y = t.tensor([0, 3, 1])
    return _errs([
        lambda: F(t).nll_loss(x, t.tensor([0, 4, 1])), lambda: F(t).nll_loss(x, t.tensor([0, 1])),
        lambda: F(t).nll_loss(x, t.tensor([0., 1., 2.])),
        lambda: F(t).nll_loss(x, t.tensor([0, 1, 2]), weight=t.ones(3)),
        lambda: F(t).nll_loss(x, t.tensor([0, -100, 2])), lambda: F(t).nll_loss(x, t.tensor([-100] * 3)),
        lambda: F(t).nll_loss(x, t.tensor([-100] * 3), reduction="sum"),
        lambda: F(t).cross_entropy(x, y, label_smoothing=0.2),
        lambda: F(t).cross_entropy(x, y, label_smoothing=1.5),
        lambda: F(t).cross_entropy(x, x.softmax(1), label_smoothing=0.1),
        lambda: F(t).cross_entropy(x, y, weight=t.tensor([1., 2., 3., 4.]), label_smoothing=0.3, ignore_index=3),
        lambda: F(t).cross_entropy(x[0], t.tensor(2)), lambda: F(t).cross_entropy(x, y, reduction="foo"),
        lambda: F(t).mse_loss(x, t.ones(4)), lambda: F(t).l1_loss(x, t.ones(2, 4)),
        lambda: F(t).huber_loss(x, t.zeros(3, 4), delta=0.5), lambda: F(t).smooth_l1_loss(x, t.zeros(3, 4), beta=-1),
        lambda: F(t).soft_margin_loss(x, t.ones(3, 4)), lambda: F(t).multilabel_soft_margin_loss(x, t.ones(3, 4)),
        lambda: F(t).hinge_embedding_loss(x, t.ones(3, 4), margin=0.5),
        lambda: F(t).cosine_embedding_loss(x, x.flip(0), t.tensor([1, -1, 1])),
        lambda: F(t).cosine_embedding_loss(x, x, t.tensor([1, -1])),
        lambda: t.nn.CrossEntropyLoss(reduce=False)(x, t.tensor([0, 1, 2])).shape])


@probe
def ctc_loss_cases(t):
    lp = (t.arange(5 * 2 * 4.).reshape(5, 2, 4) / 10).log_softmax(2).requires_grad_()
    tg, il, tl = t.tensor([[1, 2, 2], [1, 3, 0]]), t.tensor([5, 4]), t.tensor([3, 2])
    loss = F(t).ctc_loss(lp, tg, il, tl)
    loss.backward()
    return [loss, lp.grad] + _errs([
        lambda: F(t).ctc_loss(lp, tg, il, tl, reduction="none"),
        lambda: F(t).ctc_loss(lp, tg, il, tl, reduction="sum", zero_infinity=True),
        lambda: F(t).ctc_loss(lp, tg, t.tensor([6, 4]), tl), lambda: F(t).ctc_loss(lp, tg, il, t.tensor([4, 2])),
        lambda: F(t).ctc_loss(lp, t.tensor([1, 2, 2, 1, 3]), il, tl), lambda: F(t).ctc_loss(lp, tg, il, tl, blank=4),
        lambda: F(t).ctc_loss(lp, tg, il, t.tensor([3, 4]), zero_infinity=True)])


@probe
def dropout_checks(t):
    x = t.ones(4, 4)
    return _errs([
        lambda: F(t).dropout(x, 1.5), lambda: F(t).dropout(x, -0.1),
        lambda: t.nn.Dropout(2), lambda: F(t).dropout(x, 1.0),
        lambda: F(t).dropout(x, 0.0),
        lambda: F(t).dropout(x, 0.5, training=False), lambda: F(t).dropout2d(t.ones(2, 3)).shape,
        lambda: F(t).alpha_dropout(x, 1.0), lambda: F(t).feature_alpha_dropout(x, 0.0),
        lambda: F(t).dropout1d(t.ones(2, 2, 2, 2)), lambda: F(t).dropout3d(t.ones(2, 2)).shape,
        lambda: t.nn.Dropout(0.5).eval()(x), lambda: repr(t.nn.AlphaDropout(0.2)),
        lambda: F(t).dropout(t.ones(3, dtype=t.long), 0.5)])


@probe
def init_checks(t):
    init = t.nn.init
    return _errs([
        lambda: init.xavier_uniform_(t.ones(3)),
        lambda: init.kaiming_normal_(t.empty(0, 3)), lambda: init.orthogonal_(t.ones(3)),
        lambda: init.sparse_(t.ones(3, 3, 3), 0.1),
        lambda: init.eye_(t.ones(3, 3, 3)), lambda: init.dirac_(t.ones(3, 3)),
        lambda: init.calculate_gain("leaky_relu", 0.2),
        lambda: init.calculate_gain("foo"), lambda: init.calculate_gain("tanh"),
        lambda: init.calculate_gain("selu"), lambda: init.calculate_gain("leaky_relu", "x"),
        lambda: init.kaiming_uniform_(t.ones(3, 3), mode="foo"), lambda: init.constant_(t.ones(2), 3.),
        lambda: init.eye_(t.ones(2, 3)), lambda: init.dirac_(t.ones(4, 2, 3), groups=2),
        lambda: init.dirac_(t.ones(3, 2, 3), groups=2),
        lambda: bool(init.trunc_normal_(t.ones(1000), a=-0.1, b=0.1).abs().max() <= 0.1),
        lambda: init._calculate_fan_in_and_fan_out(t.ones(3, 4, 5)),
        lambda: init._calculate_fan_in_and_fan_out(t.ones(3)),
        lambda: init.xavier_normal_(t.ones(2, 3), gain=2.).shape])


@pytest.mark.parametrize("fn", PROBES, ids=lambda fn: fn.__name__)
def test_same_as_torch(fn):
    assert_same(fn)


def test_conv_negative_dilation_as_torch():
    """torch refuses a negative dilation with 'dilation should be greater than zero' (tidal said 'non-positive
    dilation is not supported', torch's oneDNN words for a zero dilation of a batched input, kept for zeros)."""
    def f(t):
        shapes = {"conv1d": ((2, 2, 5), (4, 2, 3)), "conv2d": ((2, 2, 5, 5), (4, 2, 3, 3)),
                  "conv3d": ((2, 2, 5, 5, 5), (4, 2, 3, 3, 3)), "conv_transpose2d": ((2, 4, 5, 5), (4, 2, 3, 3))}
        return _errs([lambda name=name, xs=xs, ws=ws, d=d: getattr(F(t), name)(t.ones(xs), t.ones(ws), dilation=d)
                      for name, (xs, ws) in shapes.items() for d in (-1, (1, -2)[:len(xs) - 2] or -1)]
                     + [lambda: F(t).conv2d(t.ones(2, 2, 5, 5), t.ones(4, 2, 3, 3), dilation=0),
                        lambda: F(t).conv2d(t.ones(2, 2, 5, 5), t.ones(4, 2, 3, 3), padding=-1, dilation=-1)])
    assert _run(f, tc) == _run(f, torch)


_TENSOR_LR_SCRIPT = """
import json, sys
import {mod} as t
out = []
for make in (lambda ps: t.optim.SGD(ps, lr=t.tensor(0.1), momentum=0.9), lambda ps: t.optim.Adam(ps, lr=t.tensor(0.1)),
             lambda ps: t.optim.AdamW(ps, lr=t.tensor(0.1), betas=(t.tensor(0.9), t.tensor(0.99))),
             lambda ps: t.optim.RMSprop(ps, lr=t.tensor(0.01)), lambda ps: t.optim.Adagrad(ps, lr=t.tensor(0.1))):
    p = t.nn.Parameter(t.tensor([1., -2., 3.]))
    o = make([p])
    for _ in range(3):
        o.zero_grad()
        ((p - 0.5) ** 2 * t.tensor([1., 2., 3.])).sum().backward()
        o.step()
    out.append([round(v, 5) for v in p.tolist()])
print(json.dumps(out))
"""


def test_tensor_hyperparameters_as_torch():
    """A 1-element tensor lr (or betas) is read when the step runs, as torch: tidal handed the tensor to the
    multi-tensor kernel, whose reading of it waited on the VM from the VM's own worker (the program hung,
    at the latest at exit). Each framework runs in its own process, under a time limit."""
    import json
    import subprocess
    import sys
    got = [json.loads(subprocess.run([sys.executable, "-c", _TENSOR_LR_SCRIPT.format(mod=mod)], capture_output=True,
                                     text=True, timeout=120, check=True).stdout) for mod in ("tidal.compat", "torch")]
    assert got[0] == got[1]

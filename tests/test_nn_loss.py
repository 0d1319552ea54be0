"""Loss functions and loss modules against torch: every reduction, class weights, ignore_index, label
smoothing, probability targets, pos_weight, log_target; values, gradients, reprs and errors."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import tidal
import tidal.nn as nn
import tidal.nn.functional as F
from nn_helpers import assert_close, assert_grads_close, backward_both, pair, require_backward, to_tidal

REDUCTIONS = ["mean", "sum", "none"]


@pytest.fixture
def rng():
    return np.random.default_rng(3)


def int_pair(values):
    arr = np.asarray(values, dtype=np.int64)
    return tidal.tensor(arr), torch.from_numpy(arr)


def check_loss(out, ref, rng, leaves, needs=("sum", "mean")):
    """Forward value, then gradients of every (tidal, torch) leaf pair."""
    assert_close(out, ref)
    require_backward(*needs)
    backward_both(out, ref, rng)
    assert_grads_close(leaves)


# -- regression losses --------------------------------------------------------------------------------
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("name,kwargs", [("mse_loss", {}), ("l1_loss", {}), ("smooth_l1_loss", {}),
                                         ("smooth_l1_loss", {"beta": 0.5}), ("smooth_l1_loss", {"beta": 0.0}),
                                         ("huber_loss", {}), ("huber_loss", {"delta": 0.3})])
def test_regression_losses(rng, name, kwargs, reduction):
    x, xr = pair(rng, (4, 5), requires_grad=True)
    y, yr = pair(rng, (4, 5), requires_grad=True)
    out = getattr(F, name)(x, y, reduction=reduction, **kwargs)
    ref = getattr(TF, name)(xr, yr, reduction=reduction, **kwargs)
    check_loss(out, ref, rng, [(x, xr), (y, yr)])


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("name", ["mse_loss", "l1_loss", "huber_loss"])
def test_weighted_regression_losses(rng, name, reduction):
    x, xr = pair(rng, (3, 4), requires_grad=True)
    y, yr = pair(rng, (3, 4))
    w, wr = pair(rng, (3, 4), low=0.1, high=2.0)
    out = getattr(F, name)(x, y, reduction=reduction, weight=w)
    ref = getattr(TF, name)(xr, yr, reduction=reduction, weight=wr)
    check_loss(out, ref, rng, [(x, xr)])
    with pytest.raises(ValueError, match="Weights and input must have the same size."):
        getattr(F, name)(x, y, weight=w[0])


def test_regression_broadcast_warning_and_legacy_args(rng):
    x, xr = pair(rng, (3, 1))
    y, yr = pair(rng, (3,))
    with pytest.warns(UserWarning, match=r"Using a target size \(tidal.Size\(\[3\]\)\) that is different to the "
                                         r"input size \(tidal.Size\(\[3, 1\]\)\)"):
        out = F.mse_loss(x, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_close(out, TF.mse_loss(xr, yr))
    with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated, please use "
                                         "reduction='sum' instead."):
        out = F.l1_loss(x[:, 0], y, size_average=False)
    assert_close(out, TF.l1_loss(xr[:, 0], yr, reduction="sum"))
    with pytest.warns(UserWarning):
        assert F.l1_loss(x[:, 0], y, reduce=False).shape == (3,)
    with pytest.raises(ValueError, match="bogus is not a valid value for reduction"):
        F.mse_loss(x, x, reduction="bogus")
    with pytest.raises(RuntimeError, match="smooth_l1_loss does not support negative values for beta."):
        F.smooth_l1_loss(x, x, beta=-1.0)
    with pytest.raises(RuntimeError, match="huber_loss does not support non-positive values for delta."):
        F.huber_loss(x, x, delta=0.0)


# -- classification ------------------------------------------------------------------------------
CE_CASES = [((5, 4), [0, 3, 1, 1, 2]), ((4,), 2), ((2, 3, 4), [[0, 2, 1, 2], [1, 1, 0, 2]]),
            ((2, 3, 2, 2), [[[0, 1], [2, 2]], [[1, 0], [0, 2]]])]


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("shape,target", CE_CASES, ids=[str(s) for s, _ in CE_CASES])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("label_smoothing", [0.0, 0.2])
def test_cross_entropy_class_targets(rng, shape, target, reduction, weighted, label_smoothing):
    x, xr = pair(rng, shape, requires_grad=True)
    t, tr = int_pair(target)
    classes = shape[0] if len(shape) == 1 else shape[1]
    w, wr = pair(rng, (classes,), low=0.2, high=2.0) if weighted else (None, None)
    out = F.cross_entropy(x, t, w, reduction=reduction, label_smoothing=label_smoothing)
    ref = TF.cross_entropy(xr, tr, wr, reduction=reduction, label_smoothing=label_smoothing)
    check_loss(out, ref, rng, [(x, xr)], needs=("sum", "mean", "log_softmax", "gather", "index_select",
                                                 "unsqueeze"))


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("label_smoothing", [0.0, 0.3])
def test_cross_entropy_ignore_index(rng, reduction, weighted, label_smoothing):
    x, xr = pair(rng, (6, 3), requires_grad=True)
    t, tr = int_pair([0, -100, 2, 1, -100, 2])
    w, wr = pair(rng, (3,), low=0.2, high=2.0) if weighted else (None, None)
    out = F.cross_entropy(x, t, w, reduction=reduction, label_smoothing=label_smoothing)
    ref = TF.cross_entropy(xr, tr, wr, reduction=reduction, label_smoothing=label_smoothing)
    check_loss(out, ref, rng, [(x, xr)], needs=("sum", "mean", "log_softmax", "gather", "index_select",
                                                 "unsqueeze", "masked_fill"))
    t2, tr2 = int_pair([0, 1, 1, 2, 2, 0])
    assert_close(F.cross_entropy(x, t2, ignore_index=1), TF.cross_entropy(xr, tr2, ignore_index=1))


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("label_smoothing", [0.0, 0.25])
@pytest.mark.parametrize("shape", [(4, 3), (2, 3, 5)])
def test_cross_entropy_probability_targets(rng, shape, reduction, weighted, label_smoothing):
    x, xr = pair(rng, shape, requires_grad=True)
    p = rng.random(shape)
    p = p / p.sum(1, keepdims=True)
    t, tr = tidal.tensor(p), torch.from_numpy(p)
    w, wr = pair(rng, (3,), low=0.2, high=2.0) if weighted else (None, None)
    out = F.cross_entropy(x, t, w, reduction=reduction, label_smoothing=label_smoothing)
    ref = TF.cross_entropy(xr, tr, wr, reduction=reduction, label_smoothing=label_smoothing)
    check_loss(out, ref, rng, [(x, xr)], needs=("sum", "mean", "log_softmax", "reshape"))


def test_cross_entropy_float32_and_errors(rng):
    x, xr = pair(rng, (8, 5), "float32")
    t, tr = int_pair(rng.integers(0, 5, 8))
    assert_close(F.cross_entropy(x, t), TF.cross_entropy(xr, tr))
    assert F.cross_entropy(x, t).dtype is tidal.float32
    with pytest.raises(ValueError, match=r"Expected input batch_size \(8\) to match target batch_size \(3\)."):
        F.cross_entropy(x, t[:3])
    with pytest.raises(RuntimeError, match="label_smoothing must be between 0.0 and 1.0. Got: 1.5"):
        F.cross_entropy(x, t, label_smoothing=1.5)
    with pytest.raises(RuntimeError, match="weight tensor should be defined either for all 5 classes or no classes"):
        F.cross_entropy(x, t, weight=tidal.ones(3))
    ignore_all = tidal.full((8,), -100, dtype=tidal.int64)
    assert np.isnan(F.cross_entropy(x, ignore_all).item())  # 0/0, as torch
    assert np.isnan(TF.cross_entropy(xr, torch.full((8,), -100)).item())


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
def test_nll_loss(rng, reduction, weighted):
    x, xr = pair(rng, (5, 4), requires_grad=True)
    t, tr = int_pair([3, 0, -100, 1, 3])
    w, wr = pair(rng, (4,), low=0.2, high=2.0) if weighted else (None, None)
    out, ref = F.nll_loss(x, t, w, reduction=reduction), TF.nll_loss(xr, tr, wr, reduction=reduction)
    check_loss(out, ref, rng, [(x, xr)], needs=("sum", "gather", "index_select", "unsqueeze"))
    x1, x1r = pair(rng, (4,))
    t1, t1r = int_pair(2)
    assert_close(F.nll_loss(x1, t1), TF.nll_loss(x1r, t1r))


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
def test_binary_cross_entropy(rng, reduction, weighted):
    x, xr = pair(rng, (4, 3), requires_grad=True, low=0.02, high=0.98)
    y, yr = pair(rng, (4, 3), low=0.0, high=1.0)
    w, wr = pair(rng, (3,), low=0.5, high=2.0) if weighted else (None, None)
    out = F.binary_cross_entropy(x, y, w, reduction=reduction)
    ref = TF.binary_cross_entropy(xr, yr, wr, reduction=reduction)
    check_loss(out, ref, rng, [(x, xr)])
    edge = np.array([0.0, 1.0, 0.5])
    assert_close(F.binary_cross_entropy(tidal.tensor(edge), tidal.tensor(1 - edge)),
                 TF.binary_cross_entropy(torch.from_numpy(edge), torch.from_numpy(1 - edge)))  # log clamped at -100
    with pytest.raises(ValueError, match="that is different to the input size"):
        F.binary_cross_entropy(x, y[0])


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("pos_weighted", [False, True])
def test_binary_cross_entropy_with_logits(rng, reduction, weighted, pos_weighted):
    x, xr = pair(rng, (4, 3), requires_grad=True)
    x, xr = (x * 30).detach().requires_grad_(), (xr * 30).detach().requires_grad_()  # large logits stay stable
    y, yr = pair(rng, (4, 3), low=0.0, high=1.0)
    w, wr = pair(rng, (3,), low=0.5, high=2.0) if weighted else (None, None)
    pw, pwr = pair(rng, (3,), low=0.5, high=3.0) if pos_weighted else (None, None)
    out = F.binary_cross_entropy_with_logits(x, y, w, reduction=reduction, pos_weight=pw)
    ref = TF.binary_cross_entropy_with_logits(xr, yr, wr, reduction=reduction, pos_weight=pwr)
    check_loss(out, ref, rng, [(x, xr)])
    with pytest.raises(ValueError, match=r"Target size \(tidal.Size\(\[3\]\)\) must be the same as input size"):
        F.binary_cross_entropy_with_logits(x, y[0])


@pytest.mark.parametrize("reduction", ["mean", "sum", "none", "batchmean"])
@pytest.mark.parametrize("log_target", [False, True])
def test_kl_div(rng, reduction, log_target):
    x, xr = pair(rng, (3, 4), requires_grad=True)
    p = rng.random((3, 4))
    p[0, 1] = 0.0  # 0 * log 0 = 0
    p = np.log(p + 1e-3) if log_target else p
    t, tr = tidal.tensor(p), torch.from_numpy(p)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = F.kl_div(x, t, reduction=reduction, log_target=log_target)
        ref = TF.kl_div(xr, tr, reduction=reduction, log_target=log_target)
    check_loss(out, ref, rng, [(x, xr)])
    if reduction == "mean":
        with pytest.warns(UserWarning, match="reduction: 'mean' divides the total loss by both the batch size"):
            F.kl_div(x, t, reduction="mean")


# -- other losses -----------------------------------------------------------------------------------
def test_other_losses(rng):
    x, xr = pair(rng, (4, 5))
    y, yr = pair(rng, (4, 5))
    sign = np.where(rng.random(4) < 0.5, -1.0, 1.0)
    s, sr = tidal.tensor(sign), torch.from_numpy(sign)
    s2 = np.where(rng.random((4, 5)) < 0.5, -1.0, 1.0)
    assert_close(F.poisson_nll_loss(x, y.abs()), TF.poisson_nll_loss(xr, yr.abs()))
    assert_close(F.poisson_nll_loss(x.abs(), y.abs() * 3, log_input=False, full=True),
                 TF.poisson_nll_loss(xr.abs(), yr.abs() * 3, log_input=False, full=True))
    assert_close(F.gaussian_nll_loss(x, y, y.abs() + 0.1), TF.gaussian_nll_loss(xr, yr, yr.abs() + 0.1))
    assert_close(F.gaussian_nll_loss(x, y, (y.abs())[:, 0], full=True, reduction="sum"),
                 TF.gaussian_nll_loss(xr, yr, (yr.abs())[:, 0], full=True, reduction="sum"))
    assert_close(F.margin_ranking_loss(x[:, 0], y[:, 0], s, 0.2), TF.margin_ranking_loss(xr[:, 0], yr[:, 0], sr, 0.2))
    assert_close(F.hinge_embedding_loss(x, tidal.tensor(s2), 0.5), TF.hinge_embedding_loss(xr, torch.from_numpy(s2),
                                                                                          0.5))
    assert_close(F.soft_margin_loss(x, tidal.tensor(s2)), TF.soft_margin_loss(xr, torch.from_numpy(s2)))
    assert_close(F.cosine_embedding_loss(x, y, s, 0.1), TF.cosine_embedding_loss(xr, yr, sr, 0.1))
    z, zr = pair(rng, (4, 5))
    assert_close(F.triplet_margin_loss(x, y, z), TF.triplet_margin_loss(xr, yr, zr))
    assert_close(F.triplet_margin_loss(x, y, z, swap=True, p=1), TF.triplet_margin_loss(xr, yr, zr, swap=True, p=1))
    lbl = (rng.random((4, 5)) < 0.5).astype(np.float64)
    w, wr = pair(rng, (5,), low=0.5, high=2.0)
    assert_close(F.multilabel_soft_margin_loss(x, tidal.tensor(lbl), w),
                 TF.multilabel_soft_margin_loss(xr, torch.from_numpy(lbl), wr))
    with pytest.raises(ValueError, match="var has negative entry/entries"):
        F.gaussian_nll_loss(x, y, -y.abs() - 1)


# -- loss modules ------------------------------------------------------------------------------------
MODULES = [("MSELoss", {}), ("L1Loss", {"reduction": "sum"}), ("SmoothL1Loss", {"beta": 0.5}),
           ("HuberLoss", {"delta": 0.5, "reduction": "none"}), ("SoftMarginLoss", {}),
           ("BCEWithLogitsLoss", {"pos_weight": np.array([1.0, 2.0, 0.5])}), ("KLDivLoss", {"reduction": "batchmean"}),
           ("BCELoss", {"weight": np.array([1.0, 2.0, 0.5])})]


@pytest.mark.parametrize("name,kwargs", MODULES, ids=[n for n, _ in MODULES])
def test_elementwise_loss_modules(rng, name, kwargs):
    tk = {k: (to_tidal(torch.from_numpy(v)) if isinstance(v, np.ndarray) else v) for k, v in kwargs.items()}
    rk = {k: (torch.from_numpy(v) if isinstance(v, np.ndarray) else v) for k, v in kwargs.items()}
    mod, ref = getattr(nn, name)(**tk), getattr(torch.nn, name)(**rk)
    assert repr(mod) == repr(ref)
    assert list(mod.state_dict()) == list(ref.state_dict())
    x, xr = pair(rng, (4, 3), low=0.05, high=0.95)
    y, yr = pair(rng, (4, 3), low=0.0, high=1.0)
    assert_close(mod(x, y), ref(xr, yr))


def test_class_loss_modules(rng):
    w, wr = pair(rng, (4,), low=0.5, high=2.0)
    mod = nn.CrossEntropyLoss(weight=w, ignore_index=1, label_smoothing=0.1)
    ref = torch.nn.CrossEntropyLoss(weight=wr, ignore_index=1, label_smoothing=0.1)
    assert list(mod.state_dict()) == ["weight"] and repr(mod) == repr(ref)
    x, xr = pair(rng, (6, 4))
    t, tr = int_pair([0, 1, 2, 3, 3, 1])
    assert_close(mod(x, t), ref(xr, tr))
    assert_close(nn.NLLLoss(reduction="sum")(x, t), torch.nn.NLLLoss(reduction="sum")(xr, tr))
    with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated"):
        legacy = nn.MSELoss(size_average=False)
    assert legacy.reduction == "sum"
    assert repr(nn.TripletMarginLoss(margin=2.0)) == repr(torch.nn.TripletMarginLoss(margin=2.0))
    a, ar = pair(rng, (3, 5))
    assert_close(nn.TripletMarginLoss(margin=0.5)(a, a * 2, -a), torch.nn.TripletMarginLoss(margin=0.5)(ar, ar * 2,
                                                                                                     -ar))
    assert_close(nn.CosineEmbeddingLoss(0.2)(a, a * 0.5 + 1, tidal.tensor([1.0, -1.0, 1.0])),
                 torch.nn.CosineEmbeddingLoss(0.2)(ar, ar * 0.5 + 1, torch.tensor([1.0, -1.0, 1.0],
                                                                                  dtype=torch.float64)))
    assert_close(nn.GaussianNLLLoss()(a, a * 2, a.abs() + 0.5), torch.nn.GaussianNLLLoss()(ar, ar * 2, ar.abs() + 0.5))
    assert_close(nn.PoissonNLLLoss()(a, a.abs()), torch.nn.PoissonNLLLoss()(ar, ar.abs()))
    assert_close(nn.MultiLabelSoftMarginLoss()(a, (a > 0).double()),
                 torch.nn.MultiLabelSoftMarginLoss()(ar, (ar > 0).double()))
    assert_close(nn.HingeEmbeddingLoss()(a[0], tidal.tensor([1.0, -1, 1, -1, 1])),
                 torch.nn.HingeEmbeddingLoss()(ar[0], torch.tensor([1.0, -1, 1, -1, 1], dtype=torch.float64)))
    assert_close(nn.MarginRankingLoss(0.1)(a[0], a[1], tidal.tensor([1.0, -1, 1, -1, 1])),
                 torch.nn.MarginRankingLoss(0.1)(ar[0], ar[1], torch.tensor([1.0, -1, 1, -1, 1],
                                                                              dtype=torch.float64)))


@pytest.mark.parametrize("fn", ["cross_entropy", "nll_loss"])
@pytest.mark.parametrize("target", [[0, 5], [0, -3], [3, 1]])
def test_out_of_range_target_raises_torchs_error_at_the_call(fn, target):
    import torch
    logits = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)
    with pytest.raises(IndexError) as theirs:
        getattr(torch.nn.functional, fn)(torch.tensor(logits), torch.tensor(target))
    with pytest.raises(IndexError) as ours:
        getattr(tidal.nn.functional, fn)(tidal.tensor(logits), tidal.tensor(target))
    assert str(ours.value) == str(theirs.value)

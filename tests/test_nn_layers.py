"""tidal.nn layers against torch.nn with identical weights: forward values, input and parameter gradients,
reprs, default initialization shapes, state_dict keys, and train/eval behaviour."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import tidal
import tidal.nn as nn
from nn_helpers import (assert_close, assert_grads_close, backward_both, load_from_torch, pair, require_backward,
                        torch_repr)


@pytest.fixture
def rng():
    return np.random.default_rng(11)


def make_pair(name: str, *args, **kwargs):
    """The same layer in tidal and torch, float64, with torch's weights copied into tidal."""
    ref = getattr(torch.nn, name)(*args, **kwargs).double()
    mod = getattr(nn, name)(*args, **kwargs).double()
    load_from_torch(mod, ref)
    return mod, ref


def param_pairs(mod, ref) -> list:
    ref_params = dict(ref.named_parameters())
    return [(p, ref_params[n]) for n, p in mod.named_parameters()]


# (layer name, constructor args, kwargs, input shape, ops whose backward the gradient check needs)
LAYERS = [
    ("Linear", (3, 4), {}, (5, 3), ("matmul", "transpose")),
    ("Linear", (3, 4), {"bias": False}, (2, 6, 3), ("matmul", "transpose")),
    ("Bilinear", (3, 2, 4), {}, None, ("matmul", "permute", "reshape", "unsqueeze", "sum")),
    ("Identity", (), {}, (3, 2), ()),
    ("Flatten", (), {}, (2, 3, 4), ("reshape",)),
    ("Flatten", (0, 1), {}, (2, 3, 4), ("reshape",)),
    ("Unflatten", (1, (2, 3)), {}, (4, 6), ("reshape",)),
    ("LayerNorm", ((4,),), {}, (3, 4), ("mean",)),
    ("LayerNorm", ((3, 4),), {"elementwise_affine": False}, (2, 3, 4), ("mean",)),
    ("LayerNorm", (4,), {"bias": False, "eps": 1e-3}, (2, 4), ("mean",)),
    ("RMSNorm", (4,), {}, (3, 4), ("mean",)),
    ("RMSNorm", ((2, 4),), {"eps": 1e-2, "elementwise_affine": False}, (3, 2, 4), ("mean",)),
    ("GroupNorm", (2, 6), {}, (3, 6, 4), ("reshape", "mean")),
    ("GroupNorm", (3, 3), {"affine": False}, (2, 3, 2, 2), ("reshape", "mean")),
    ("LocalResponseNorm", (3,), {}, (2, 5, 3), ("cat", "narrow", "unsqueeze")),
    ("PReLU", (), {}, (3, 4), ()),
    ("PReLU", (4,), {"init": 0.1}, (3, 4, 2), ("reshape",)),
    ("Softmax", (1,), {}, (3, 4), ("sum",)),
    ("LogSoftmax", (-1,), {}, (3, 4), ("sum",)),
    ("Softmin", (0,), {}, (3, 4), ("sum",)),
    ("Softmax2d", (), {}, (2, 3, 2, 2), ("sum",)),
    ("GLU", (), {}, (3, 4), ("split",)),
    ("ZeroPad2d", ((1, 2, 0, 1),), {}, (1, 2, 3, 3), ("cat", "narrow")),
    ("ConstantPad1d", (2, 3.5), {}, (2, 3, 4), ("cat", "narrow")),
    ("ReflectionPad2d", (1,), {}, (1, 2, 3, 3), ("index_select",)),
    ("ReplicationPad1d", ((2, 1),), {}, (2, 3, 4), ("index_select",)),
    ("CircularPad2d", (1,), {}, (1, 1, 3, 3), ("index_select",)),
    ("Upsample", (), {"scale_factor": 2, "mode": "bilinear"}, (1, 2, 3, 3), ("index_select",)),
    ("Upsample", (), {"size": (4, 5)}, (1, 2, 3, 3), ("index_select",)),
    ("UpsamplingBilinear2d", (), {"scale_factor": 2}, (1, 2, 3, 3), ("index_select",)),
    ("PixelShuffle", (2,), {}, (1, 8, 2, 3), ("reshape", "permute")),
    ("PixelUnshuffle", (2,), {}, (1, 2, 4, 6), ("reshape", "permute")),
    ("CosineSimilarity", (), {}, None, ("norm", "sum", "broadcast_tensors")),
    ("PairwiseDistance", (), {}, None, ("norm",)),
]
ACTIVATION_LAYERS = [("ReLU", ()), ("ReLU6", ()), ("GELU", ()), ("GELU", ("tanh",)), ("SiLU", ()), ("Sigmoid", ()),
                     ("Tanh", ()), ("Softplus", (2.0, 5.0)), ("ELU", (0.5,)), ("SELU", ()), ("CELU", (1.5,)),
                     ("LeakyReLU", (0.2,)), ("Hardswish", ()), ("Hardsigmoid", ()), ("Hardtanh", (-2.0, 2.0)),
                     ("Mish", ()), ("LogSigmoid", ()), ("Softsign", ()), ("Tanhshrink", ()), ("Softshrink", (0.3,)),
                     ("Hardshrink", (0.3,)), ("Threshold", (0.1, 20.0))]
LAYERS += [(name, args, {}, (3, 4), ()) for name, args in ACTIVATION_LAYERS]


def _inputs(name: str, shape, rng):
    if name == "Bilinear":
        return [pair(rng, (5, 3), requires_grad=True), pair(rng, (5, 2), requires_grad=True)]
    if name in ("CosineSimilarity", "PairwiseDistance"):
        return [pair(rng, (4, 5), requires_grad=True), pair(rng, (4, 5), requires_grad=True)]
    return [pair(rng, shape, requires_grad=True)]


@pytest.mark.parametrize("name,args,kwargs,shape,needs", LAYERS,
                         ids=[f"{n}-{a}-{k}" for n, a, k, s, _ in LAYERS])
def test_layer_matches_torch(rng, name, args, kwargs, shape, needs):
    mod, ref = make_pair(name, *args, **kwargs)
    assert repr(mod) == torch_repr(repr(ref))
    assert list(mod.state_dict()) == list(ref.state_dict())
    inputs = _inputs(name, shape, rng)
    out = mod(*[t for t, _ in inputs])
    expected = ref(*[r for _, r in inputs])
    assert_close(out, expected)
    require_backward(*needs)
    backward_both(out, expected, rng)
    # activations built in the op library round some constants to float32 (Hardsigmoid's 1/6)
    tol = (1e-7, 1e-9) if (name, args) in ACTIVATION_LAYERS else (None, None)
    assert_grads_close(inputs + param_pairs(mod, ref), *tol)


# -- default initialization ------------------------------------------------------------------------
def test_linear_default_init_bounds():
    tidal.manual_seed(0)
    m = nn.Linear(50, 30)
    bound = 1 / math.sqrt(50)  # kaiming_uniform_(a=sqrt(5)) gives the same bound as the bias
    w, b = m.weight.detach().numpy(), m.bias.detach().numpy()
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.9 * bound
    assert np.abs(b).max() <= bound
    assert abs(w.std() - bound / math.sqrt(3)) < 0.1 * bound
    tidal.manual_seed(0)
    np.testing.assert_array_equal(nn.Linear(50, 30).weight.detach().numpy(), w)  # reproducible


def test_other_default_inits():
    tidal.manual_seed(1)
    e = nn.Embedding(300, 20, padding_idx=3)
    w = e.weight.detach().numpy()
    assert abs(w.std() - 1) < 0.05 and (w[3] == 0).all()
    ln = nn.LayerNorm(5)
    assert (ln.weight.detach().numpy() == 1).all() and (ln.bias.detach().numpy() == 0).all()
    bil = nn.Bilinear(16, 3, 4)
    assert np.abs(bil.weight.detach().numpy()).max() <= 0.25
    pr = nn.PReLU(3, init=0.3)
    np.testing.assert_allclose(pr.weight.detach().numpy(), 0.3, rtol=1e-6)


def test_layers_factory_kwargs():
    m = nn.Linear(2, 3, dtype=tidal.float64)
    assert m.weight.dtype is tidal.float64 and m.bias.dtype is tidal.float64
    assert nn.LayerNorm(3, dtype=tidal.float16).weight.dtype is tidal.float16
    bn = nn.BatchNorm1d(3, dtype=tidal.float64)
    assert bn.running_mean.dtype is tidal.float64 and bn.num_batches_tracked.dtype is tidal.int64


# -- dropout modules -----------------------------------------------------------------------------
def test_dropout_train_eval():
    d = nn.Dropout(0.25)
    assert repr(d) == "Dropout(p=0.25, inplace=False)"
    x = tidal.ones(100, 100)
    tidal.manual_seed(0)
    y = d(x).numpy()
    assert abs((y == 0).mean() - 0.25) < 0.02
    d.eval()
    assert d(x) is x
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but got -0.1"):
        nn.Dropout(-0.1)
    for cls in ("Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout"):
        assert repr(getattr(nn, cls)(0.3, True)) == repr(getattr(torch.nn, cls)(0.3, True))


# -- embedding -----------------------------------------------------------------------------------
@pytest.mark.parametrize("kwargs", [{}, {"padding_idx": 1}, {"padding_idx": -2, "scale_grad_by_freq": True},
                                    {"max_norm": 1.0, "norm_type": 1.0}])
def test_embedding_module(rng, kwargs):
    mod, ref = make_pair("Embedding", 7, 3, **kwargs)
    assert repr(mod) == repr(ref)
    idx = np.array([[1, 2, 4], [4, 3, 1]])
    out, expected = mod(tidal.tensor(idx)), ref(torch.from_numpy(idx))
    assert_close(out, expected)
    backward_both(out, expected, rng)
    assert_grads_close(param_pairs(mod, ref))


def test_embedding_from_pretrained():
    w = tidal.tensor([[1.0, 2.0], [3.0, 4.0]])
    e = nn.Embedding.from_pretrained(w)
    assert not e.weight.requires_grad and e(tidal.tensor([1])).tolist() == [[3.0, 4.0]]
    assert nn.Embedding.from_pretrained(w, freeze=False).weight.requires_grad
    assert repr(e) == "Embedding(2, 2)"


# -- batch norm ----------------------------------------------------------------------------------
@pytest.mark.parametrize("name,shape", [("BatchNorm1d", (6, 3)), ("BatchNorm1d", (4, 3, 5)),
                                        ("BatchNorm2d", (2, 3, 4, 4)), ("BatchNorm3d", (2, 3, 2, 2, 2))])
@pytest.mark.parametrize("kwargs", [{}, {"momentum": None}, {"affine": False, "momentum": 0.3},
                                    {"track_running_stats": False}])
def test_batchnorm_train_then_eval(rng, name, shape, kwargs):
    mod, ref = make_pair(name, 3, **kwargs)
    assert repr(mod) == repr(ref)
    assert list(mod.state_dict()) == list(ref.state_dict())
    for _ in range(3):
        x, xr = pair(rng, shape)
        assert_close(mod(x), ref(xr))
    for key, value in ref.state_dict().items():
        assert_close(mod.state_dict()[key], value)  # running stats and num_batches_tracked
    mod.eval()
    ref.eval()
    x, xr = pair(rng, shape)
    assert_close(mod(x), ref(xr))
    for key, value in ref.state_dict().items():
        assert_close(mod.state_dict()[key], value)  # eval mode leaves them alone


def test_batchnorm_backward_and_errors(rng):
    mod, ref = make_pair("BatchNorm2d", 3)
    x, xr = pair(rng, (2, 3, 2, 3), requires_grad=True)
    out, expected = mod(x), ref(xr)
    require_backward("mean", "reshape")
    backward_both(out, expected, rng)
    assert_grads_close([(x, xr)] + param_pairs(mod, ref))
    with pytest.raises(ValueError, match=r"expected 4D input \(got 3D input\)"):
        mod(tidal.ones(2, 3, 4))
    with pytest.raises(ValueError, match=r"expected 2D or 3D input \(got 4D input\)"):
        nn.BatchNorm1d(3)(tidal.ones(2, 3, 4, 4))
    with pytest.raises(ValueError, match="Expected more than 1 value per channel when training"):
        nn.BatchNorm1d(3)(tidal.ones(1, 3))


def test_batchnorm_reset_and_old_checkpoints():
    bn = nn.BatchNorm1d(2)
    bn(tidal.randn(4, 2))
    assert bn.num_batches_tracked.item() == 1
    bn.reset_running_stats()
    assert bn.num_batches_tracked.item() == 0 and bn.running_var.tolist() == [1.0, 1.0]
    sd = type(bn.state_dict())((k, v) for k, v in bn.state_dict().items() if k != "num_batches_tracked")
    sd._metadata = {"": {"version": 2}}
    with pytest.raises(RuntimeError, match='Missing key\\(s\\) in state_dict: "num_batches_tracked"'):
        bn.load_state_dict(sd)
    sd._metadata = {"": {"version": 1}}  # a checkpoint from before num_batches_tracked existed
    assert repr(bn.load_state_dict(sd)) == "<All keys matched successfully>"
    assert repr(bn.load_state_dict(dict(sd))) == "<All keys matched successfully>"  # no metadata: same


@pytest.mark.parametrize("name,shape", [("InstanceNorm1d", (2, 3, 5)), ("InstanceNorm1d", (3, 5)),
                                        ("InstanceNorm2d", (2, 3, 3, 4)), ("InstanceNorm3d", (2, 3, 2, 2, 3))])
@pytest.mark.parametrize("kwargs", [{}, {"affine": True}, {"track_running_stats": True, "momentum": 0.2}])
def test_instancenorm(rng, name, shape, kwargs):
    mod, ref = make_pair(name, 3, **kwargs)
    assert repr(mod) == repr(ref)
    for _ in range(2):
        x, xr = pair(rng, shape)
        assert_close(mod(x), ref(xr))
    for key, value in ref.state_dict().items():
        assert_close(mod.state_dict()[key], value)
    mod.eval()
    ref.eval()
    x, xr = pair(rng, shape)
    assert_close(mod(x), ref(xr))


# -- reprs of layers not exercised above ----------------------------------------------------------------
@pytest.mark.parametrize("build", [
    lambda m: m.ReLU(inplace=True), lambda m: m.ELU(0.5, True), lambda m: m.LeakyReLU(0.2, True),
    lambda m: m.Threshold(0.1, 20, True), lambda m: m.Hardtanh(-2, 2), lambda m: m.ReLU6(True), lambda m: m.SiLU(True),
    lambda m: m.Softplus(2, 10), lambda m: m.Softmax(), lambda m: m.RReLU(0.1, 0.2), lambda m: m.Flatten(0, 2),
    lambda m: m.Unflatten(1, (2, 3)), lambda m: m.Embedding(10, 3, padding_idx=0, max_norm=1.0,
                                                           scale_grad_by_freq=True, sparse=True),
    lambda m: m.GroupNorm(2, 4), lambda m: m.BatchNorm2d(3, affine=False, track_running_stats=False),
    lambda m: m.LayerNorm([2, 3], elementwise_affine=False), lambda m: m.RMSNorm(4),
    lambda m: m.Upsample(scale_factor=2, mode="bilinear"), lambda m: m.Upsample(size=(3, 4)),
    lambda m: m.ReflectionPad1d((1, 2)), lambda m: m.ConstantPad2d(2, 3.5), lambda m: m.ReplicationPad3d(1),
    lambda m: m.CircularPad1d(2), lambda m: m.ZeroPad1d(1), lambda m: m.ZeroPad3d((1, 0, 1, 0, 2, 2)),
    lambda m: m.LocalResponseNorm(3), lambda m: m.MSELoss(), lambda m: m.CrossEntropyLoss(label_smoothing=0.1),
    lambda m: m.Identity(3, unused=True), lambda m: m.GELU("tanh"), lambda m: m.Softshrink(0.2)])
def test_reprs(build):
    assert repr(build(nn)) == repr(build(torch.nn))


def test_layers_under_no_grad_and_half(rng):
    mod, ref = make_pair("Linear", 3, 2)
    x, _ = pair(rng, (4, 3))
    with tidal.no_grad():
        out = mod(x)
    assert out.grad_fn is None and not out.requires_grad
    ln = nn.LayerNorm(4).half()
    y = ln(tidal.randn(2, 4).half())
    assert y.dtype is tidal.float16
    ref_ln = torch.nn.LayerNorm(4).half()
    x16 = tidal.randn(3, 4).half()
    assert_close(ln(x16), ref_ln(torch.from_numpy(x16.numpy())), dtype="float16")


def test_training_steps_match_torch(rng):
    """A few SGD steps of a small classifier (Linear, LayerNorm, GELU, dropout off) track torch's exactly."""
    def build(m):
        return m.Sequential(m.Linear(6, 16), m.LayerNorm(16), m.GELU(), m.Dropout(0.0), m.Linear(16, 4))
    ref = build(torch.nn).double()
    mod = build(nn).double()
    load_from_torch(mod, ref)
    require_backward("matmul", "transpose", "mean", "log_softmax", "gather")
    x = rng.standard_normal((10, 6))
    y = rng.integers(0, 4, 10)
    for _ in range(5):
        loss = nn.functional.cross_entropy(mod(tidal.tensor(x)), tidal.tensor(y), label_smoothing=0.1)
        ref_loss = torch.nn.functional.cross_entropy(ref(torch.from_numpy(x)), torch.from_numpy(y),
                                                     label_smoothing=0.1)
        assert_close(loss, ref_loss)
        mod.zero_grad()
        ref.zero_grad()
        loss.backward()
        ref_loss.backward()
        with tidal.no_grad():
            for p in mod.parameters():
                p.sub_(p.grad * 0.5)
        with torch.no_grad():
            for p in ref.parameters():
                p.sub_(p.grad * 0.5)
    for key, value in ref.state_dict().items():
        assert_close(mod.state_dict()[key], value, rtol=1e-8, atol=1e-10)

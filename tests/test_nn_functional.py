"""tidal.nn.functional against torch.nn.functional: activations, linear, softmax, dropout, normalization,
embedding, one_hot, pad, interpolate, distances. Forward values in several dtypes, gradients where the
op library supports them, and errors."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import tidal
import tidal.nn.functional as F
from nn_helpers import assert_close, assert_grads_close, backward_both, pair, require_backward


@pytest.fixture
def rng():
    return np.random.default_rng(7)


# -- activations -------------------------------------------------------------------------------------
ACTIVATIONS = [("relu", {}), ("relu6", {}), ("gelu", {}), ("gelu", {"approximate": "tanh"}), ("silu", {}),
               ("mish", {}), ("elu", {"alpha": 0.7}), ("selu", {}), ("celu", {"alpha": 1.3}),
               ("leaky_relu", {"negative_slope": 0.2}), ("hardtanh", {"min_val": -0.5, "max_val": 0.8}),
               ("hardswish", {}), ("hardsigmoid", {}), ("softplus", {"beta": 2.0, "threshold": 5.0}),
               ("logsigmoid", {}), ("softsign", {}), ("tanhshrink", {}), ("softshrink", {"lambd": 0.3}),
               ("hardshrink", {"lambd": 0.3}), ("sigmoid", {}), ("tanh", {}), ("threshold", {"threshold": 0.1,
                                                                                          "value": -2.0})]


@pytest.mark.parametrize("name,kwargs", ACTIVATIONS, ids=[f"{n}-{k}" for n, k in ACTIVATIONS])
@pytest.mark.parametrize("dtype", ["float64", "float32", "bfloat16"])
def test_activations_forward(rng, name, kwargs, dtype):
    x, xr = pair(rng, (3, 5), dtype)
    assert_close(getattr(F, name)(x, **kwargs), getattr(TF, name)(xr, **kwargs), dtype=dtype)


@pytest.mark.parametrize("name,kwargs", ACTIVATIONS, ids=[f"{n}-{k}" for n, k in ACTIVATIONS])
def test_activations_backward(rng, name, kwargs):
    x, xr = pair(rng, (4, 3), requires_grad=True)
    backward_both(getattr(F, name)(x, **kwargs), getattr(TF, name)(xr, **kwargs), rng)
    assert_grads_close([(x, xr)], rtol=1e-7, atol=1e-9)  # celu's composite rounds alpha to float32


def test_glu_prelu_rrelu(rng):
    x, xr = pair(rng, (3, 4, 2))
    assert_close(F.glu(x, 1), TF.glu(xr, 1))
    assert_close(F.glu(x), TF.glu(xr))
    with pytest.raises(RuntimeError, match="Halving dimension must be even"):
        F.glu(tidal.ones(3, 3))
    w, wr = pair(rng, (4,))
    assert_close(F.prelu(x, w), TF.prelu(xr, wr))
    assert_close(F.prelu(x, w[:1]), TF.prelu(xr, wr[:1]))
    assert_close(F.rrelu(x, training=False), TF.rrelu(xr, training=False))
    y = F.rrelu(x, 0.1, 0.3, training=True).numpy()
    xs = x.numpy()
    ratio = y[xs < 0] / xs[xs < 0]
    assert (ratio >= 0.1 - 1e-12).all() and (ratio <= 0.3 + 1e-12).all() and (y[xs >= 0] == xs[xs >= 0]).all()


def test_inplace_activation_returns_input(rng):
    x, xr = pair(rng, (3, 4))
    out = F.relu(x, inplace=True)
    assert out is x or out.untyped_storage_id() == x.untyped_storage_id()
    assert_close(x, TF.relu(xr))


# -- linear and softmax ------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(5, 3), (2, 4, 3), (3,)])
@pytest.mark.parametrize("bias", [True, False])
def test_linear(rng, shape, bias):
    x, xr = pair(rng, shape, requires_grad=True)
    w, wr = pair(rng, (4, 3), requires_grad=True)
    b, br = pair(rng, (4,), requires_grad=True) if bias else (None, None)
    out, ref = F.linear(x, w, b), TF.linear(xr, wr, br)
    assert_close(out, ref)
    require_backward("matmul", "transpose")
    backward_both(out, ref, rng)
    assert_grads_close([(x, xr), (w, wr)] + ([(b, br)] if bias else []))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
def test_linear_low_precision(rng, dtype):
    x, xr = pair(rng, (6, 5), dtype)
    w, wr = pair(rng, (3, 5), dtype)
    b, br = pair(rng, (3,), dtype)
    out = F.linear(x, w, b)
    assert out.dtype is getattr(tidal, dtype)
    assert_close(out, TF.linear(xr, wr, br), dtype=dtype)
    t = tidal.tensor([0, 2, 1, 1, 0, 2])
    assert_close(F.cross_entropy(out, t), TF.cross_entropy(TF.linear(xr, wr, br), torch.from_numpy(t.numpy())),
                 dtype=dtype)


def test_bilinear(rng):
    x1, x1r = pair(rng, (5, 3), requires_grad=True)
    x2, x2r = pair(rng, (5, 2), requires_grad=True)
    w, wr = pair(rng, (4, 3, 2), requires_grad=True)
    b, br = pair(rng, (4,), requires_grad=True)
    out, ref = F.bilinear(x1, x2, w, b), TF.bilinear(x1r, x2r, wr, br)
    assert_close(out, ref)
    require_backward("matmul", "permute", "reshape", "unsqueeze", "sum")
    backward_both(out, ref, rng)
    assert_grads_close([(x1, x1r), (x2, x2r), (w, wr), (b, br)])


@pytest.mark.parametrize("fn", ["softmax", "log_softmax", "softmin"])
@pytest.mark.parametrize("dtype", ["float64", "float32", "float16"])
def test_softmax_family(rng, fn, dtype):
    x, xr = pair(rng, (3, 4, 5), dtype)
    for dim in (0, 1, -1):
        assert_close(getattr(F, fn)(x, dim), getattr(TF, fn)(xr, dim), dtype=dtype)
    assert_close(getattr(F, fn)(x, 1, dtype=tidal.float64), getattr(TF, fn)(xr, 1, dtype=torch.float64))
    with pytest.warns(UserWarning, match=f"Implicit dimension choice for {fn} has been deprecated"):
        out = getattr(F, fn)(x)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_close(out, getattr(TF, fn)(xr), dtype=dtype)


def test_softmax_backward(rng):
    x, xr = pair(rng, (3, 6), requires_grad=True)
    backward_both(F.log_softmax(x, 1) * 2 + F.softmax(x, 0), TF.log_softmax(xr, 1) * 2 + TF.softmax(xr, 0), rng)
    assert_grads_close([(x, xr)])


def test_gumbel_softmax(rng):
    logits = tidal.tensor(np.log(np.array([[0.7, 0.2, 0.1]] * 4000)))
    tidal.manual_seed(0)
    soft = F.gumbel_softmax(logits, tau=0.5)
    np.testing.assert_allclose(soft.sum(-1).numpy(), 1.0, rtol=1e-9)
    hard = F.gumbel_softmax(logits, hard=True).numpy()
    assert set(np.unique(hard)) <= {0.0, 1.0} and (hard.sum(-1) == 1).all()
    np.testing.assert_allclose(hard.mean(0), [0.7, 0.2, 0.1], atol=0.03)


# -- dropout -------------------------------------------------------------------------------------------
def test_dropout_statistics_and_reproducibility():
    x = tidal.ones(200, 100)
    tidal.manual_seed(3)
    y = F.dropout(x, 0.3).numpy()
    assert set(np.unique(y)) <= {0.0, np.float32(1 / 0.7)}
    assert abs((y == 0).mean() - 0.3) < 0.015
    tidal.manual_seed(3)
    np.testing.assert_array_equal(F.dropout(x, 0.3).numpy(), y)
    assert F.dropout(x, 0.3, training=False) is x
    assert F.dropout(x, 0.0) is x
    assert F.dropout(x, 1.0).abs().sum().item() == 0
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but got 1.5"):
        F.dropout(x, 1.5)
    z = tidal.ones(4, 4)
    tidal.manual_seed(1)
    out = F.dropout(z, 0.5, inplace=True)
    assert out.untyped_storage_id() == z.untyped_storage_id() and set(np.unique(z.numpy())) <= {0.0, 2.0}


def test_dropout_gradient_uses_the_mask(rng):
    x, _ = pair(rng, (50, 40), requires_grad=True)
    tidal.manual_seed(5)
    y = F.dropout(x, 0.4)
    y.sum().backward()
    kept = y.detach().numpy() != 0
    np.testing.assert_allclose(x.grad.numpy(), kept / 0.6)


@pytest.mark.parametrize("fn,shape", [("dropout1d", (8, 30, 5)), ("dropout2d", (8, 30, 3, 2)),
                                      ("dropout3d", (8, 30, 2, 2, 2)), ("dropout2d", (30, 3, 2))])
def test_channel_dropout(fn, shape):
    tidal.manual_seed(0)
    y = getattr(F, fn)(tidal.ones(*shape), 0.5).numpy()
    per_channel = y.reshape(shape[:2] + (-1,))  # torch's feature dropout: one draw per [i, j] (3D dropout2d too)
    assert ((per_channel == 0).all(-1) | (per_channel == 2).all(-1)).all()  # whole channels dropped
    assert 0.3 < (per_channel[..., 0] == 0).mean() < 0.7
    if fn == "dropout1d":  # dropout2d/3d only warn on other ranks, as torch
        with pytest.raises(RuntimeError, match=f"{fn}: Expected"):
            getattr(F, fn)(tidal.ones(*(2,) * 7), 0.5)


def test_alpha_dropout_keeps_moments():
    tidal.manual_seed(0)
    x = tidal.randn(400, 250, dtype=tidal.float64)
    y = F.alpha_dropout(x, 0.2, training=True).numpy()
    assert abs(y.mean()) < 0.02 and abs(y.std() - 1) < 0.02
    assert F.alpha_dropout(x, 0.2) is x


# -- normalization -------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float64", "float32", "bfloat16"])
@pytest.mark.parametrize("shape,norm", [((4, 6), (6,)), ((2, 3, 4, 5), (4, 5)), ((3, 7), 7)])
def test_layer_norm(rng, dtype, shape, norm):
    x, xr = pair(rng, shape, dtype)
    ns = (norm,) if isinstance(norm, int) else norm
    w, wr = pair(rng, ns, dtype)
    b, br = pair(rng, ns, dtype)
    assert_close(F.layer_norm(x, norm, w, b, 1e-3), TF.layer_norm(xr, ns, wr, br, 1e-3), dtype=dtype)
    assert_close(F.layer_norm(x, norm), TF.layer_norm(xr, ns), dtype=dtype)


def test_layer_norm_errors_and_backward(rng):
    with pytest.raises(RuntimeError, match=r"Given normalized_shape=\[4\], expected input with shape \[\*, 4\], "
                                           r"but got input of size\[4, 3\]"):
        F.layer_norm(tidal.ones(4, 3), [4])
    with pytest.raises(RuntimeError, match="Expected weight to be of same shape as normalized_shape"):
        F.layer_norm(tidal.ones(4, 3), [3], tidal.ones(4))
    x, xr = pair(rng, (3, 5), requires_grad=True)
    w, wr = pair(rng, (5,), requires_grad=True)
    b, br = pair(rng, (5,), requires_grad=True)
    require_backward("mean")
    backward_both(F.layer_norm(x, (5,), w, b), TF.layer_norm(xr, (5,), wr, br), rng)
    assert_grads_close([(x, xr), (w, wr), (b, br)])


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16"])
def test_rms_norm(rng, dtype):
    x, xr = pair(rng, (3, 4, 6), dtype)
    w, wr = pair(rng, (4, 6), dtype)
    assert_close(F.rms_norm(x, (4, 6), w), TF.rms_norm(xr, (4, 6), wr), dtype=dtype)
    assert_close(F.rms_norm(x, [6], eps=0.1), TF.rms_norm(xr, [6], eps=0.1), dtype=dtype)


@pytest.mark.parametrize("shape,groups", [((2, 6, 5), 3), ((3, 4, 2, 3), 2), ((2, 4), 4), ((2, 6, 2), 1)])
def test_group_norm(rng, shape, groups):
    x, xr = pair(rng, shape, requires_grad=True)
    w, wr = pair(rng, (shape[1],), requires_grad=True)
    b, br = pair(rng, (shape[1],), requires_grad=True)
    out, ref = F.group_norm(x, groups, w, b, 1e-4), TF.group_norm(xr, groups, wr, br, 1e-4)
    assert_close(out, ref)
    assert_close(F.group_norm(x, groups), TF.group_norm(xr, groups))
    require_backward("reshape", "mean")
    backward_both(out, ref, rng)
    assert_grads_close([(x, xr), (w, wr), (b, br)])


def test_group_norm_errors():
    with pytest.raises(RuntimeError, match=r"Expected number of channels in input to be divisible by num_groups, "
                                           r"but got input of shape \[2, 3, 4\] and num_groups=2"):
        F.group_norm(tidal.ones(2, 3, 4), 2)
    with pytest.raises(RuntimeError, match="Expected at least 2 dimensions for input tensor but received 1"):
        F.group_norm(tidal.ones(3), 1)


@pytest.mark.parametrize("shape", [(6, 3), (4, 3, 5), (2, 3, 4, 2)])
@pytest.mark.parametrize("momentum", [0.1, 0.5])
def test_batch_norm_training_updates_running_stats(rng, shape, momentum):
    x, xr = pair(rng, shape)
    rm, rmr = pair(rng, (3,))
    rv, rvr = pair(rng, (3,), low=0.5, high=2.0)
    w, wr = pair(rng, (3,))
    b, br = pair(rng, (3,))
    out = F.batch_norm(x, rm, rv, w, b, training=True, momentum=momentum, eps=1e-3)
    ref = TF.batch_norm(xr, rmr, rvr, wr, br, training=True, momentum=momentum, eps=1e-3)
    assert_close(out, ref)
    assert_close(rm, rmr)
    assert_close(rv, rvr)  # unbiased variance in the running estimate
    assert_close(F.batch_norm(x, rm, rv, w, b, eps=1e-3), TF.batch_norm(xr, rmr, rvr, wr, br, eps=1e-3))
    assert_close(F.batch_norm(x, None, None, training=True), TF.batch_norm(xr, None, None, training=True))


def test_batch_norm_errors_and_backward(rng):
    with pytest.raises(ValueError, match=r"Expected more than 1 value per channel when training, got input size "
                                         r"tidal.Size\(\[1, 3\]\)"):
        F.batch_norm(tidal.ones(1, 3), None, None, training=True)
    with pytest.raises(RuntimeError, match="running_mean must be defined in evaluation mode"):
        F.batch_norm(tidal.ones(2, 3), None, None)
    x, xr = pair(rng, (5, 3, 2), requires_grad=True)
    w, wr = pair(rng, (3,), requires_grad=True)
    b, br = pair(rng, (3,), requires_grad=True)
    require_backward("mean", "reshape")
    backward_both(F.batch_norm(x, None, None, w, b, True), TF.batch_norm(xr, None, None, wr, br, True), rng)
    assert_grads_close([(x, xr), (w, wr), (b, br)])


def test_instance_norm(rng):
    x, xr = pair(rng, (2, 3, 5))
    rm, rmr = pair(rng, (3,))
    rv, rvr = pair(rng, (3,), low=0.5, high=2.0)
    w, wr = pair(rng, (3,))
    assert_close(F.instance_norm(x, rm, rv, w, None, True, 0.3), TF.instance_norm(xr, rmr, rvr, wr, None, True, 0.3))
    assert_close(rm, rmr)
    assert_close(rv, rvr)
    assert_close(F.instance_norm(x, rm, rv, use_input_stats=False), TF.instance_norm(xr, rmr, rvr,
                                                                                     use_input_stats=False))


@pytest.mark.parametrize("p,dim", [(2.0, 1), (1.0, 0), (3.0, -1), (float("inf"), 1)])
def test_normalize(rng, p, dim):
    x, xr = pair(rng, (3, 4), requires_grad=True)
    out, ref = F.normalize(x, p, dim), TF.normalize(xr, p, dim)
    assert_close(out, ref)
    z = tidal.zeros(2, 3)
    assert_close(F.normalize(z), TF.normalize(torch.zeros(2, 3)))
    if p == float("inf"):
        return
    require_backward("norm")
    backward_both(out, ref, rng)
    assert_grads_close([(x, xr)])


def test_local_response_norm(rng):
    x, xr = pair(rng, (2, 5, 3, 3))
    assert_close(F.local_response_norm(x, 3), TF.local_response_norm(xr, 3))
    assert_close(F.local_response_norm(x, 2, 0.1, 0.5, 2.0), TF.local_response_norm(xr, 2, 0.1, 0.5, 2.0))


# -- embedding and one_hot -----------------------------------------------------------------------------
@pytest.mark.parametrize("padding_idx", [None, 2, -1])
@pytest.mark.parametrize("scale_grad_by_freq", [False, True])
def test_embedding(rng, padding_idx, scale_grad_by_freq):
    w, wr = pair(rng, (6, 3), requires_grad=True)
    idx_np = np.array([[0, 2, 5], [2, 2, 1]])
    idx, idxr = tidal.tensor(idx_np), torch.from_numpy(idx_np)
    out = F.embedding(idx, w, padding_idx, scale_grad_by_freq=scale_grad_by_freq)
    ref = TF.embedding(idxr, wr, padding_idx, scale_grad_by_freq=scale_grad_by_freq)
    assert_close(out, ref)
    assert type(out.grad_fn).__name__ == type(ref.grad_fn).__name__ == "EmbeddingBackward0"
    backward_both(out, ref, rng)
    assert_grads_close([(w, wr)])


def test_embedding_max_norm_and_errors(rng):
    w, wr = pair(rng, (5, 4))
    w, wr = w * 3, wr * 3
    idx = np.array([0, 3, 3])
    out = F.embedding(tidal.tensor(idx), w, max_norm=1.5)
    ref = TF.embedding(torch.from_numpy(idx), wr, max_norm=1.5)
    assert_close(out, ref, rtol=1e-6, atol=1e-7)
    assert_close(w, wr, rtol=1e-6, atol=1e-7)  # rows renormalized in place, as torch
    with pytest.raises(AssertionError, match="Padding_idx must be within num_embeddings"):
        F.embedding(tidal.tensor([0]), w, padding_idx=5)
    with pytest.raises(RuntimeError, match="Expected tensor for argument #1 'indices'"):
        F.embedding(tidal.tensor([0.0]), w)


def test_one_hot():
    t = np.array([[0, 3], [1, 1]])
    assert_close(F.one_hot(tidal.tensor(t)), TF.one_hot(torch.from_numpy(t)))
    assert_close(F.one_hot(tidal.tensor(t), 6), TF.one_hot(torch.from_numpy(t), 6))
    assert F.one_hot(tidal.tensor(t)).dtype is tidal.int64
    assert F.one_hot(tidal.tensor(np.zeros(0, np.int64)), 3).shape == (0, 3)
    with pytest.raises(RuntimeError, match="Class values must be smaller than num_classes."):
        F.one_hot(tidal.tensor(t), 3)
    with pytest.raises(RuntimeError, match="Class values must be non-negative."):
        F.one_hot(tidal.tensor([-1, 0]))
    with pytest.raises(RuntimeError, match="one_hot is only applicable to index tensor of type LongTensor."):
        F.one_hot(tidal.tensor([1.0]))
    with pytest.raises(RuntimeError, match="Can not infer total number of classes from empty tensor."):
        F.one_hot(tidal.tensor(np.zeros(0, np.int64)))


# -- pad ----------------------------------------------------------------------------------------------
PADS = [("constant", (1, 2)), ("constant", (0, 1, 2, 0)), ("constant", (-1, 2, 1, -1)), ("constant", (1, 1, 1, 1, 2, 0)),
        ("reflect", (2, 1)), ("reflect", (1, 2, 2, 1)), ("replicate", (3, 0)), ("replicate", (1, 2, 0, 3)),
        ("replicate", (1, 1, 1, 1, 1, 1)), ("circular", (2, 1)), ("circular", (1, 2, 2, 1)),
        ("reflect", (1, 1, 1, 1, 1, 1))]


@pytest.mark.parametrize("mode,pad", PADS, ids=[f"{m}-{p}" for m, p in PADS])
def test_pad(rng, mode, pad):
    shape = (2, 3, 4, 5, 4)[: 2 + len(pad) // 2]
    x, xr = pair(rng, shape, requires_grad=True)
    kwargs = {"value": 1.5} if mode == "constant" else {}
    out, ref = F.pad(x, pad, mode, **kwargs), TF.pad(xr, pad, mode, **kwargs)
    assert_close(out, ref)
    require_backward(*(("cat", "narrow") if mode == "constant" else ("index_select",)))
    backward_both(out, ref, rng)
    assert_grads_close([(x, xr)])


def test_pad_more_forms_and_errors(rng):
    x, xr = pair(rng, (3, 4))
    assert_close(F.pad(x, (1, 1)), TF.pad(xr, (1, 1)))
    assert_close(F.pad(x, (1, 0, 0, 2)), TF.pad(xr, (1, 0, 0, 2)))  # constant mode pads any dims
    assert_close(F.pad(x, (1, 2), "reflect"), TF.pad(xr, (1, 2), "reflect"))  # unbatched 2-D
    with pytest.raises(RuntimeError, match="Padding length must be divisible by 2"):
        F.pad(x, (1,))
    with pytest.raises(RuntimeError, match="Padding length should be less than or equal to two times the input"):
        F.pad(x, (1, 1, 1, 1, 1, 1))
    with pytest.raises(RuntimeError, match="Padding size should be less than the corresponding input dimension"):
        F.pad(tidal.ones(1, 1, 3), (3, 3), "reflect")
    with pytest.raises(NotImplementedError, match="Unrecognised padding mode"):
        F.pad(x, (1, 1), "wrap")


# -- interpolate ----------------------------------------------------------------------------------------
INTERP = [("nearest", (2, 3, 5), {"scale_factor": 2}), ("nearest", (2, 3, 5), {"size": 7}),
          ("nearest", (1, 2, 5, 4), {"size": (3, 9)}), ("nearest", (1, 2, 10, 4), {"scale_factor": 0.7}),
          ("nearest-exact", (1, 2, 5, 4), {"size": (8, 3)}), ("nearest", (1, 1, 3, 4, 2), {"scale_factor": 2}),
          ("linear", (2, 3, 5), {"size": 8}), ("linear", (2, 3, 5), {"scale_factor": 1.5, "align_corners": True}),
          ("bilinear", (2, 2, 4, 5), {"size": (7, 3)}), ("bilinear", (2, 2, 4, 5), {"scale_factor": 2.5}),
          ("bilinear", (1, 2, 4, 5), {"size": (8, 9), "align_corners": True}),
          ("bilinear", (1, 1, 6, 6), {"size": (1, 1), "align_corners": True}),
          ("bilinear", (1, 2, 9, 7), {"scale_factor": 0.4, "recompute_scale_factor": True}),
          ("bicubic", (1, 2, 5, 4), {"size": (9, 7)}), ("bicubic", (1, 2, 5, 4), {"scale_factor": 2,
                                                                                 "align_corners": True}),
          ("trilinear", (1, 2, 3, 4, 3), {"size": (5, 3, 6)}), ("area", (1, 2, 7, 6), {"size": (3, 4)}),
          ("area", (2, 3, 10), {"size": 4}), ("area", (1, 1, 4, 4), {"scale_factor": 0.5})]


@pytest.mark.parametrize("mode,shape,kwargs", INTERP, ids=[f"{m}-{s}-{k}" for m, s, k in INTERP])
def test_interpolate(rng, mode, shape, kwargs):
    x, xr = pair(rng, shape, requires_grad=True)
    out, ref = F.interpolate(x, mode=mode, **kwargs), TF.interpolate(xr, mode=mode, **kwargs)
    assert_close(out, ref)
    require_backward("index_select")
    backward_both(out, ref, rng)
    assert_grads_close([(x, xr)])


def test_interpolate_float32_and_errors(rng):
    x, xr = pair(rng, (1, 2, 4, 5), "float32")
    assert_close(F.interpolate(x, scale_factor=2, mode="bilinear"), TF.interpolate(xr, scale_factor=2,
                                                                                   mode="bilinear"))
    assert F.interpolate(x, size=(3, 3), mode="bilinear").dtype is tidal.float32
    with pytest.raises(ValueError, match="only one of size or scale_factor should be defined"):
        F.interpolate(x, size=3, scale_factor=2)
    with pytest.raises(ValueError, match="either size or scale_factor should be defined"):
        F.interpolate(x)
    with pytest.raises(ValueError, match="align_corners option can only be set with the interpolating modes"):
        F.interpolate(x, size=3, align_corners=True)
    with pytest.raises(NotImplementedError, match="Got 4D input, but linear mode needs 3D input"):
        F.interpolate(x, size=3, mode="linear")
    with pytest.raises(NotImplementedError, match="Input Error: Only 3D, 4D and 5D input Tensors supported"):
        F.interpolate(tidal.ones(2, 2), size=3)
    with pytest.raises(ValueError, match="Input and output must have the same number of spatial dimensions"):
        F.interpolate(x, size=(3, 3, 3))


def test_pixel_shuffle(rng):
    x, xr = pair(rng, (2, 8, 3, 4))
    assert_close(F.pixel_shuffle(x, 2), TF.pixel_shuffle(xr, 2))
    y, yr = pair(rng, (3, 6, 9))
    assert_close(F.pixel_unshuffle(y, 3), TF.pixel_unshuffle(yr, 3))
    assert_close(F.pixel_unshuffle(F.pixel_shuffle(x, 2), 2), xr)


# -- distances ------------------------------------------------------------------------------------
@pytest.mark.parametrize("shapes,dim", [(((4, 5), (4, 5)), 1), (((3, 1, 5), (1, 4, 5)), -1), (((6,), (6,)), 0)])
def test_cosine_similarity(rng, shapes, dim):
    x1, x1r = pair(rng, shapes[0], requires_grad=True)
    x2, x2r = pair(rng, shapes[1], requires_grad=True)
    out, ref = F.cosine_similarity(x1, x2, dim), TF.cosine_similarity(x1r, x2r, dim)
    assert_close(out, ref)
    require_backward("norm", "sum", "broadcast_tensors")
    backward_both(out, ref, rng)
    assert_grads_close([(x1, x1r), (x2, x2r)])


def test_cosine_similarity_zero_vector():
    z = np.zeros((2, 3))
    o = np.ones((2, 3))
    assert_close(F.cosine_similarity(tidal.tensor(z), tidal.tensor(o)),
                 TF.cosine_similarity(torch.from_numpy(z), torch.from_numpy(o)))


@pytest.mark.parametrize("p", [2.0, 1.0, 3.0])
def test_pairwise_distance(rng, p):
    x1, x1r = pair(rng, (4, 5))
    x2, x2r = pair(rng, (4, 5))
    assert_close(F.pairwise_distance(x1, x2, p), TF.pairwise_distance(x1r, x2r, p))
    assert_close(F.pairwise_distance(x1, x2, p, keepdim=True), TF.pairwise_distance(x1r, x2r, p, keepdim=True))


def test_functional_namespace():
    for name in ("relu", "gelu", "linear", "dropout", "softmax", "layer_norm", "batch_norm", "embedding", "one_hot",
                 "pad", "interpolate", "mse_loss", "cross_entropy", "scaled_dot_product_attention",
                 "cosine_similarity", "multi_head_attention_forward"):
        assert callable(getattr(F, name)) and name in F.__all__

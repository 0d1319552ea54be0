"""layer_norm and attention's safe softmax are one autograd node each, as torch's: values, gradients and double
backward follow torch, and the node keeps only the input and small statistics (so training holds less memory)."""
import numpy as np
import pytest
import torch

import tidal


CASES = [((4, 5, 8), (8,), "float32", True), ((3, 4, 6), (4, 6), "float64", True),
         ((2, 3, 5), (5,), "float32", False), ((6,), (6,), "float64", True), ((2, 3, 8), (8,), "bfloat16", True)]


def _compare_with_torch(call, shape, params_shape, dtype, affine, node, seed, running=False):
    """`call(lib, x, weight, bias, running)` on torch and tidal from the same NumPy values: its output, the first
    gradients (create_graph) and second gradients of x and weight, and the running statistics, all as torch's."""
    rng = np.random.default_rng(seed)
    xn, gn = rng.standard_normal(shape), rng.standard_normal(shape)
    wn, bn = rng.standard_normal(params_shape), rng.standard_normal(params_shape)
    results = []
    for lib in (torch, tidal):
        d = getattr(lib, dtype)
        x = lib.tensor(xn, dtype=d, requires_grad=True)
        params = [lib.tensor(wn, dtype=d, requires_grad=True), lib.tensor(bn, dtype=d, requires_grad=True)] \
            if affine else [None, None]
        stats = [lib.zeros(params_shape, dtype=d), lib.ones(params_shape, dtype=d)] if running else []
        y = call(lib, x, *params, stats)
        leaves = [x] + [p for p in params if p is not None]
        grads = lib.autograd.grad(y, leaves, lib.tensor(gn, dtype=d), create_graph=True)
        second = lib.autograd.grad(sum((g * g).sum() for g in grads), leaves[:2])  # bias's grad: not a function of it
        results.append((type(y.grad_fn).__name__, [t.detach().double().numpy() for t in (y, *stats, *grads, *second)]))
    (name_t, want), (name_d, got) = results
    assert name_d == name_t == node
    tol = {"float32": 1e-5, "float64": 1e-10, "bfloat16": 3e-2}[dtype]  # bfloat16: 8 bits, rounded at each op
    for a, b in zip(want, got):
        np.testing.assert_allclose(b, a, rtol=tol, atol=tol * np.abs(a).max())


@pytest.mark.parametrize("shape,normalized,dtype,affine", CASES)
def test_layer_norm_one_node_follows_torch(shape, normalized, dtype, affine):
    _compare_with_torch(lambda lib, x, w, b, _: lib.nn.functional.layer_norm(x, normalized, w, b, eps=1e-5),
                        shape, normalized, dtype, affine, "NativeLayerNormBackward0", len(shape) + len(normalized))


def test_layer_norm_node_saves_input_and_statistics_only():
    x = tidal.randn(16, 10, 32, requires_grad=True)
    ln = tidal.nn.LayerNorm(32)
    y = ln(x)
    saved = [t for t in y.grad_fn.saved_tensors if t is not None]
    assert any(t is x for t in saved)
    assert sorted(t.numel() for t in saved if t is not x and t is not ln.weight) == [160, 160]  # mean, rstd
    x.detach().add_(1.0)  # torch's version check covers the saved input (x.data has its own counter)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_safe_softmax_one_node_follows_torch():
    rng = np.random.default_rng(3)
    xn = rng.standard_normal((3, 4, 5))
    xn[0, 1, :] = -np.inf  # a fully masked row: zeros, not NaN
    xn[1, 2, 3] = -np.inf
    xn[2, 0, 1] = np.nan  # NaN stays NaN
    gn = rng.standard_normal((3, 4, 5))
    results = []
    for lib, fn in ((torch, torch._safe_softmax), (tidal, tidal.ops.reductions.softmax.safe_softmax)):
        x = lib.tensor(xn, requires_grad=True)
        y = fn(x, -1)
        (gx,) = lib.autograd.grad(y, x, lib.tensor(gn), create_graph=True)
        (gg,) = lib.autograd.grad((gx * gx).sum(), x)
        results.append((type(y.grad_fn).__name__, [t.detach().numpy() for t in (y, gx, gg)]))
    (name_t, want), (name_d, got) = results
    assert name_d == name_t == "SafeSoftmaxBackward0"
    for a, b in zip(want, got):
        np.testing.assert_allclose(b, a, rtol=1e-12, atol=1e-12, equal_nan=True)
    assert (got[0][0, 1] == 0).all() and np.isnan(got[0][2, 0]).all()


def test_attention_without_weights_masks_whole_rows_as_torch():
    rng = np.random.default_rng(4)
    q = rng.standard_normal((5, 2, 8)).astype(np.float32)
    mask = np.zeros((5, 5), bool)
    mask[2, :] = True  # query 2 may attend nowhere
    outs = []
    for lib in (torch, tidal):
        torch.manual_seed(0)
        mha = torch.nn.MultiheadAttention(8, 2)
        state = {k: v.detach().numpy() for k, v in mha.state_dict().items()}
        m = lib.nn.MultiheadAttention(8, 2)
        m.load_state_dict({k: lib.tensor(v) for k, v in state.items()})
        x = lib.tensor(q, requires_grad=True)
        out, _ = m(x, x, x, attn_mask=lib.tensor(mask), need_weights=False)
        out.sum().backward()
        outs.append((out.detach().numpy(), x.grad.numpy()))
    for a, b in zip(*outs):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-5, equal_nan=True)


@pytest.mark.parametrize("shape,affine,dtype", [((4, 3, 5, 5), True, "float32"), ((6, 3), True, "float64"),
                                                ((4, 3, 7), False, "float64"), ((3, 2, 4, 4), True, "bfloat16")])
def test_batch_norm_training_one_node_follows_torch(shape, affine, dtype):
    _compare_with_torch(lambda lib, x, w, b, stats: lib.nn.functional.batch_norm(
        x, *stats, w, b, training=True, momentum=0.1, eps=1e-5), shape, (shape[1],), dtype, affine,
        "NativeBatchNormBackward0", shape[0] * 10 + len(shape), running=True)


def test_layer_norm_bias_without_weight_gets_its_gradient():
    rng = np.random.default_rng(9)
    xn, bn = rng.standard_normal((2, 3, 4)), rng.standard_normal(4)
    grads = []
    for lib in (torch, tidal):
        x = lib.tensor(xn, requires_grad=True)
        b = lib.tensor(bn, requires_grad=True)
        (lib.nn.functional.layer_norm(x, (4,), None, b) ** 3).sum().backward()
        grads.append([x.grad.numpy(), b.grad.numpy()])
    for a, b in zip(*grads):
        np.testing.assert_allclose(b, a, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("shape,groups,affine,dtype", [((4, 6, 5, 5), 3, True, "float32"), ((2, 4, 7), 2, True, "float64"),
                                                       ((3, 4), 4, False, "float64"), ((2, 4, 3, 3), 2, True, "bfloat16")])
def test_group_norm_one_node_follows_torch(shape, groups, affine, dtype):
    _compare_with_torch(lambda lib, x, w, b, _: lib.nn.functional.group_norm(x, groups, w, b, eps=1e-5),
                        shape, (shape[1],), dtype, affine, "NativeGroupNormBackward0", groups * 7 + len(shape))

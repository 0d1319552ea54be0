"""Ordering ops refuse complex input with torch's error type and message (complex numbers have no order)."""
import numpy as np
import pytest
import torch

import tidal
import tidal.compat as tc
from complex_helpers import raises_like

Z = (np.arange(6).reshape(2, 3) + 1j * np.arange(6)[::-1].reshape(2, 3)).astype(np.complex64)

CASES = {
    "sort": lambda m, x: m.sort(x),
    "sort_dim0_stable": lambda m, x: m.sort(x, dim=0, stable=True),
    "sort_0d": lambda m, x: m.sort(x[0, 0]),
    "argsort": lambda m, x: m.argsort(x),
    "msort": lambda m, x: m.msort(x),
    "topk": lambda m, x: m.topk(x, 1),
    "topk_k_out_of_range_first": lambda m, x: m.topk(x, 10),
    "kthvalue": lambda m, x: m.kthvalue(x, 1),
    "kthvalue_bad_dim_first": lambda m, x: m.kthvalue(x, 1, dim=5),
    "median": lambda m, x: m.median(x),
    "median_dim": lambda m, x: m.median(x, 0),
    "nanmedian": lambda m, x: m.nanmedian(x),
    "nanmedian_dim": lambda m, x: m.nanmedian(x, 1),
    "mode": lambda m, x: m.mode(x),
    "unique": lambda m, x: m.unique(x),
    "unique_dim": lambda m, x: m.unique(x, dim=0),
    "unique_consecutive": lambda m, x: m.unique_consecutive(x),
    "searchsorted_bounds": lambda m, x: m.searchsorted(x[0], m.ones(3)),
    "searchsorted_values": lambda m, x: m.searchsorted(m.ones(3, dtype=x.dtype), x),
    "bucketize": lambda m, x: m.bucketize(x, m.ones(3, dtype=x.dtype)),
    # ops/reductions/reduce.py and ops/elementwise/arithmetic.py
    "max": lambda m, x: m.max(x),
    "max_dim": lambda m, x: m.max(x, 0),
    "min_dim_keepdim": lambda m, x: m.min(x, 1, keepdim=True),
    "max_empty_first": lambda m, x: m.max(x[:0]),
    "amax": lambda m, x: m.amax(x),
    "amin_dim": lambda m, x: m.amin(x, 0),
    "aminmax": lambda m, x: m.aminmax(x),
    "argmax": lambda m, x: m.argmax(x),
    "argmin_dim": lambda m, x: x.argmin(1),
    "softmax": lambda m, x: m.softmax(x, 0),
    "softmax_lastdim": lambda m, x: m.nn.functional.softmax(x, -1),
    "log_softmax": lambda m, x: m.log_softmax(x, 0),
    "softmax_to_complex": lambda m, x: m.softmax(x.real, 0, dtype=x.dtype),
    "cross_entropy": lambda m, x: m.nn.functional.cross_entropy(x, m.tensor([0, 1])),
    "nansum": lambda m, x: m.nansum(x),
    "nanmean_dim": lambda m, x: m.nanmean(x, 0),
    "clamp_min": lambda m, x: m.clamp_min(x, 0),
    "clip_max": lambda m, x: x.clip(max=1),
    "clamp_max_": lambda m, x: x.clamp_max_(1),
    "clamp_tensor_bound": lambda m, x: m.clamp(x, min=m.zeros(3)),
}


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_refuses_complex_like_torch(case, dtype):
    fn = CASES[case]
    raises_like(lambda: fn(tidal, tidal.tensor(Z, dtype=getattr(tidal, dtype))),
                lambda: fn(torch, torch.tensor(Z, dtype=getattr(torch, dtype))))


def test_empty_inputs_keep_torch_order():
    """torch checks an empty reduced dim before the dtype; mode and searchsorted with no work do not refuse."""
    for fn in (lambda m, x: m.mode(x, 0), lambda m, x: m.median(x, 0)):
        with pytest.raises(IndexError) as want:
            fn(torch, torch.zeros(0, 2, dtype=torch.complex64))
        with pytest.raises(IndexError) as got:
            fn(tidal, tidal.zeros(0, 2, dtype=tidal.complex64))
        assert str(got.value) == str(want.value)
    empty = np.zeros((0, 2), np.complex64)
    assert tuple(tidal.mode(tidal.tensor(empty), 1).values.shape) == tuple(torch.mode(torch.tensor(empty), 1).values.shape)
    none = tidal.zeros(0, dtype=tidal.complex64)
    assert tidal.searchsorted(none, none).numel() == 0


def test_real_inputs_still_sort():
    x = np.array([3.0, -1.0, 2.0], np.float32)
    np.testing.assert_array_equal(tidal.sort(tidal.tensor(x)).values.numpy(), torch.sort(torch.tensor(x)).values)


ACTIVATIONS = ["elu", "selu", "celu", "gelu", "mish", "hardswish", "hardsigmoid", "leaky_relu", "softplus",
               "logsigmoid", "softshrink", "hardshrink", "rrelu", "silu"]


@pytest.mark.parametrize("name", ACTIVATIONS)
@pytest.mark.parametrize("dtype", ["complex64", "int64", "bool"])
def test_real_activations_refuse_like_torch(name, dtype):
    """torch's kernel names for the dtypes these activations refuse (silu takes complex, without autograd)."""
    results = []
    for m in (torch, tc):
        x = m.ones(3, dtype=getattr(m, dtype))
        try:
            y = getattr(m.nn.functional, name)(x)
            results.append(("ok", str(y.dtype).split(".")[-1], np.asarray(y.numpy()).tolist()))
        except Exception as exc:  # noqa: BLE001 - the type and message are what is compared
            results.append((type(exc).__name__, str(exc)))
    assert results[0] == results[1]


def test_silu_complex_forward_and_autograd_refusal():
    z = (np.array([1 + 1j, -2 + 0.5j])).astype(np.complex64)
    np.testing.assert_allclose(tc.nn.functional.silu(tc.tensor(z)).numpy(),
                               torch.nn.functional.silu(torch.tensor(z)).numpy(), rtol=1e-6)
    with pytest.raises(RuntimeError) as want:
        torch.nn.functional.silu(torch.tensor(z, requires_grad=True))
    with pytest.raises(RuntimeError) as got:
        tc.nn.functional.silu(tc.tensor(z, requires_grad=True))
    assert str(got.value) == str(want.value)


NN_CASES = {
    "layer_norm": lambda m, x: m.nn.functional.layer_norm(x, (3,)),
    "group_norm": lambda m, x: m.nn.functional.group_norm(x.reshape(1, 2, 3), 1),
    "batch_norm": lambda m, x: m.nn.functional.batch_norm(x, None, None, training=True),
    "instance_norm": lambda m, x: m.nn.functional.instance_norm(x.reshape(1, 2, 3)),
    "mse_loss": lambda m, x: m.nn.functional.mse_loss(x, x),
    "mse_loss_mixed": lambda m, x: m.nn.functional.mse_loss(x.real, x),
    "smooth_l1_loss": lambda m, x: m.nn.functional.smooth_l1_loss(x, x),
    "huber_loss": lambda m, x: m.nn.functional.huber_loss(x, x),
    "kl_div": lambda m, x: m.nn.functional.kl_div(x, x, reduction="sum"),
    "binary_cross_entropy": lambda m, x: m.nn.functional.binary_cross_entropy(x, x),
    "binary_cross_entropy_target": lambda m, x: m.nn.functional.binary_cross_entropy(x.real.sigmoid(), x),
    "nll_loss": lambda m, x: m.nn.functional.nll_loss(x, m.tensor([0, 1])),
    "nll_loss_2d": lambda m, x: m.nn.functional.nll_loss(x.reshape(1, 2, 3), m.tensor([[0, 1, 1]])),
    "glu": lambda m, x: m.nn.functional.glu(x, 0),
    "prelu": lambda m, x: m.nn.functional.prelu(x, m.tensor([0.25], dtype=x.dtype)),
    "prelu_mixed": lambda m, x: m.nn.functional.prelu(x.real, m.tensor([0.25], dtype=x.dtype)),
    "cosine_similarity": lambda m, x: m.nn.functional.cosine_similarity(x, x),
    "pdist": lambda m, x: m.nn.functional.pdist(x),
    "cdist": lambda m, x: m.cdist(x.real, x),
    "embedding_grad": lambda m, x: m.nn.functional.embedding(m.tensor([0, 1]), x.requires_grad_()),
    "histc": lambda m, x: m.histc(x),
    "histc_range": lambda m, x: m.histc(x, min=0, max=1),
    "cummax": lambda m, x: m.cummax(x, 0),
    "cummin": lambda m, x: m.cummin(x, 1),
    "heaviside": lambda m, x: m.heaviside(x, x),
    "heaviside_values": lambda m, x: m.heaviside(x.real, x),
    "max_pool1d": lambda m, x: m.nn.functional.max_pool1d(x.reshape(1, 2, 3), 2),
    "max_pool1d_indices": lambda m, x: m.nn.functional.max_pool1d(x.reshape(1, 2, 3), 2, return_indices=True),
    "max_pool2d": lambda m, x: m.nn.functional.max_pool2d(x.reshape(1, 1, 2, 3), 2),
    "max_pool3d": lambda m, x: m.nn.functional.max_pool3d(x.reshape(1, 1, 1, 2, 3), 1),
    "avg_pool1d": lambda m, x: m.nn.functional.avg_pool1d(x.reshape(1, 2, 3), 2),
    "avg_pool3d": lambda m, x: m.nn.functional.avg_pool3d(x.reshape(1, 1, 1, 2, 3), 1),
    "lp_pool2d": lambda m, x: m.nn.functional.lp_pool2d(x.reshape(1, 1, 2, 3), 2, 2),
    "adaptive_avg_pool1d": lambda m, x: m.nn.functional.adaptive_avg_pool1d(x.reshape(1, 2, 3), 2),
    "adaptive_max_pool2d": lambda m, x: m.nn.functional.adaptive_max_pool2d(x.reshape(1, 1, 2, 3), 2),
    "adaptive_avg_pool3d": lambda m, x: m.nn.functional.adaptive_avg_pool3d(x.reshape(1, 1, 1, 2, 3), (1, 2, 2)),
    "interpolate_nearest": lambda m, x: m.nn.functional.interpolate(x.reshape(1, 2, 3), scale_factor=2),
    "interpolate_nearest_2d": lambda m, x: m.nn.functional.interpolate(x.reshape(1, 1, 2, 3), scale_factor=2),
    "interpolate_linear": lambda m, x: m.nn.functional.interpolate(x.reshape(1, 2, 3), size=5, mode="linear"),
    "interpolate_bilinear": lambda m, x: m.nn.functional.interpolate(x.reshape(1, 1, 2, 3), size=4, mode="bilinear"),
    "interpolate_bicubic": lambda m, x: m.nn.functional.interpolate(x.reshape(1, 1, 2, 3), size=4, mode="bicubic"),
    "interpolate_trilinear": lambda m, x: m.nn.functional.interpolate(x.reshape(1, 1, 1, 2, 3), size=2,
                                                                      mode="trilinear"),
    "interpolate_area": lambda m, x: m.nn.functional.interpolate(x.reshape(1, 2, 3), size=2, mode="area"),
    "grid_sample": lambda m, x: m.nn.functional.grid_sample(x.reshape(1, 1, 2, 3), m.zeros(1, 2, 2, 2),
                                                           align_corners=False),
    "grid_sample_3d": lambda m, x: m.nn.functional.grid_sample(x.reshape(1, 1, 1, 2, 3), m.zeros(1, 1, 2, 2, 3),
                                                              align_corners=False),
}


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("case", sorted(NN_CASES))
def test_nn_and_misc_refuse_complex_like_torch(case, dtype):
    fn = NN_CASES[case]
    raises_like(lambda: fn(tc, tc.tensor(Z, dtype=getattr(tc, dtype))),
                lambda: fn(torch, torch.tensor(Z, dtype=getattr(torch, dtype))))


def test_complex_that_torch_allows():
    """l1_loss, rms_norm, embedding without grad and an empty cummin work on complex input, as in torch."""
    cases = [lambda m, x: m.nn.functional.l1_loss(x, x * 2), lambda m, x: m.nn.functional.rms_norm(x, (3,)),
             lambda m, x: m.nn.functional.embedding(m.tensor([1, 0]), x), lambda m, x: m.cummin(x[:0], 0).values,
             lambda m, x: m.nn.functional.adaptive_avg_pool2d(x.reshape(1, 1, 2, 3), 1),
             lambda m, x: m.nn.functional.adaptive_avg_pool1d(x, 1)]
    for fn in cases:
        got, want = fn(tc, tc.tensor(Z)), fn(torch, torch.tensor(Z))
        assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)


ALPHA = {"complex_float_alpha": lambda m: m.ones(2, dtype=m.complex64).add(m.ones(2, dtype=m.complex64), alpha=0.5),
         "complex_complex_alpha": lambda m: m.ones(2, dtype=m.complex64).sub(m.ones(2), alpha=2j),
         "real_complex_alpha": lambda m: m.ones(2).add(m.ones(2), alpha=1j),
         "int_complex_alpha": lambda m: m.ones(2, dtype=m.int64).add(m.ones(2, dtype=m.int64), alpha=1j)}


@pytest.mark.parametrize("case", sorted(ALPHA))
def test_add_alpha_with_complex(case):
    results = []
    for m in (tc, torch):
        try:
            out = ALPHA[case](m)
            results.append((str(out.dtype).split(".")[-1], out.numpy().tolist()))
        except RuntimeError as exc:
            results.append(str(exc))
    assert results[0] == results[1]

"""3-D convolutions and pools (the N-d window code), pools' *_with_indices, and avg_pool on int64, against torch."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import tidal
import tidal.nn as nn
import tidal.nn.functional as F
from nn_helpers import assert_close, assert_grads_close, backward_both, load_from_torch, pair


@pytest.fixture
def rng():
    return np.random.default_rng(7)


def check(rng, name, shapes, *args, **kwargs):
    """F.name on random float64 inputs of `shapes` against torch: values, indices, gradients."""
    pairs = [pair(rng, s, requires_grad=True) for s in shapes]
    out = getattr(F, name)(*[p[0] for p in pairs], *args, **kwargs)
    expected = getattr(TF, name)(*[p[1] for p in pairs], *args, **kwargs)
    if isinstance(expected, tuple):
        assert out[1].dtype is tidal.int64
        np.testing.assert_array_equal(out[1].numpy(), expected[1].numpy())
        out, expected = out[0], expected[0]
    assert_close(out, expected)
    backward_both(out, expected, rng)
    assert_grads_close(pairs)


@pytest.mark.parametrize("kwargs", [{}, {"stride": (1, 2, 1), "padding": (1, 0, 2), "dilation": (2, 1, 1)},
                                    {"groups": 2, "padding": "same"}, {"stride": 2, "padding": 1}])
def test_conv3d(rng, kwargs):
    check(rng, "conv3d", [(2, 4, 5, 6, 5), (6, 4 // kwargs.get("groups", 1), 2, 3, 3), (6,)], **kwargs)


def test_conv3d_unbatched_and_errors(rng):
    check(rng, "conv3d", [(2, 4, 4, 4), (3, 2, 2, 2, 2)])
    with pytest.raises(RuntimeError, match="Expected 4D \\(unbatched\\) or 5D \\(batched\\) input to conv3d"):
        F.conv3d(tidal.zeros(2, 4, 4), tidal.zeros(3, 2, 2, 2, 2))
    with pytest.raises(NotImplementedError, match='"compute_columns3d" not implemented for \'Bool\''):
        F.conv3d(tidal.zeros(1, 2, 3, 3, 3, dtype=tidal.bool), tidal.zeros(2, 2, 2, 2, 2, dtype=tidal.bool))


@pytest.mark.parametrize("kwargs", [{}, {"stride": 2, "padding": 1, "output_padding": 1, "groups": 2},
                                    {"stride": (1, 2, 3), "dilation": (2, 1, 1), "output_padding": (0, 1, 2)}])
def test_conv_transpose3d(rng, kwargs):
    check(rng, "conv_transpose3d", [(2, 4, 3, 4, 3), (4, 3, 2, 3, 2), (3 * kwargs.get("groups", 1),)], **kwargs)


def test_conv_transpose3d_output_padding_error():
    with pytest.raises(RuntimeError, match="output_padding_depth: 2 output_padding_height: 2 output_padding_width: 2 "
                                           "stride_depth: 2"):
        F.conv_transpose3d(tidal.zeros(1, 2, 3, 3, 3), tidal.zeros(2, 2, 2, 2, 2), stride=2, output_padding=2)


@pytest.mark.parametrize("kwargs", [{"kernel_size": 2}, {"kernel_size": (2, 3, 2), "stride": (1, 2, 2),
                                                         "padding": (1, 1, 0), "dilation": (1, 1, 2),
                                                         "ceil_mode": True}])
def test_max_pool3d_with_indices(rng, kwargs):
    check(rng, "max_pool3d", [(2, 3, 6, 7, 8)], return_indices=True, **kwargs)
    check(rng, "max_pool3d_with_indices", [(3, 5, 5, 5)], **kwargs)


@pytest.mark.parametrize("kwargs", [{"kernel_size": 2}, {"kernel_size": (2, 3, 2), "stride": (1, 2, 2),
                                                         "padding": (1, 1, 0), "ceil_mode": True,
                                                         "count_include_pad": False},
                                    {"kernel_size": 3, "stride": 2, "padding": 1, "divisor_override": 5}])
def test_avg_pool3d(rng, kwargs):
    check(rng, "avg_pool3d", [(2, 3, 6, 7, 8)], **kwargs)


@pytest.mark.parametrize("size", [(4, None, 3), 2, (1, 5, 8)])
def test_adaptive_pools_3d(rng, size):
    check(rng, "adaptive_avg_pool3d", [(2, 3, 6, 7, 8)], size)
    check(rng, "adaptive_max_pool3d", [(2, 3, 6, 7, 8)], size, return_indices=True)


def test_adaptive_max_with_indices_and_nan_positions(rng):
    check(rng, "adaptive_max_pool1d_with_indices", [(3, 9)], 4)
    check(rng, "adaptive_max_pool2d_with_indices", [(2, 3, 7, 9)], (3, 4))
    check(rng, "max_pool1d_with_indices", [(2, 3, 9)], 3, 2)
    check(rng, "max_pool2d_with_indices", [(2, 3, 7, 9)], 3, 2, 1)
    x = rng.standard_normal((1, 2, 5, 5, 5))
    x[0, 0, 1, 1, 1] = x[0, 0, 1, 2, 1] = x[0, 1, 3, 3, 0] = np.nan
    for name, args in (("max_pool3d", (3, 1, 1)), ("adaptive_max_pool3d", ((2, 3, 3),))):
        ours = getattr(F, name)(tidal.tensor(x), *args, return_indices=True)
        theirs = getattr(TF, name)(torch.from_numpy(x), *args, return_indices=True)
        np.testing.assert_array_equal(ours[1].numpy(), theirs[1].numpy())
        np.testing.assert_array_equal(ours[0].numpy(), theirs[0].numpy())


def test_pool3d_errors():
    x = tidal.zeros(1, 1, 3, 3, 3)
    for call, error, text in (
            (lambda: F.max_pool3d(x, (2, 2)), RuntimeError,
             "kernel_size must either be a single int, or a tuple of three"),
            (lambda: F.avg_pool3d(tidal.zeros(3, 3, 3), 2), RuntimeError, "non-empty 4D or 5D"),
            (lambda: F.max_pool3d(x, 2, 1, 2), RuntimeError, "pad should be at most half of effective kernel size"),
            (lambda: F.avg_pool3d(x, 5), RuntimeError, r"input image \(T: 3 H: 3 W: 3\) smaller than kernel size"),
            (lambda: F.max_pool3d(x, 5), RuntimeError, "Output size is too small"),
            (lambda: F.max_pool3d(x, 2, dilation=0), RuntimeError, "dilationT: 0 dilationH: 0 dilationW: 0"),
            (lambda: F.adaptive_max_pool3d(x, (2, 2)), RuntimeError, "output_size.size\\(\\) must be 3"),
            (lambda: F.adaptive_avg_pool3d(tidal.zeros(1, 3, 3), 2), RuntimeError, "Expected 4D or 5D tensor"),
            (lambda: F.max_pool3d(x.bool(), 2), NotImplementedError, '"max_pool3d" not implemented for \'Bool\''),
            (lambda: F.avg_pool3d(x.int(), 2), NotImplementedError, "avg_pool3d_out_frame"),
            (lambda: F.avg_pool3d(x.half(), 2), NotImplementedError, "\"avg_pool3d_out_frame\" not implemented for 'Half'")):
        with pytest.raises(error, match=text):
            call()


@pytest.mark.parametrize("divisor", [None, 3, -2])
def test_avg_pool_int64_truncates_as_torch(rng, divisor):
    x = rng.integers(-2 ** 40, 2 ** 40, (2, 2, 5, 6))
    for kwargs in ({"kernel_size": 2, "stride": 1, "ceil_mode": True, "count_include_pad": False},
                   {"kernel_size": 3, "stride": 2, "padding": 1}):
        np.testing.assert_array_equal(F.avg_pool2d(tidal.tensor(x), divisor_override=divisor, **kwargs).numpy(),
                                      TF.avg_pool2d(torch.from_numpy(x), divisor_override=divisor, **kwargs).numpy())
    x3 = rng.integers(-50, 50, (2, 3, 4, 5, 6))
    np.testing.assert_array_equal(F.avg_pool3d(tidal.tensor(x3), 2, 1, 1, divisor_override=divisor).numpy(),
                                  TF.avg_pool3d(torch.from_numpy(x3), 2, 1, 1, divisor_override=divisor).numpy())


@pytest.mark.parametrize("name,args,kwargs", [
    ("Conv3d", (4, 6, 3), {"stride": 2, "padding": 1, "groups": 2}),
    ("Conv3d", (4, 2, (1, 2, 3)), {"padding_mode": "circular", "padding": 1, "bias": False}),
    ("ConvTranspose3d", (4, 2, 3), {"stride": 2, "output_padding": 1}),
    ("MaxPool3d", (2,), {"padding": 1}), ("AvgPool3d", (3, 2), {"ceil_mode": True}),
    ("AdaptiveAvgPool3d", ((2, 3, None),), {}), ("AdaptiveMaxPool3d", (2,), {})])
def test_modules_3d(rng, name, args, kwargs):
    ref = getattr(torch.nn, name)(*args, **kwargs).double()
    mod = getattr(nn, name)(*args, **kwargs).double()
    assert repr(mod) == repr(ref) and list(mod.state_dict()) == list(ref.state_dict())
    load_from_torch(mod, ref)
    x, xr = pair(rng, (2, 4, 5, 6, 7), requires_grad=True)
    out, expected = mod(x), ref(xr)
    assert_close(out, expected)
    backward_both(out, expected, rng)
    refs = dict(ref.named_parameters())
    assert_grads_close([(x, xr)] + [(p, refs[n]) for n, p in mod.named_parameters()])


# -- lp_pool, max_unpool, fractional max pool, channel shuffle -------------------------------------------
@pytest.mark.parametrize("name,shape,args", [("lp_pool1d", (2, 3, 9), (2.0, 3, 2)),
                                             ("lp_pool2d", (2, 3, 7, 8), (3.0, 2)),
                                             ("lp_pool2d", (3, 7, 8), (1.5, (2, 3), (1, 2), True)),
                                             ("lp_pool3d", (2, 2, 5, 6, 5), (2.0, 2, 1))])
def test_lp_pool(rng, name, shape, args):
    x = np.abs(rng.standard_normal(shape)) + 0.1  # positive windows: p-th roots of positive sums
    a, ar = tidal.tensor(x).requires_grad_(True), torch.from_numpy(x).requires_grad_(True)
    out, expected = getattr(F, name)(a, *args), getattr(TF, name)(ar, *args)
    assert_close(out, expected)
    backward_both(out, expected, rng)
    assert_grads_close([(a, ar)])
    mod = getattr(nn, name.replace("lp_pool", "LPPool"))(*args)
    assert repr(mod) == repr(getattr(torch.nn, name.replace("lp_pool", "LPPool"))(*args))
    assert_close(mod(a), expected)


@pytest.mark.parametrize("spatial,shape,kwargs", [(1, (2, 3, 9), {"kernel_size": 2}),
                                                  (2, (2, 3, 7, 7), {"kernel_size": 3, "stride": 2, "padding": 1}),
                                                  (3, (3, 4, 6, 6), {"kernel_size": 2})])
def test_max_unpool(rng, spatial, shape, kwargs):
    x, xr = pair(rng, shape)
    pooled, idx = getattr(F, f"max_pool{spatial}d")(x, return_indices=True, **kwargs)
    pooled_r, idx_r = getattr(TF, f"max_pool{spatial}d")(xr, return_indices=True, **kwargs)
    p, pr = tidal.tensor(pooled.numpy()).requires_grad_(True), pooled_r.detach().requires_grad_(True)
    out = getattr(F, f"max_unpool{spatial}d")(p, idx, **kwargs)
    expected = getattr(TF, f"max_unpool{spatial}d")(pr, idx_r, **kwargs)
    assert_close(out, expected)
    backward_both(out, expected, rng)
    assert_grads_close([(p, pr)])
    size = list(shape[-spatial:])  # an explicit output size, as after a pool that dropped a remainder
    mod = getattr(nn, f"MaxUnpool{spatial}d")(**kwargs)
    ref = getattr(torch.nn, f"MaxUnpool{spatial}d")(**kwargs)
    assert repr(mod) == repr(ref)
    assert_close(mod(p, idx, output_size=size), ref(pr, idx_r, output_size=size))
    with pytest.raises(ValueError, match="invalid output_size"):
        mod(p, idx, output_size=[s + 9 for s in size])
    with pytest.raises(RuntimeError, match="Found an invalid max index"):
        mod(p, idx * 0 + 10 ** 4)


def test_fractional_max_pool_with_given_samples(rng):
    for spatial, shape, kernel, kwargs in ((2, (2, 3, 9, 11), (2, 3), {"output_size": (4, 5)}),
                                           (2, (3, 9, 11), 2, {"output_ratio": (0.5, 0.7)}),
                                           (3, (2, 2, 7, 9, 8), (2, 3, 2), {"output_size": (3, 4, 5)})):
        x, xr = pair(rng, shape, requires_grad=True)
        # an unbatched input reads the first row of the samples
        samples = rng.random((shape[0] if len(shape) == spatial + 2 else 2, shape[-spatial - 1], spatial))
        name = f"fractional_max_pool{spatial}d"
        out = getattr(F, name)(x, kernel, return_indices=True, _random_samples=tidal.tensor(samples), **kwargs)
        expected = getattr(TF, name)(xr, kernel, return_indices=True, _random_samples=torch.from_numpy(samples),
                                     **kwargs)
        np.testing.assert_array_equal(out[1].numpy(), expected[1].numpy())
        assert_close(out[0], expected[0])
        backward_both(out[0], expected[0], rng)
        assert_grads_close([(x, xr)])
    pool = nn.FractionalMaxPool2d(3, output_ratio=0.5)
    out = pool(tidal.randn(2, 3, 10, 12))
    assert tuple(out.shape) == (2, 3, 5, 6) and list(pool.state_dict()) == []
    with pytest.raises(ValueError, match="requires specifying either an output size, or a pooling ratio"):
        nn.FractionalMaxPool2d(2)
    with pytest.raises(ValueError, match="output_ratio must be between 0 and 1"):
        nn.FractionalMaxPool3d(2, output_ratio=1.5)


def test_channel_shuffle(rng):
    x, xr = pair(rng, (2, 6, 3, 2), requires_grad=True)
    out, expected = F.channel_shuffle(x, 3), TF.channel_shuffle(xr, 3)
    assert_close(out, expected)
    assert_close(nn.ChannelShuffle(2)(x), torch.nn.ChannelShuffle(2)(xr))
    assert repr(nn.ChannelShuffle(2)) == repr(torch.nn.ChannelShuffle(2))
    backward_both(out, expected, rng)
    assert_grads_close([(x, xr)])
    with pytest.raises(RuntimeError, match="Number of channels must be divisible by groups"):
        F.channel_shuffle(x, 4)


# -- spatial transformers and pdist ---------------------------------------------------------------------
@pytest.mark.parametrize("spatial", [2, 3])
@pytest.mark.parametrize("align_corners", [False, True])
def test_affine_grid(rng, spatial, align_corners):
    size = [2, 3, 5, 6] if spatial == 2 else [2, 3, 4, 5, 6]
    theta, theta_r = pair(rng, (2, spatial, spatial + 1), requires_grad=True)
    out, expected = F.affine_grid(theta, size, align_corners), TF.affine_grid(theta_r, size, align_corners)
    assert_close(out, expected)
    backward_both(out, expected, rng)
    assert_grads_close([(theta, theta_r)])


GRID_CASES = [(2, mode, pad) for mode in ("bilinear", "nearest", "bicubic")
              for pad in ("zeros", "border", "reflection")]
GRID_CASES += [(3, mode, pad) for mode in ("bilinear", "nearest") for pad in ("zeros", "reflection")]


@pytest.mark.parametrize("spatial,mode,padding_mode", GRID_CASES)
def test_grid_sample(rng, spatial, mode, padding_mode):
    x, xr = pair(rng, (2, 3, 5, 6) if spatial == 2 else (2, 2, 4, 5, 3), requires_grad=True)
    points = rng.uniform(-1.3, 1.3, (2, 4, 7, spatial) if spatial == 2 else (2, 3, 4, 2, spatial))
    points[0, 0, 0], points[0, 0, 1] = 1.0, -1.0  # exactly on the borders
    for align_corners in (False, True):
        grid, grid_r = tidal.tensor(points).requires_grad_(True), torch.from_numpy(points).requires_grad_(True)
        out = F.grid_sample(x, grid, mode, padding_mode, align_corners)
        expected = TF.grid_sample(xr, grid_r, mode, padding_mode, align_corners)
        assert_close(out, expected, rtol=1e-9, atol=1e-12)
        backward_both(out, expected, rng)
        assert_grads_close([(x, xr), (grid, grid_r)], rtol=1e-9, atol=1e-12)
        x.grad, xr.grad = None, None


def test_grid_sample_errors_and_default_warning():
    x, grid = tidal.zeros(1, 1, 3, 3), tidal.zeros(1, 2, 2, 2)
    with pytest.warns(UserWarning, match="align_corners=False since 1.3.0"):
        F.grid_sample(x, grid)
    with pytest.raises(ValueError, match="expected mode to be 'bilinear', 'nearest' or 'bicubic'"):
        F.grid_sample(x, grid, mode="area", align_corners=False)
    with pytest.raises(ValueError, match="expected padding_mode to be 'zeros', 'border', or 'reflection'"):
        F.grid_sample(x, grid, padding_mode="wrap", align_corners=False)
    with pytest.raises(RuntimeError, match="bicubic interpolation only supports 4D input"):
        F.grid_sample(tidal.zeros(1, 1, 2, 2, 2), tidal.zeros(1, 1, 1, 1, 3), mode="bicubic", align_corners=False)
    with pytest.raises(ValueError, match="Expected a batch of 2D affine matrices of shape Nx2x3"):
        F.affine_grid(tidal.zeros(1, 3, 4), [1, 1, 2, 2], False)


@pytest.mark.parametrize("p", [2, 1, 0, 3.5, float("inf")])
def test_pdist(rng, p):
    x, xr = pair(rng, (5, 3), requires_grad=True)
    out, expected = F.pdist(x, p), TF.pdist(xr, p)
    assert_close(out, expected)
    backward_both(out, expected, rng)
    assert_grads_close([(x, xr)])
    with pytest.raises(RuntimeError, match="pdist only supports 2D tensors, got: 3D"):
        F.pdist(tidal.zeros(2, 2, 2))
    with pytest.raises(NotImplementedError, match="\"pdist\" not implemented for 'Half'"):
        F.pdist(tidal.zeros(3, 2, dtype=tidal.float16))


@pytest.mark.parametrize("pad", [0, 2, -1])
def test_conv_tbc(rng, pad):
    pairs = [pair(rng, s, requires_grad=True) for s in ((6, 2, 3), (3, 3, 4), (4,))]
    out = F.conv_tbc(*[p[0] for p in pairs], pad)
    expected = torch.conv_tbc(*[p[1] for p in pairs], pad)
    assert_close(out, expected)
    backward_both(out, expected, rng)
    assert_grads_close(pairs)
    with pytest.raises(RuntimeError, match="Input dim 2 \\(input channels\\) is not == dim 1 in the weight tensor"):
        F.conv_tbc(pairs[0][0], pairs[1][0][:, :2], pairs[2][0])


@pytest.mark.parametrize("size,channels", [(2, 3), (3, 6), (4, 1), (5, 7)])
def test_cross_map_lrn2d_legacy_forward_and_backward(rng, size, channels):
    x, xr = pair(rng, (2, channels, 3, 4), requires_grad=True)
    mod, ref = nn.CrossMapLRN2d(size, 0.1, 0.75, 2.0), torch.nn.CrossMapLRN2d(size, 0.1, 0.75, 2.0)
    assert repr(mod) == repr(ref)
    out, expected = mod(x), ref(xr)
    assert_close(out, expected)
    backward_both(out, expected, rng)
    assert_grads_close([(x, xr)])
    with pytest.raises(ValueError, match="CrossMapLRN2d: Expected input to be 4D, got 3D instead."):
        mod(x[0])

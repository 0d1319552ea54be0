"""Convolutions an image at a time (ops/windowed/conv_image_kernels.py: each image's columns made in cache, then one
BLAS GEMM) against torch: values and gradients of input, weight and bias, over strides, dilations, paddings, groups,
ranks, transposes and dtypes, on numba's threads and on one; the batch-wide path keeps what they do not serve."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import tidal
import tidal.compat
from tidal.ops.windowed import conv
from tidal.vm import codegen, intra_op

from kernel_loops import compile_here, kernel_threads  # noqa: F401 - a fixture

TOL = {np.float64: dict(rtol=1e-9, atol=1e-9), np.float32: dict(rtol=2e-4, atol=2e-4)}


@pytest.fixture(params=["threads", "one thread"])
def image_kernels(request, compile_here, monkeypatch):  # noqa: F811 - the fixture above
    """The per-image kernels, loaded, with their calls counted by work kind; run on numba's threads or on one."""
    kernels = codegen.kernel_module(".conv_image_kernels", "tidal.ops.windowed", spent=1e9)
    assert kernels is not None
    calls = []
    for name in ("run_parallel", "run_serial"):
        original = getattr(kernels, name)
        monkeypatch.setattr(kernels, name, lambda kind, *args, _run=original: (calls.append(kind), _run(kind, *args)))
    with kernel_threads(1 if request.param == "one thread" else None):
        yield kernels, calls


def _check(name, arrays, kwargs, dtype):
    ours = [tidal.tensor(a, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    out, ref = getattr(tidal, name)(*ours, **kwargs), getattr(F, name)(*theirs, **kwargs)
    g = np.random.default_rng(1).standard_normal(tuple(ref.shape)).astype(dtype)
    out.backward(tidal.tensor(g))
    ref.backward(torch.tensor(g))
    assert tuple(out.shape) == tuple(ref.shape)
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), **TOL[dtype])
    for o, t in zip(ours, theirs):
        np.testing.assert_allclose(o.grad.numpy(), t.grad.numpy(), **TOL[dtype])


CASES = [  # name, input, weight, kwargs
    ("conv2d", (4, 3, 9, 11), (6, 3, 3, 3), dict(padding=1)),
    ("conv2d", (5, 4, 12, 10), (6, 4, 3, 3), dict(stride=2, padding=1)),
    ("conv2d", (3, 4, 9, 11), (6, 2, 3, 2), dict(padding=(2, 0), dilation=(1, 2), groups=2)),
    ("conv2d", (2, 3, 8, 8), (5, 3, 2, 4), dict(padding="same")),        # asymmetric padding
    ("conv2d", (3, 2, 7, 6), (4, 2, 5, 5), dict(stride=(3, 2), padding=4)),  # padding wider than some windows' reach
    ("conv2d", (2, 6, 5, 6), (6, 1, 3, 3), dict(padding=1, groups=6)),   # depthwise
    ("conv2d", (3, 8, 6, 6), (4, 8, 1, 1), dict()),                      # 1x1
    ("conv1d", (3, 5, 40), (7, 5, 5), dict(stride=2, padding=2, dilation=2)),
    ("conv_transpose2d", (3, 4, 7, 6), (4, 3, 3, 3), dict(stride=2, padding=1, output_padding=1)),
    ("conv_transpose1d", (2, 4, 9), (4, 6, 3), dict(padding=1)),
]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name,x_shape,w_shape,kwargs", CASES)
def test_conv_by_image_matches_torch(image_kernels, name, x_shape, w_shape, kwargs, dtype):
    kernels, calls = image_kernels
    rng = np.random.default_rng(0)
    out_channels = w_shape[1] * kwargs.get("groups", 1) if name.startswith("conv_transpose") else w_shape[0]
    arrays = [rng.standard_normal(s).astype(dtype) for s in (x_shape, w_shape, (out_channels,))]
    _check(name, arrays, kwargs, dtype)
    assert sorted(set(calls)) == [kernels.FORWARD, kernels.INPUT_GRAD, kernels.WEIGHT_GRAD]


def test_conv_without_bias_and_channels_last_by_image(image_kernels):
    kernels, calls = image_kernels
    rng = np.random.default_rng(5)
    x, w = rng.standard_normal((3, 3, 6, 7)), rng.standard_normal((4, 3, 3, 3))
    ours = tidal.nn.functional.conv2d(tidal.tensor(x).to(memory_format=tidal.compat.channels_last), tidal.tensor(w),
                                      padding=1)
    ref = F.conv2d(torch.tensor(x).to(memory_format=torch.channels_last), torch.tensor(w), padding=1)
    assert ours.stride() == ref.stride()
    np.testing.assert_allclose(ours.numpy(), ref.numpy(), rtol=1e-12)
    assert calls == [kernels.FORWARD]


def test_non_finite_values_spread_by_image_as_in_torch(image_kernels):
    rng = np.random.default_rng(3)
    x, w = rng.standard_normal((2, 2, 5, 6)), rng.standard_normal((3, 2, 3, 3))
    x[1, 0, 2, 3], w[1, 0, 0, 0] = np.inf, np.nan
    ours = [tidal.tensor(x, requires_grad=True), tidal.tensor(w, requires_grad=True)]
    theirs = [torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)]
    out, ref = tidal.nn.functional.conv2d(*ours, padding=1), F.conv2d(*theirs, padding=1)
    out.sum().backward()
    ref.sum().backward()
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-12, equal_nan=True)
    for o, t in zip(ours, theirs):
        np.testing.assert_allclose(o.grad.numpy(), t.grad.numpy(), rtol=1e-12, equal_nan=True)


def test_one_image_or_half_precision_keep_the_batch_wide_path(image_kernels):
    kernels, calls = image_kernels
    rng = np.random.default_rng(4)
    x, w = rng.standard_normal((1, 3, 6, 7)), rng.standard_normal((4, 3, 3, 3))
    one = tidal.nn.functional.conv2d(tidal.tensor(x), tidal.tensor(w), padding=1)
    np.testing.assert_allclose(one.numpy(), F.conv2d(torch.tensor(x), torch.tensor(w), padding=1).numpy(), rtol=1e-12)
    assert calls == ([] if intra_op.get_threads() > 1 else [kernels.FORWARD])
    calls.clear()
    x2 = np.concatenate([x, x])
    half = tidal.nn.functional.conv2d(tidal.tensor(x2, dtype=tidal.float16), tidal.tensor(w, dtype=tidal.float16),
                                      padding=1)
    ref = F.conv2d(torch.tensor(x2, dtype=torch.float16), torch.tensor(w, dtype=torch.float16), padding=1)
    np.testing.assert_allclose(half.float().numpy(), ref.float().numpy(), rtol=2e-2, atol=5e-2)
    assert calls == []


def test_the_same_bits_in_sync_and_async_runs_of_a_conv_net(image_kernels):
    rng = np.random.default_rng(6)
    x = rng.standard_normal((4, 2, 10, 10)).astype(np.float32)

    def run():
        tidal.manual_seed(0)
        net = tidal.nn.Sequential(tidal.nn.Conv2d(2, 5, 3, padding=1), tidal.nn.ReLU(), tidal.nn.Conv2d(5, 3, 3))
        loss = net(tidal.tensor(x)).square().sum()
        loss.backward()
        return [loss.item()] + [p.grad.numpy().copy() for p in net.parameters()]

    asynchronous = run()
    before = tidal.vm.get_mode()
    tidal.vm.set_mode("sync")
    try:
        synchronous = run()
    finally:
        tidal.vm.set_mode(before)
    for a, s in zip(asynchronous, synchronous):
        np.testing.assert_array_equal(a, s)

"""Convolution and pooling layers against PyTorch: values, gradients, repr, state dicts."""
import numpy as np
import pytest
import torch

import tidal
from tidal import nn


def _load_from_torch(ours, theirs):
    ours.load_state_dict({k: tidal.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()})


CONV_CASES = [
    ("Conv1d", (3, 5, 3), dict(), (2, 3, 11)),
    ("Conv1d", (4, 6, 2), dict(stride=2, padding=1, groups=2, bias=False), (2, 4, 9)),
    ("Conv2d", (3, 8, 3), dict(padding="same"), (2, 3, 8, 8)),
    ("Conv2d", (4, 4, (3, 2)), dict(stride=(2, 1), dilation=(1, 2), groups=4), (1, 4, 9, 10)),
    ("Conv2d", (3, 6, 3), dict(padding=1, padding_mode="reflect"), (2, 3, 7, 7)),
    ("ConvTranspose1d", (3, 5, 3), dict(stride=2, output_padding=1), (2, 3, 6)),
    ("ConvTranspose2d", (4, 6, 3), dict(stride=2, padding=1, output_padding=1, groups=2), (2, 4, 5, 5)),
]


@pytest.mark.parametrize("name,args,kwargs,shape", CONV_CASES)
def test_conv_layers_match_torch(name, args, kwargs, shape):
    theirs = getattr(torch.nn, name)(*args, **kwargs).double()
    ours = getattr(nn, name)(*args, **kwargs, dtype=tidal.float64)
    _load_from_torch(ours, theirs)
    assert repr(ours) == repr(theirs)
    x = np.random.default_rng(0).standard_normal(shape)
    tx = torch.tensor(x, requires_grad=True)
    ox = tidal.tensor(x, requires_grad=True)
    ty, oy = theirs(tx), ours(ox)
    np.testing.assert_allclose(oy.detach().numpy(), ty.detach().numpy(), rtol=1e-10, atol=1e-10)
    g = np.random.default_rng(1).standard_normal(ty.shape)
    ty.backward(torch.tensor(g))
    oy.backward(tidal.tensor(g))
    np.testing.assert_allclose(ox.grad.numpy(), tx.grad.numpy(), rtol=1e-9, atol=1e-9)
    for (n, p), (_, tp) in zip(ours.named_parameters(), theirs.named_parameters()):
        np.testing.assert_allclose(p.grad.numpy(), tp.grad.numpy(), rtol=1e-9, atol=1e-9, err_msg=n)


def test_conv_default_init_bounds():
    tidal.manual_seed(0)
    layer = nn.Conv2d(3, 8, 3)
    bound = 1 / np.sqrt(3 * 9)
    w = layer.weight.detach().numpy()
    assert np.abs(w).max() <= bound + 1e-6 and np.abs(w).max() > bound * 0.5
    assert np.abs(layer.bias.detach().numpy()).max() <= bound + 1e-6
    assert [k for k, _ in layer.state_dict().items()] == ["weight", "bias"]


def test_conv_argument_errors():
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        nn.Conv2d(3, 6, 3, groups=2)
    with pytest.raises(ValueError, match="padding='same' is not supported for strided convolutions"):
        nn.Conv2d(3, 6, 3, stride=2, padding="same")


POOL_CASES = [
    ("MaxPool1d", (3,), dict(stride=2, padding=1), (2, 3, 10)),
    ("MaxPool2d", (2,), dict(), (2, 3, 8, 8)),
    ("MaxPool2d", (3,), dict(stride=2, padding=1, ceil_mode=True), (1, 2, 9, 9)),
    ("AvgPool1d", (2,), dict(), (2, 3, 9)),
    ("AvgPool2d", (3,), dict(stride=2, padding=1, count_include_pad=False), (2, 2, 7, 7)),
    ("AdaptiveAvgPool1d", (4,), dict(), (2, 3, 10)),
    ("AdaptiveAvgPool2d", ((3, 2),), dict(), (2, 3, 7, 9)),
    ("AdaptiveMaxPool2d", (3,), dict(), (2, 3, 7, 8)),
]


@pytest.mark.parametrize("name,args,kwargs,shape", POOL_CASES)
def test_pool_layers_match_torch(name, args, kwargs, shape):
    theirs = getattr(torch.nn, name)(*args, **kwargs)
    ours = getattr(nn, name)(*args, **kwargs)
    assert repr(ours) == repr(theirs)
    x = np.random.default_rng(2).standard_normal(shape)
    tx, ox = torch.tensor(x, requires_grad=True), tidal.tensor(x, requires_grad=True)
    ty, oy = theirs(tx), ours(ox)
    np.testing.assert_allclose(oy.detach().numpy(), ty.detach().numpy(), rtol=1e-12)
    ty.sum().backward()
    oy.sum().backward()
    np.testing.assert_allclose(ox.grad.numpy(), tx.grad.numpy(), rtol=1e-12)


def test_unfold_fold_modules():
    x = np.random.default_rng(3).standard_normal((2, 3, 6, 6))
    cols = nn.Unfold(kernel_size=2, stride=2)(tidal.tensor(x))
    ref = torch.nn.Unfold(kernel_size=2, stride=2)(torch.tensor(x))
    np.testing.assert_allclose(cols.numpy(), ref.numpy())
    back = nn.Fold(output_size=(6, 6), kernel_size=2, stride=2)(cols)
    np.testing.assert_allclose(back.numpy(), x)
    assert repr(nn.Fold((6, 6), 2)) == repr(torch.nn.Fold((6, 6), 2))

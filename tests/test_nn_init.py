"""tidal.nn.init: distributions within statistical bounds, torch's fan and gain formulas, reproducibility
under tidal.manual_seed and generators, no graph recording, and errors."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import tidal
import tidal.nn as nn
from tidal.nn import init


def values(t) -> np.ndarray:
    return (t.detach().float() if t.dtype is tidal.bfloat16 else t.detach()).numpy().astype(np.float64).ravel()


@pytest.mark.parametrize("nonlinearity,param", [("linear", None), ("conv2d", None), ("sigmoid", None), ("tanh", None),
                                                ("relu", None), ("leaky_relu", None), ("leaky_relu", 0.2),
                                                ("leaky_relu", 3), ("selu", None)])
def test_calculate_gain_matches_torch(nonlinearity, param):
    assert init.calculate_gain(nonlinearity, param) == pytest.approx(torch.nn.init.calculate_gain(nonlinearity, param))


def test_calculate_gain_errors():
    with pytest.raises(ValueError, match="Unsupported nonlinearity foo"):
        init.calculate_gain("foo")
    with pytest.raises(ValueError, match="negative_slope True not a valid number"):
        init.calculate_gain("leaky_relu", True)


@pytest.mark.parametrize("shape", [(3, 4), (5, 2, 3, 3), (4, 6, 2)])
def test_fan_computation_matches_torch(shape):
    assert init._calculate_fan_in_and_fan_out(tidal.empty(*shape)) == \
        torch.nn.init._calculate_fan_in_and_fan_out(torch.empty(*shape))
    with pytest.raises(ValueError, match="Fan in and fan out can not be computed for tensor with fewer than 2"):
        init._calculate_fan_in_and_fan_out(tidal.empty(3))


def _check_uniform(v: np.ndarray, lo: float, hi: float) -> None:
    assert v.min() >= lo and v.max() <= hi
    width = hi - lo
    assert v.min() < lo + 0.01 * width and v.max() > hi - 0.01 * width
    assert abs(v.mean() - (lo + hi) / 2) < 0.02 * width
    assert abs(v.std() - width / math.sqrt(12)) < 0.02 * width


def _check_normal(v: np.ndarray, mean: float, std: float) -> None:
    n = v.size
    assert abs(v.mean() - mean) < 5 * std / math.sqrt(n)
    assert abs(v.std() - std) < 0.03 * std


def test_uniform_normal_constant():
    t = tidal.empty(200, 100)
    _check_uniform(values(init.uniform_(t, -2.0, 3.0)), -2.0, 3.0)
    _check_normal(values(init.normal_(t, 1.5, 0.5)), 1.5, 0.5)
    assert (values(init.constant_(t, 0.25)) == 0.25).all()
    assert (values(init.ones_(t)) == 1).all() and (values(init.zeros_(t)) == 0).all()
    assert init.uniform_(t) is t


@pytest.mark.parametrize("shape", [(256, 128), (64, 32, 3, 3)])
@pytest.mark.parametrize("gain", [1.0, 2.0])
def test_xavier(shape, gain):
    t = tidal.empty(*shape)
    fan_in, fan_out = init._calculate_fan_in_and_fan_out(t)
    std = gain * math.sqrt(2.0 / (fan_in + fan_out))
    bound = math.sqrt(3.0) * std
    _check_uniform(values(init.xavier_uniform_(t, gain)), -bound, bound)
    _check_normal(values(init.xavier_normal_(t, gain)), 0.0, std)


@pytest.mark.parametrize("mode", ["fan_in", "fan_out"])
@pytest.mark.parametrize("nonlinearity,a", [("leaky_relu", 0), ("relu", 0), ("leaky_relu", math.sqrt(5)),
                                            ("tanh", 0)])
def test_kaiming(mode, nonlinearity, a):
    t = tidal.empty(128, 64, 3)
    fan = init._calculate_correct_fan(t, mode)
    std = init.calculate_gain(nonlinearity, a) / math.sqrt(fan)
    _check_uniform(values(init.kaiming_uniform_(t, a, mode, nonlinearity)), -math.sqrt(3) * std, math.sqrt(3) * std)
    _check_normal(values(init.kaiming_normal_(t, a, mode, nonlinearity)), 0.0, std)
    with pytest.raises(ValueError, match=r"Mode fan_avg not supported, please use one of \['fan_in', 'fan_out'\]"):
        init.kaiming_uniform_(t, mode="fan_avg")


def test_kaiming_zero_element_warns():
    with pytest.warns(UserWarning, match="Initializing zero-element tensors is a no-op"):
        init.kaiming_uniform_(tidal.empty(0, 3))


@pytest.mark.parametrize("mean,std,a,b", [(0.0, 1.0, -2.0, 2.0), (0.5, 2.0, -1.0, 3.0), (0.0, 0.02, -0.04, 0.04)])
def test_trunc_normal(mean, std, a, b):
    t = tidal.empty(300, 200)
    v = values(init.trunc_normal_(t, mean, std, a, b))
    ref = values(torch.nn.init.trunc_normal_(torch.empty(300, 200, dtype=torch.float64), mean, std, a, b))
    assert v.min() >= a and v.max() <= b
    assert abs(v.mean() - ref.mean()) < 0.02 * std + 3 * ref.std() / math.sqrt(v.size)
    assert abs(v.std() - ref.std()) < 0.02 * ref.std()
    with pytest.warns(UserWarning, match="mean is more than 2 std from \\[a, b\\]"):
        init.trunc_normal_(tidal.empty(10), mean=10.0, std=1.0, a=-1.0, b=1.0)


@pytest.mark.parametrize("dtype", [tidal.float16, tidal.bfloat16])
def test_trunc_normal_half(dtype):
    v = values(init.trunc_normal_(tidal.empty(1000, dtype=dtype), std=0.02, a=-0.04, b=0.04))
    assert v.min() >= -0.0401 and v.max() <= 0.0401 and abs(v.std() - 0.0176) < 0.002


@pytest.mark.parametrize("shape", [(6, 4), (4, 6), (5, 2, 3), (7, 7)])
@pytest.mark.parametrize("gain", [1.0, 0.5])
def test_orthogonal(shape, gain):
    t = tidal.empty(*shape)
    init.orthogonal_(t, gain)
    m = t.detach().numpy().reshape(shape[0], -1).astype(np.float64) / gain
    rows, cols = m.shape
    gram = m @ m.T if rows <= cols else m.T @ m
    np.testing.assert_allclose(gram, np.eye(min(rows, cols)), atol=1e-5)
    with pytest.raises(ValueError, match="Only tensors with 2 or more dimensions are supported"):
        init.orthogonal_(tidal.empty(3))


def test_eye_dirac_sparse():
    e = init.eye_(tidal.empty(3, 5))
    np.testing.assert_array_equal(e.numpy(), np.eye(3, 5))
    with pytest.raises(ValueError, match="Only tensors with 2 dimensions are supported"):
        init.eye_(tidal.empty(3))
    w = tidal.empty(4, 2, 3, 3)
    ref = torch.empty(4, 2, 3, 3)
    np.testing.assert_array_equal(init.dirac_(w, 2).numpy(), torch.nn.init.dirac_(ref, 2).numpy())
    np.testing.assert_array_equal(init.dirac_(tidal.empty(3, 3, 5)).numpy(),
                                  torch.nn.init.dirac_(torch.empty(3, 3, 5)).numpy())
    with pytest.raises(ValueError, match="dim 0 must be divisible by groups"):
        init.dirac_(tidal.empty(3, 2, 3), 2)
    s = init.sparse_(tidal.empty(10, 40), 0.3).numpy()
    assert ((s == 0).sum(0) == 3).all()


def test_reproducible_with_seed_and_generator():
    for fn in (init.uniform_, init.normal_, init.xavier_uniform_, init.kaiming_normal_, init.trunc_normal_,
               init.orthogonal_):
        tidal.manual_seed(123)
        a = values(fn(tidal.empty(8, 6)))
        tidal.manual_seed(123)
        b = values(fn(tidal.empty(8, 6)))
        np.testing.assert_array_equal(a, b)
        c = values(fn(tidal.empty(8, 6)))
        assert not np.array_equal(a, c)
    g1 = tidal.Generator().manual_seed(9)
    g2 = tidal.Generator().manual_seed(9)
    np.testing.assert_array_equal(values(init.normal_(tidal.empty(5), generator=g1)),
                                  values(init.normal_(tidal.empty(5), generator=g2)))


def test_init_on_parameters_records_no_graph():
    p = nn.Parameter(tidal.empty(4, 3))
    for fn in (init.uniform_, init.normal_, init.xavier_uniform_, init.kaiming_uniform_, init.trunc_normal_,
               init.orthogonal_, init.zeros_, init.eye_):
        out = fn(p)
        assert out is p and p.grad_fn is None and p.requires_grad and p.is_leaf


def test_deprecated_aliases_warn():
    with pytest.warns(FutureWarning, match="nn.init.normal` is now deprecated in favor of `nn.init.normal_`"):
        init.normal(tidal.empty(3))

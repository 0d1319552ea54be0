"""float32 erf and GELU in float32 arithmetic: compiled loops run scalar_kernels.erf_single (two float32
polynomials by fused multiply-adds) and GELU's float32 template in torch's order; the NumPy path runs
special.erf_single (a float64 formula). Checked against the exact erf (math.erf), each other and torch."""
import math

import numpy as np
import pytest
import torch

import tidal
from tidal.vm import fusion

_ERF = np.vectorize(math.erf, otypes=[np.float64])
_SQRT1_2 = np.float32(math.sqrt(0.5))


def _ulps(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    # distance in float32 steps, across zero too
    def ordered(a):
        i = a.view(np.int32).astype(np.int64)
        return np.where(i < 0, -(i & 0x7FFFFFFF), i)
    return np.abs(ordered(got) - ordered(want))


def _on_path(name: str, monkeypatch) -> None:
    # groups compiled at once on this thread, or never (the NumPy path: a program compiled once stays
    # compiled, so the fusion pass starts from empty program tables)
    if name == "compiled":
        tidal.vm.set_fusion(enabled=True, compile_after=1, background_compile=False)
    else:
        monkeypatch.setattr(fusion, "_programs", {})
        monkeypatch.setattr(fusion, "_singles", {})
        tidal.vm.set_fusion(enabled=True, compile_after=10**9)


@pytest.fixture(params=["compiled", "numpy"])
def path(request, monkeypatch):
    """Which execution path runs the test's elementwise groups."""
    saved = tidal.vm.get_fusion()
    _on_path(request.param, monkeypatch)
    try:
        yield request.param
    finally:
        tidal.vm.set_fusion(**{k: saved[k] for k in ("enabled", "compile_after", "background_compile")})


def _sweep() -> np.ndarray:
    # every 23rd float32 of [0.25, 4.5) (the polynomials' seam at 1 and the saturation at 3.9192059 inside),
    # and their negatives
    lo, hi = (int(np.float32(v).view(np.int32)) for v in (0.25, 4.5))
    x = np.arange(lo, hi, 23, dtype=np.int32).view(np.float32)
    return np.concatenate([x, -x])


def test_float32_erf_on_a_dense_sweep(path):
    x = _sweep()
    got = (tidal.tensor(x) * 1.0).erf().numpy()  # (one fused group)
    exact = _ERF(x.astype(np.float64))
    ulps = _ulps(got, exact.astype(np.float32))
    assert ulps.max() <= 1
    assert np.mean(ulps == 0) >= 0.95  # exactly rounded: 97% (compiled), 98% (NumPy)
    half = x.size // 2
    np.testing.assert_array_equal(got[half:], -got[:half])  # odd, to the bit


def test_paths_agree_within_an_ulp(monkeypatch):
    x = _sweep()
    saved = tidal.vm.get_fusion()
    try:
        _on_path("compiled", monkeypatch)
        compiled = (tidal.tensor(x) * 1.0).erf().numpy()
        _on_path("numpy", monkeypatch)
        numpy_path = (tidal.tensor(x) * 1.0).erf().numpy()
    finally:
        tidal.vm.set_fusion(**{k: saved[k] for k in ("enabled", "compile_after", "background_compile")})
    ulps = _ulps(compiled, numpy_path)
    assert ulps.max() <= 1 and 0 < np.mean(ulps) < 0.1  # two formulas, each within an ulp of the exact erf


def _gelu_inputs() -> np.ndarray:
    rng = np.random.default_rng(3)  # (past fusion's single_compile_bytes: a lone op compiles in sync mode too)
    return np.concatenate([rng.standard_normal(80000) * 2, [0.0, -0.0, 6.0, -6.0, 1e-30, -1e-30]]).astype(np.float32)


def test_float32_gelu_is_the_float32_formula_in_torchs_order(path):
    # x * 0.5 * (1 + erf(x * sqrt(1/2))), each step rounded to float32, with tidal's own float32 erf
    x = _gelu_inputs()
    got = tidal.nn.functional.gelu(tidal.tensor(x)).numpy()
    erf = tidal.tensor(x * _SQRT1_2).erf().numpy()
    want = x * np.float32(0.5) * (np.float32(1) + erf)
    np.testing.assert_array_equal(got, want)
    torch_got = torch.nn.functional.gelu(torch.tensor(x)).numpy()
    np.testing.assert_allclose(got, torch_got, rtol=1.3e-6, atol=1e-6)  # (torch's erf here: 1.5e-7 off)


def test_float32_gelu_backward_follows_torch(path):
    x = _gelu_inputs()
    g = np.random.default_rng(4).standard_normal(x.size).astype(np.float32)
    ours = tidal.tensor(x, requires_grad=True)
    theirs = torch.tensor(x, requires_grad=True)
    for _ in range(2):  # (the second pass runs the compiled backward group)
        ours.grad = None
        tidal.nn.functional.gelu(ours).backward(tidal.tensor(g))
    torch.nn.functional.gelu(theirs).backward(torch.tensor(g))
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=2e-6, atol=1e-6)


def test_compiled_float32_exp_on_a_sweep(monkeypatch):
    # scalar_kernels.exp_single (by fused multiply-adds): every 997th float32 from -104 (results down in the
    # denormals) to 88.8 (up to the largest float32), against the float64 exp rounded
    bits = [int(np.float32(v).view(np.int32)) for v in (-104.0, -0.0, 0.0, 88.8)]
    x = np.concatenate([np.arange(bits[1], bits[0], 997, dtype=np.int32),
                        np.arange(bits[2], bits[3], 997, dtype=np.int32)]).view(np.float32)
    saved = tidal.vm.get_fusion()
    try:
        _on_path("compiled", monkeypatch)
        got = (tidal.tensor(x) * 1.0).exp().numpy()
    finally:
        tidal.vm.set_fusion(**{k: saved[k] for k in ("enabled", "compile_after", "background_compile")})
    with np.errstate(over="ignore"):  # (past 88.72 the float32 exp is inf)
        want = np.exp(x.astype(np.float64)).astype(np.float32)
    ulps = _ulps(got, want)
    assert ulps.max() <= 1
    assert np.mean(ulps == 0) >= 0.985  # 99.2% exactly rounded

"""tidal.fft (and torch.fft in compat) against torch.fft: values, dtypes, n/s/dim/norm, errors, gradients."""
import numpy as np
import pytest
import torch

import tidal
import tidal.compat as tc

RNG = np.random.default_rng(3)
NORMS = [None, "backward", "ortho", "forward"]


def _data(shape, dtype):
    x = RNG.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * RNG.standard_normal(shape)
    if np.dtype(dtype).kind == "i":
        x = (x * 5).round()
    return x.astype(dtype)


def _np(t):
    return t.detach().resolve_conj().numpy() if isinstance(t, torch.Tensor) else t.detach().numpy()


def _same(a, b, tol=1e-4):
    assert a.dtype.name == str(b.dtype).split(".")[-1]
    assert tuple(a.shape) == tuple(b.shape)
    scale = max(1.0, float(np.abs(_np(b)).max(initial=0)))
    np.testing.assert_allclose(_np(a), _np(b), rtol=tol, atol=tol * scale)


def _raises_like(fn_t, fn_torch):
    with pytest.raises(Exception) as want:
        fn_torch()
    with pytest.raises(type(want.value)) as got:
        fn_t()
    assert str(got.value) == str(want.value)


ONE_D = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"]
REAL_ONLY = {"rfft", "ihfft", "rfft2", "ihfft2", "rfftn", "ihfftn"}


@pytest.mark.parametrize("name", ONE_D)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128, np.int64])
@pytest.mark.parametrize("norm", NORMS)
def test_one_dimensional(name, dtype, norm):
    if name in REAL_ONLY and np.dtype(dtype).kind == "c":
        pytest.skip("real input only (the error is tested below)")
    x = _data((3, 8), dtype)
    f, g = getattr(tidal.fft, name), getattr(torch.fft, name)
    tol = 1e-4 if dtype in (np.float32, np.complex64, np.int64) else 1e-10
    _same(f(tidal.tensor(x), norm=norm), g(torch.tensor(x), norm=norm), tol)
    for n, dim in ((5, -1), (12, 1), (2, 0), (7, 0)):
        _same(f(tidal.tensor(x), n=n, dim=dim, norm=norm), g(torch.tensor(x), n=n, dim=dim, norm=norm), tol)


MULTI = ["fft2", "ifft2", "rfft2", "irfft2", "hfft2", "ihfft2", "fftn", "ifftn", "rfftn", "irfftn", "hfftn", "ihfftn"]


@pytest.mark.parametrize("name", MULTI)
@pytest.mark.parametrize("norm", NORMS)
def test_multi_dimensional(name, norm):
    dtype = np.float64 if name in REAL_ONLY else np.complex128
    x = _data((2, 4, 6), dtype)
    f, g = getattr(tidal.fft, name), getattr(torch.fft, name)
    _same(f(tidal.tensor(x), norm=norm), g(torch.tensor(x), norm=norm), 1e-10)
    for kwargs in (dict(s=(3, 8)), dict(dim=(0, 2)), dict(s=(5, 3), dim=(2, 0)), dict(s=(-1, 4), dim=(1, 2))):
        _same(f(tidal.tensor(x), norm=norm, **kwargs), g(torch.tensor(x), norm=norm, **kwargs), 1e-10)
    if name.endswith("n"):
        _same(f(tidal.tensor(x), s=(4,)), g(torch.tensor(x), s=(4,)), 1e-10)
        _same(f(tidal.tensor(x), dim=1), g(torch.tensor(x), dim=1), 1e-10)


def test_compat_namespace_and_roundtrip():
    import importlib
    assert tc.fft.fft is tidal.fft.fft and importlib.import_module("tidal.compat.fft").rfft is tidal.fft.rfft
    x = _data((16,), np.float32)
    back = tc.fft.irfft(tc.fft.rfft(tidal.tensor(x)), n=16)
    np.testing.assert_allclose(back.numpy(), x, atol=1e-5)


@pytest.mark.parametrize("d", [1.0, 0.5, 3])
@pytest.mark.parametrize("n", [1, 4, 5])
def test_frequencies(n, d):
    _same(tidal.fft.fftfreq(n, d), torch.fft.fftfreq(n, d), 1e-7)
    _same(tidal.fft.rfftfreq(n, d), torch.fft.rfftfreq(n, d), 1e-7)
    _same(tidal.fft.fftfreq(n, d, dtype=tidal.float64), torch.fft.fftfreq(n, d, dtype=torch.float64), 1e-12)


@pytest.mark.parametrize("dim", [None, 0, 1, (0, 1), -1])
def test_shifts(dim):
    x = _data((4, 5), np.float32)
    _same(tidal.fft.fftshift(tidal.tensor(x), dim), torch.fft.fftshift(torch.tensor(x), dim), 0)
    _same(tidal.fft.ifftshift(tidal.tensor(x), dim), torch.fft.ifftshift(torch.tensor(x), dim), 0)


def test_errors():
    x = _data((4,), np.float32)
    cases = [
        lambda L: L.fft.fft(L.tensor(x), norm="foo"),
        lambda L: L.fft.fft(L.tensor(x), n=0),
        lambda L: L.fft.rfft(L.tensor(x.astype(np.complex64))),
        lambda L: L.fft.ihfft(L.tensor(x.astype(np.complex64))),
        lambda L: L.fft.fft(L.tensor(x), dim=2),
        lambda L: L.fft.fftn(L.tensor(_data((2, 3), np.float32)), s=(2,), dim=(0, 1)),
        lambda L: L.fft.fftn(L.tensor(_data((2, 3), np.float32)), dim=(0, 0)),
        lambda L: L.fft.fft(L.tensor(x).half()),
        lambda L: L.fft.fft2(L.tensor(x)),
        lambda L: L.fft.fft(L.tensor(1.0)),
        lambda L: L.fft.irfft(L.tensor(x), n=0),
        lambda L: L.fft.irfft(L.tensor([1.0])),
    ]
    for case in cases:
        _raises_like(lambda: case(tidal), lambda: case(torch))


# -- gradients: the adjoint transforms -------------------------------------------------------------------------
def _grad(lib, name, x, w, kwargs):
    t = lib.tensor(x, requires_grad=True)
    out = getattr(lib.fft, name)(t, **kwargs)
    weight = lib.tensor(w[tuple(slice(0, n) for n in out.shape)])
    loss = (out * weight).real.sum() if out.dtype.is_complex else (out * weight.real).sum()
    loss.backward()
    return t.grad


GRAD_KWARGS = [dict(), dict(n=5), dict(n=11, norm="ortho"), dict(dim=0, norm="forward")]


@pytest.mark.parametrize("name", ONE_D)
@pytest.mark.parametrize("kwargs", GRAD_KWARGS, ids=lambda k: "-".join(f"{a}{b}" for a, b in k.items()) or "plain")
@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_gradients_one_dimensional(name, kwargs, dtype):
    if name in REAL_ONLY and np.dtype(dtype).kind == "c":
        pytest.skip("real input only")
    x, w = _data((4, 8), dtype), _data((16, 16), np.complex128)
    _same(_grad(tidal, name, x, w, kwargs), _grad(torch, name, x, w, kwargs), 1e-9)


@pytest.mark.parametrize("name", MULTI)
@pytest.mark.parametrize("kwargs", [dict(), dict(s=(3, 7), norm="ortho"), dict(dim=(0, 2), norm="forward")],
                         ids=["plain", "s", "dim"])
def test_gradients_multi_dimensional(name, kwargs):
    dtype = np.float64 if name in REAL_ONLY else np.complex128
    x, w = _data((2, 4, 6), dtype), _data((16, 16, 16), np.complex128)
    _same(_grad(tidal, name, x, w, kwargs), _grad(torch, name, x, w, kwargs), 1e-9)


def test_gradient_of_real_input_to_complex_fft():
    x, w = _data((6,), np.float32), _data((6,), np.complex64)
    _same(_grad(tidal, "fft", x, w, {}), _grad(torch, "fft", x, w, {}), 1e-4)


def test_spectral_layer_trains_like_torch():
    # a tiny spectral filter: rfft, a learned complex weight, irfft; its gradients match torch's
    x = _data((3, 16), np.float32)
    w0 = _data((9,), np.complex64)

    def step(lib):
        w = lib.tensor(w0, requires_grad=True)
        y = lib.fft.irfft(lib.fft.rfft(lib.tensor(x)) * w, n=16)
        loss = (y ** 2).mean()
        loss.backward()
        return loss, w.grad

    (l1, g1), (l2, g2) = step(tidal), step(torch)
    _same(l1, l2, 1e-5)
    _same(g1, g2, 1e-4)

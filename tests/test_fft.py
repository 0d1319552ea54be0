"""tidal.fft (and torch.fft in compat) against torch.fft: values, dtypes, n/s/dim/norm, errors, gradients."""
import warnings

import numpy as np
import pytest
import torch

import tidal
import tidal.compat as tc
from complex_helpers import raises_like, to_numpy

RNG = np.random.default_rng(3)
NORMS = [None, "backward", "ortho", "forward"]


def _data(shape, dtype):
    x = RNG.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * RNG.standard_normal(shape)
    if np.dtype(dtype).kind == "i":
        x = (x * 5).round()
    return x.astype(dtype)


def _same(a, b, tol=1e-4):
    assert a.dtype.name == str(b.dtype).split(".")[-1]
    assert tuple(a.shape) == tuple(b.shape)
    scale = max(1.0, float(np.abs(to_numpy(b)).max(initial=0)))
    np.testing.assert_allclose(to_numpy(a), to_numpy(b), rtol=tol, atol=tol * scale)


ONE_D = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"]
REAL_ONLY = {"rfft", "ihfft", "rfft2", "ihfft2", "rfftn", "ihfftn"}


def _inputs(names, dtypes):
    """(name, dtype) pairs, leaving out complex inputs of the transforms that take real ones only (their error
    is tested below)."""
    return [(n, d) for n in names for d in dtypes if not (n in REAL_ONLY and np.dtype(d).kind == "c")]


@pytest.mark.parametrize("name,dtype", _inputs(ONE_D, [np.float32, np.float64, np.complex64, np.complex128, np.int64]))
@pytest.mark.parametrize("norm", NORMS)
def test_one_dimensional(name, dtype, norm):
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
        raises_like(lambda: case(tidal), lambda: case(torch))


# -- gradients: the adjoint transforms -------------------------------------------------------------------------
def _grad(lib, name, x, w, kwargs):
    t = lib.tensor(x, requires_grad=True)
    out = getattr(lib.fft, name)(t, **kwargs)
    weight = lib.tensor(w[tuple(slice(0, n) for n in out.shape)])
    loss = (out * weight).real.sum() if out.dtype.is_complex else (out * weight.real).sum()
    loss.backward()
    return t.grad


GRAD_KWARGS = [dict(), dict(n=5), dict(n=11, norm="ortho"), dict(dim=0, norm="forward")]


@pytest.mark.parametrize("name,dtype", _inputs(ONE_D, [np.float64, np.complex128]))
@pytest.mark.parametrize("kwargs", GRAD_KWARGS, ids=lambda k: "-".join(f"{a}{b}" for a, b in k.items()) or "plain")
def test_gradients_one_dimensional(name, kwargs, dtype):
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


# -- stft / istft ------------------------------------------------------------------------------------------
STFT_CASES = [
    dict(n_fft=16),
    dict(n_fft=16, hop_length=5, window="hann"),
    dict(n_fft=16, win_length=10, window="hann"),
    dict(n_fft=16, center=False, normalized=True),
    dict(n_fft=16, onesided=False),
    dict(n_fft=15, hop_length=3, window="hann"),
]


def _stft_args(lib, case):
    kw = dict(case)
    if kw.pop("window", None):
        kw["window"] = lib.hann_window(kw.get("win_length", kw["n_fft"]), dtype=lib.float64)
    else:
        kw["window"] = lib.ones(kw["n_fft"])
    return kw


@pytest.mark.parametrize("case", STFT_CASES, ids=str)
@pytest.mark.parametrize("shape", [(40,), (2, 40)])
def test_stft_istft_values(case, shape):
    x = _data(shape, np.float64)
    for return_complex in (True, False):
        a = tidal.stft(tidal.tensor(x), return_complex=return_complex, **_stft_args(tidal, case))
        b = torch.stft(torch.tensor(x), return_complex=return_complex, **_stft_args(torch, case))
        _same(a, b, 1e-10)
    spec = torch.stft(torch.tensor(x), return_complex=True, **_stft_args(torch, case)).numpy()
    istft_args = {k: v for k, v in case.items() if k != "pad_mode"}
    for length in (None, 40, 44):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch warns when it pads to `length`
            b = torch.istft(torch.tensor(spec), length=length, **_stft_args(torch, istft_args))
        a = tidal.istft(tidal.tensor(spec), length=length, **_stft_args(tidal, istft_args))
        _same(a, b, 1e-10)
    assert tc.stft is tidal.stft and tidal.tensor(x).stft(16, return_complex=True, window=tidal.ones(16)).shape == \
        torch.tensor(x).stft(16, return_complex=True, window=torch.ones(16)).shape


def test_stft_pad_mode_and_complex_input():
    x = _data((33,), np.complex128)
    w = _data((8,), np.float64)
    _same(tidal.stft(tidal.tensor(x), 8, window=tidal.tensor(w), pad_mode="constant"),
          torch.stft(torch.tensor(x), 8, window=torch.tensor(w), pad_mode="constant"), 1e-10)
    spec = torch.stft(torch.tensor(x), 8, window=torch.tensor(w), return_complex=True)
    _same(tidal.istft(tidal.tensor(spec.numpy()), 8, window=tidal.tensor(w), return_complex=True, onesided=False),
          torch.istft(spec, 8, window=torch.tensor(w), return_complex=True, onesided=False), 1e-10)


def test_stft_errors():
    x = _data((20,), np.float32)
    for lib_case in (
        lambda L: L.stft(L.tensor(x), 16),
        lambda L: L.istft(L.tensor(x).reshape(4, 5), 16),
    ):
        raises_like(lambda: lib_case(tidal), lambda: lib_case(torch))
    for case, tail in (
        (lambda L: L.stft(L.tensor(x), 8, hop_length=0, return_complex=True),
         "expected hop_length > 0, but got hop_length=0"),
        (lambda L: L.stft(L.tensor(x), 8, win_length=9, return_complex=True),
         "expected 0 < win_length <= n_fft, but got win_length=9"),
        (lambda L: L.stft(L.tensor(x), 8, window=L.ones(7), return_complex=True),
         "expected a 1D window tensor of size equal to win_length=8, but got window with size [7]"),
        (lambda L: L.istft(L.tensor(_data((3, 9), np.complex64)), 16, window=L.ones(16)),
         "expected the frequency dimension (3rd to the last) of the input tensor to match n_fft / 2 + 1 when "
         "onesided=True, but got 3"),
    ):
        for lib in (tidal, torch):
            with pytest.raises(RuntimeError) as err:
                case(lib)
            assert str(err.value).endswith(tail)


def test_stft_istft_gradients():
    x, w = _data((2, 40), np.float64), _data((8,), np.float64)

    def grads(lib):
        xt, wt = lib.tensor(x, requires_grad=True), lib.tensor(w, requires_grad=True)
        spec = lib.stft(xt, 8, hop_length=2, window=wt, return_complex=True)
        back = lib.istft(spec * spec.abs(), 8, hop_length=2, window=lib.hann_window(8, dtype=lib.float64) + 0.1,
                         length=40)
        (back.sum() + spec.abs().sum()).backward()
        return xt.grad, wt.grad

    for g, want in zip(grads(tidal), grads(torch)):
        _same(g, want, 1e-8)


def test_strided_bool_out_and_double_backward():
    x = _data((4, 6), np.float64)
    _same(tidal.fft.fft(tidal.tensor(x).t()), torch.fft.fft(torch.tensor(x).t()), 1e-10)
    _same(tidal.fft.rfft2(tidal.tensor(x).t()[1:, ::2]), torch.fft.rfft2(torch.tensor(x).t()[1:, ::2]), 1e-10)
    _same(tidal.fft.fft(tidal.tensor([True, False, True])), torch.fft.fft(torch.tensor([True, False, True])))
    out = tidal.empty(6, dtype=tidal.complex64)
    assert tidal.fft.fft(tidal.arange(6.0), out=out) is out
    _same(out, torch.fft.fft(torch.arange(6.0)))
    second = []
    for lib in (tidal, torch):
        t = lib.tensor(x, requires_grad=True)
        (g,) = lib.autograd.grad(lib.fft.rfft(t * t).abs().pow(2).sum(), t, create_graph=True)
        (g2,) = lib.autograd.grad((g * g).sum(), t)
        second.append(g2)
    _same(*second, tol=1e-9)


def test_stft_align_to_window():
    x, w = _data((2, 40), np.float64), np.hanning(10)
    for align in (True, False):
        _same(tidal.stft(tidal.tensor(x), 16, 4, 10, tidal.tensor(w), center=False, return_complex=True,
                         align_to_window=align),
              torch.stft(torch.tensor(x), 16, 4, 10, torch.tensor(w), center=False, return_complex=True,
                         align_to_window=align), 1e-10)
    raises_like(lambda: tidal.stft(tidal.tensor(x), 16, window=tidal.tensor(w[:8].copy()), win_length=8,
                                    return_complex=True, align_to_window=True),
                 lambda: torch.stft(torch.tensor(x), 16, window=torch.tensor(w[:8].copy()), win_length=8,
                                    return_complex=True, align_to_window=True))

"""torch.fft on real and complex input against torch: every transform's values, dtypes and gradients (real
inputs get the real part, without a cast warning), and the real-only transforms' errors for complex input."""
import warnings

import numpy as np
import pytest
import torch

import tidal.compat as tc
from complex_helpers import to_numpy

RNG = np.random.default_rng(5)
NAMES = ["fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2", "irfft2", "rfftn", "irfftn",
         "hfft", "ihfft", "hfft2", "ihfft2", "hfftn", "ihfftn"]
REAL_ONLY = {"rfft", "rfft2", "rfftn", "ihfft", "ihfft2", "ihfftn"}


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("kind", ["real", "complex"])
def test_transform_values_and_grads(name, kind):
    data = RNG.standard_normal((4, 6)) + (1j * RNG.standard_normal((4, 6)) if kind == "complex" else 0)
    results = []
    for lib in (tc, torch):
        x = lib.tensor(data, requires_grad=True)
        if kind == "complex" and name in REAL_ONLY:
            with pytest.raises(RuntimeError) as info:
                getattr(lib.fft, name)(x)
            results.append(str(info.value))
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # the gradient of a real input is its real part, silently
            y = getattr(lib.fft, name)(x, norm="ortho")
            ((y * (1 + 0.5j)).real if y.dtype.is_complex else 1.5 * y).sum().backward()
        results.append((str(y.dtype).split(".")[-1], to_numpy(y), to_numpy(x.grad)))
    got, want = results
    if isinstance(want, str):
        assert got == want
        return
    assert got[0] == want[0]
    np.testing.assert_allclose(got[1], want[1], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(got[2], want[2], rtol=1e-10, atol=1e-12)

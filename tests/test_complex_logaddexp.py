"""Complex logaddexp as torch computes it: the larger real part plus log1p(exp(other - it)), so the imaginary
part is not wrapped into (-pi, pi] (NumPy's log(exp(a) + exp(b)) wraps it)."""
import numpy as np
import torch

import tidal.compat as ttorch


def test_complex_logaddexp_as_torch():
    a = [1 + 4j, -2 + 3j, 0.5 - 3.1j, 2 + 2j, 3 + 9j, -1 - 8j]
    b = [0.3 + 2j, 1 - 3j, 0.2 + 3.1j, 2 + 2j, 3.5 - 7j, -1 + 8j]
    for dtype in ("complex64", "complex128"):
        want = torch.logaddexp(torch.tensor(a, dtype=getattr(torch, dtype)), torch.tensor(b, dtype=getattr(torch, dtype)))
        got = ttorch.logaddexp(ttorch.tensor(a, dtype=getattr(ttorch, dtype)), ttorch.tensor(b, dtype=getattr(ttorch, dtype)))
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5)

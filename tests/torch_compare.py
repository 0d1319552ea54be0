"""Helpers for tests that compare tidal with torch: the same data on both sides, and a close check."""
import numpy as np
import torch

import tidal


def both(array, dtype=None):
    """The same data as a torch tensor and a tidal tensor."""
    a = np.asarray(array) if dtype is None else np.asarray(array, dtype=dtype)
    return torch.tensor(a), tidal.tensor(a)


def check(mine, ref, rtol=1e-6, atol=1e-9):
    """Same dtype name, same shape, values close (NaN where torch has NaN)."""
    assert str(mine.dtype).split(".")[-1] == str(ref.dtype).split(".")[-1], (mine.dtype, ref.dtype)
    assert tuple(mine.shape) == tuple(ref.shape)
    np.testing.assert_allclose(mine.detach().numpy(), ref.detach().numpy(), rtol=rtol, atol=atol, equal_nan=True)

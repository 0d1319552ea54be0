"""Helpers shared by the complex-number and FFT test files: tensors back to NumPy, and torch's errors."""
import numpy as np
import pytest
import torch


def to_numpy(t) -> np.ndarray:
    """A tidal or torch tensor's values as NumPy (conjugate and negative views resolved first, in both)."""
    return t.detach().resolve_conj().resolve_neg().numpy()


def raises_like(fn_t, fn_torch) -> None:
    """`fn_torch()` raises; `fn_t()` raises the same type (or a subclass) with the same message."""
    with pytest.raises(Exception) as want:
        fn_torch()
    with pytest.raises(type(want.value)) as got:
        fn_t()
    assert str(got.value) == str(want.value)

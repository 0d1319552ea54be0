"""Helpers shared by test files: the same values as a tidal and a torch tensor, and back to NumPy."""
import re

import ml_dtypes
import numpy as np
import pytest
import torch

import tidal


def values(rng, n: int, dtype) -> np.ndarray:
    """`n` random values of a tidal dtype (bools, small ints, or float32-representable floats)."""
    if dtype is tidal.bool:
        return rng.random(n) > 0.5
    if dtype.is_floating_point:
        return rng.standard_normal(n).astype(np.float32).astype(dtype.np)
    return rng.integers(0, 100, n).astype(dtype.np)


def to_torch(arr: np.ndarray, dtype):
    """A torch copy of `arr` holding tidal dtype `dtype` (bfloat16 through float32)."""
    if dtype is tidal.bfloat16:
        return torch.from_numpy(arr.astype(np.float32)).to(torch.bfloat16)
    return torch.from_numpy(arr.copy())


def pair(arr: np.ndarray):
    """The same values (and strides) as a tidal and a torch tensor."""
    if arr.dtype == ml_dtypes.bfloat16:
        return tidal.from_numpy(arr), torch.from_numpy(arr.astype(np.float32)).bfloat16()
    return tidal.from_numpy(arr), torch.from_numpy(arr)


def as_numpy(t) -> np.ndarray:
    """A tidal or torch tensor's values as NumPy (bfloat16 as float32)."""
    if isinstance(t, torch.Tensor):
        return t.float().numpy() if t.dtype == torch.bfloat16 else t.numpy()
    return (t.float() if t.dtype is tidal.bfloat16 else t).numpy()  # (bfloat16 has no NumPy dtype in torch)


def assert_raises_like(fn, match: str | None = None) -> None:
    """`fn(lib)` raises the same exception type under torch and tidal, and the same message
    (or, with `match`, both messages contain that pattern)."""
    with pytest.raises(Exception) as ref:
        fn(torch)
    with pytest.raises(Exception) as ours:
        fn(tidal)
    assert type(ours.value) is type(ref.value), (ours.value, ref.value)
    if match is None:
        assert str(ours.value) == str(ref.value)
    else:
        assert re.search(match, str(ref.value)), str(ref.value)
        assert re.search(match, str(ours.value)), str(ours.value)

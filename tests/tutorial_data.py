"""Data the tutorial programs (tests/test_tutorials_*.py) share between real torch and tidal.compat: NumPy-made,
so both frameworks see the same values (their random streams differ)."""
import numpy as np


def uniform(shape, seed: int, low: float = -1.0, high: float = 1.0) -> np.ndarray:
    """float32 data both frameworks share."""
    return np.random.default_rng(seed).uniform(low, high, shape).astype(np.float32)


def labels(n: int, classes: int, seed: int) -> np.ndarray:
    """Integer class labels in [0, classes)."""
    return np.random.default_rng(seed).integers(0, classes, n)

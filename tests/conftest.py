"""Shared test set-up: a clean VM state around every test."""
import os

import numpy as np
import pytest

import tidal


@pytest.fixture(autouse=True)
def _vm_clean():
    """Fail a test that leaves an unreported kernel error behind; keep tests independent."""
    yield
    try:
        tidal.sync()
    except Exception as exc:  # noqa: BLE001
        pytest.fail(f"the test left a pending kernel error: {exc!r}")


@pytest.fixture
def rng():
    """A NumPy generator seeded per test."""
    return np.random.default_rng(int.from_bytes(os.urandom(2), "little") if os.environ.get("TIDAL_RANDOM_SEED")
                                 else 1234)

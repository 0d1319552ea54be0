"""Fixtures for the tests of hand-written numba kernels (loaded through vm.codegen.kernel_module)."""
import contextlib

import pytest

import tidal
from tidal.vm import intra_op


@pytest.fixture
def compile_here():
    """Kernels compiled in this thread (not in the background), so the compiled loops run from the first call."""
    before = tidal.vm.get_fusion()["background_compile"]
    tidal.vm.set_fusion(background_compile=False)
    yield
    tidal.vm.set_fusion(background_compile=before)


def loops_of(module):
    """A fixture `loops` that runs a test twice: with `module`'s compiled loops, and with its NumPy path (its
    `_compiled` made to answer None)."""
    @pytest.fixture(params=["compiled", "numpy"])
    def loops(request, monkeypatch):
        if request.param == "numpy":
            monkeypatch.setattr(module, "_compiled", lambda: None)
        return request.param
    return loops


@contextlib.contextmanager
def kernel_threads(count):
    """Parallel kernels on `count` threads inside the block (None: as set), the count set restored after."""
    before = intra_op.get_threads(allowed_only=False)
    if count is not None:
        intra_op.set_threads(count)
    try:
        yield
    finally:
        intra_op.set_threads(before)

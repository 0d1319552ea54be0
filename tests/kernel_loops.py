"""Fixtures for the tests of hand-written numba kernels (loaded through vm.codegen.kernel_module)."""
import pytest

import tidal


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

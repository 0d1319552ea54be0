"""Shared test set-up: a clean VM state around every test."""
import os

import numpy as np
import pytest

import tidal


@pytest.fixture(autouse=True)
def _vm_clean():
    """Fail a test that leaves an unreported kernel error behind; keep tests independent (a test's backward passes
    are not replayed from another test's recordings: tests spy on and patch the formulas a replay skips)."""
    from tidal.autograd import backward_replay
    backward_replay.forget()
    yield
    try:
        tidal.sync()
    except Exception as exc:  # noqa: BLE001
        pytest.fail(f"the test left a pending kernel error: {exc!r}")


@pytest.fixture
def fusion_settings():
    """Restore the fusion knobs and the VM mode after a test changes them."""
    saved, mode = tidal.vm.get_fusion(), tidal.vm.get_mode()
    yield
    tidal.vm.set_mode(mode)
    tidal.vm.set_fusion(**saved)


@pytest.fixture
def async_mode():
    """Run the test in async mode (the window and fusion only exist there)."""
    saved = tidal.vm.get_mode()
    tidal.vm.set_mode("async")
    yield
    tidal.vm.set_mode(saved)


@pytest.fixture
def rng():
    """A NumPy generator seeded per test."""
    return np.random.default_rng(int.from_bytes(os.urandom(2), "little") if os.environ.get("TIDAL_RANDOM_SEED")
                                 else 1234)


@pytest.fixture(scope="module", params=[2, 4], ids=["2ranks", "4ranks"])
def ranks(request):
    """Real ranks for the multi-process tests (tests/comm_ranks.py): 2, then 4."""
    from comm_ranks import RankPool  # spawns processes: loaded only by the tests that ask
    pool = RankPool(request.param)
    yield pool
    pool.close()


@pytest.fixture(scope="module")
def pool():
    """Two real ranks shared by one test module's multi-process tests (tests/comm_ranks.py)."""
    from comm_ranks import RankPool
    ranks = RankPool(2)
    yield ranks
    ranks.close()


def pytest_terminal_summary(terminalreporter):
    """The torch op database's summary, when tests/test_torch_op_db.py ran."""
    import sys
    db = sys.modules.get("torch_op_db")
    if db is not None and any(db.RESULTS.values()):
        terminalreporter.write_sep("=", "torch op_db")
        terminalreporter.write_line(db.summary())

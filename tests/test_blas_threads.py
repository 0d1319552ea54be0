"""BLAS thread holds (vm/blas_threads.py): products on a VM worker leave a core to the program's thread."""
import ctypes
import glob
import os
import threading
import time

import numpy as np
import pytest

import tidal
from tidal.vm import blas_threads, intra_op, machine

_paths = glob.glob(os.path.join(os.path.dirname(np.__file__) + ".libs", "*scipy_openblas*"))
pytestmark = pytest.mark.skipif(not _paths, reason="NumPy's BLAS is not the OpenBLAS its wheels bundle")


def _count() -> int:
    lib = ctypes.CDLL(_paths[0])
    return lib.scipy_openblas_get_num_threads64_()


def _wait_for_no_holds() -> None:
    """Wait until no hold is left (a compile running beside the test holds one thread a while)."""
    deadline = time.monotonic() + 30
    while blas_threads._holds and time.monotonic() < deadline:
        time.sleep(0.05)
    assert blas_threads._holds == []


@pytest.fixture
def settled():
    _wait_for_no_holds()


@pytest.fixture(autouse=True)
def quiet_machine(request, monkeypatch):
    """Other processes' load taken as none (the suite may run beside others), unless a test reads it; kernels
    on one thread (the BLAS thread rules below are those of a process without intra-op parallelism)."""
    if request.node.name != "test_a_busy_process_beside_counts_as_busy_cores":
        monkeypatch.setattr(blas_threads, "others_busy", lambda: 0.0)
    if request.node.name != "test_beside_parallel_kernels_blas_keeps_to_one_thread":
        monkeypatch.setattr(intra_op, "parallel", lambda: False)


def _product_hold() -> tuple:
    """(threads held, BLAS's count meanwhile) of one product's hold, given back after."""
    held = blas_threads.hold_for_product()
    inside = _count()
    if held is not None:
        blas_threads.release(held)
    return held, inside


def _count_unheld() -> int:
    """BLAS's thread count at a moment no hold is taken (a compile beside the test may take one at any time)."""
    while True:
        _wait_for_no_holds()
        with blas_threads._lock:
            if not blas_threads._holds:
                return _count()


def test_beside_parallel_kernels_blas_keeps_to_one_thread(settled, monkeypatch):
    monkeypatch.setattr(intra_op, "parallel", lambda: True)
    held, inside = _product_hold()
    default = blas_threads._default  # (known once a hold looked the library up)
    if default > 1:
        assert held == 1 and inside == 1
    # (compared with the default, not with the count before: a gemm kernel run on this thread sets OpenBLAS's
    # thread-local count, which the library then reports)
    assert _count_unheld() == default


class _Stream:  # what issuer_running reads of a stream: how many threads wait for it
    _waiters = 0


def _on_worker(fn, waiters: int = 0):
    """fn() on a thread marked as a stream's worker with `waiters` threads waiting for it."""
    found = []

    def run():
        stream = _Stream()
        stream._waiters = waiters
        machine._thread.stream = stream
        found.append(fn())
    t = threading.Thread(target=run)
    t.start()
    t.join()
    return found[0]


def test_a_worker_product_holds_one_thread_fewer_and_gives_it_back(settled):
    before = _count()

    def product():
        held = blas_threads.hold_for_product()
        inside = _count()
        if held is not None:
            blas_threads.release(held)
        return held, inside
    held, inside = _on_worker(product)
    if before > 1:
        assert held == before - 1 and inside == before - 1
    else:
        assert held is None and inside == before
    assert _count() == before and blas_threads._holds == []


def test_the_fewest_held_threads_win_until_every_hold_ends(settled):
    before = _count()
    blas_threads.hold(2)
    blas_threads.hold(1)  # (the compiler's hold)
    assert _count() == 1
    blas_threads.release(1)
    assert _count() == 2
    blas_threads.release(2)
    assert _count() == before


def test_the_program_thread_and_a_waited_for_worker_keep_every_thread():
    assert blas_threads.hold_for_product() is None  # the program's own thread (sync mode, batches run at the call)
    assert _on_worker(blas_threads.hold_for_product, waiters=1) is None  # a sync point waits for the worker


def test_products_on_the_worker_compute_the_same_values(settled):
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((256, 300)).astype(np.float32), rng.standard_normal((300, 200)).astype(np.float32)
    ta, tb = tidal.tensor(a), tidal.tensor(b)
    outs = [ta @ tb for _ in range(8)]  # large enough for the worker in async mode
    for out in outs:
        np.testing.assert_allclose(out.numpy(), a @ b, rtol=1e-4, atol=1e-4)
    _wait_for_no_holds()  # no worker hold is left behind


def test_a_busy_process_beside_counts_as_busy_cores():
    import subprocess
    import sys
    if not os.path.exists("/proc/stat"):
        pytest.skip("no /proc on this system")
    spinner = subprocess.Popen([sys.executable, "-c", "import time\nt = time.time()\nwhile time.time() - t < 3: pass"])
    try:
        time.sleep(0.2)
        intra_op._sample[0] = 0.0  # start a fresh sample now
        intra_op.others_busy()
        time.sleep(intra_op.SAMPLE_S + 0.3)
        assert intra_op.others_busy() >= 0.5  # the spinner kept most of a core busy
    finally:
        spinner.kill()
        spinner.wait()


def test_a_product_takes_no_more_threads_than_other_processes_left_free(settled, monkeypatch):
    before = _count()
    monkeypatch.setattr(blas_threads, "others_busy", lambda: float(blas_threads._CORES))  # every core taken
    held, inside = _product_hold()
    if before > 1:
        assert held == 1 and inside == 1
    else:
        assert held is None
    assert _count() == before
    monkeypatch.setattr(blas_threads, "others_busy", lambda: 0.0)  # a quiet machine: the program's thread keeps all
    assert blas_threads.hold_for_product() is None

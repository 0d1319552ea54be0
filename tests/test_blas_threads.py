"""Matrix products on a VM worker leave a core to the program's thread (ops/blas_threads.py)."""
import threading

import numpy as np
import pytest

import tidal
from tidal.ops import blas_threads
from tidal.vm import machine

control = blas_threads._control if blas_threads._control is not None else blas_threads._lookup()
pytestmark = pytest.mark.skipif(not control, reason="NumPy's BLAS is not the OpenBLAS its wheels bundle")
DEFAULT = control[0]() if control else None


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


def test_a_worker_product_leaves_a_core_and_restores_the_count():
    get, _, want = control
    default = get()
    assert want == max(default - 1, 1)

    def product():
        saved = blas_threads.enter()
        inside = get()
        blas_threads.leave(saved)
        return saved, inside
    saved, inside = _on_worker(product)
    assert inside == want and get() == default
    assert saved == (default if default > want else None)


def test_the_program_thread_and_a_waited_for_worker_keep_every_thread():
    get = control[0]
    default = get()
    assert blas_threads.enter() is None and get() == default  # the program's own thread (sync mode, inline)
    assert _on_worker(blas_threads.enter, waiters=1) is None and get() == default  # a sync point waits


def test_products_on_the_worker_compute_the_same_values():
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((256, 300)).astype(np.float32), rng.standard_normal((300, 200)).astype(np.float32)
    ta, tb = tidal.tensor(a), tidal.tensor(b)
    outs = [ta @ tb for _ in range(8)]  # large enough for the worker in async mode
    for out in outs:
        np.testing.assert_allclose(out.numpy(), a @ b, rtol=1e-4, atol=1e-4)
    assert control[0]() == DEFAULT  # the count is back once the products ran

"""Intra-op parallelism (vm/intra_op.py): parallel kernels give the serial kernels' bits, products split over
threads equal NumPy's, a forked child runs every kernel serially, and the thread count follows the knobs."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tidal
from tidal.ops.linalg import product_kernels as products
from tidal.vm import codegen, intra_op



def run_python(code: str, cwd) -> str:
    proc = subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.fixture
def compiled_here(monkeypatch):
    """Kernels compiled and loaded in the calling thread (numba loaded), and no other process counted busy."""
    import numba  # noqa: F401  (kernel modules load only once numba is)
    tidal.vm.set_fusion(background_compile=False)
    monkeypatch.setattr(intra_op, "others_busy", lambda: 0.0)
    if not intra_op.parallel():
        pytest.skip("numba has no thread-safe threading layer here")
    yield
    tidal.vm.set_fusion(background_compile=True)


def _gelu_chain(x, b):
    y = tidal.nn.functional.gelu(x * 1.5 + b)  # one fused group, large enough for the parallel loop
    return (y * y).numpy()


def test_parallel_elementwise_kernels_give_the_serial_bits(compiled_here, async_mode):
    rng = np.random.default_rng(0)
    x = tidal.tensor(rng.standard_normal((64, 33, 40)).astype(np.float32))
    b = tidal.tensor(rng.standard_normal(40).astype(np.float32))  # broadcast: the nd loop layout
    flat = tidal.tensor(rng.standard_normal(70000).astype(np.float32))  # the flat loop layout
    assert x.numel() >= intra_op.PARALLEL_ELEMENTS
    par = [_gelu_chain(x, b) for _ in range(3)][-1], [_gelu_chain(flat, 0.25) for _ in range(3)][-1]
    kernels = [k for k in codegen._kernel_files if k[1][-1] == codegen.PARALLEL]
    assert kernels, "no parallel kernel was generated"
    tidal.vm.set_threads(1)
    try:
        assert tidal.vm.get_threads() == 1
        ser = [_gelu_chain(x, b) for _ in range(3)][-1], [_gelu_chain(flat, 0.25) for _ in range(3)][-1]
    finally:
        tidal.vm.set_threads(intra_op.CORES)
    for p, s in zip(par, ser):
        assert np.array_equal(p, s)
    xs = x.numpy().astype(np.float64) * 1.5 + b.numpy()
    import math
    gelu = xs * 0.5 * (1 + np.vectorize(math.erf)(xs / math.sqrt(2)))
    np.testing.assert_allclose(par[0], gelu * gelu, rtol=2e-5, atol=1e-6)


def test_large_single_ops_run_in_place_right(compiled_here):
    rng = np.random.default_rng(1)
    a = rng.standard_normal(80000).astype(np.float32)
    t, expected = tidal.tensor(a), a.copy()
    for _ in range(4):  # past compile_after: the compiled (parallel) loop, in place through an alias
        t += 1.0
        expected += np.float32(1.0)
    np.testing.assert_array_equal(t.numpy(), expected)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_threaded_products_equal_numpy(compiled_here, dtype):
    rng = np.random.default_rng(2)

    def r(*shape):
        return rng.standard_normal(shape).astype(dtype)
    cases = []
    for m, k, n in [(300, 70, 130), (7, 1000, 40), (1, 512, 512), (512, 640, 1), (128, 784, 512)]:
        for a in (r(m, k), r(k, m).T):
            for b in (r(k, n), r(n, k).T):
                cases.append((a, b))
    cases += [(r(128, 32, 64), r(128, 48, 64).transpose(0, 2, 1)),  # attention's q @ k^T
              (r(2, 3, 40, 50), r(50, 60)),                          # a batch against one matrix
              (r(40, 50), r(4, 50, 60)),
              (r(2, 1, 40, 50), r(1, 3, 50, 60))]                    # batches broadcast both ways (not threaded)
    threaded = 0
    for a, b in cases:
        out = np.full(np.broadcast_shapes(a.shape[:-2], b.shape[:-2]) + (a.shape[-2], b.shape[-1]), np.nan, dtype)
        if products.threaded_product(a, b, out):
            threaded += 1
            np.testing.assert_allclose(out, a @ b, rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-4)
        got = tidal.matmul(tidal.tensor(a), tidal.tensor(b)).numpy()  # through the matmul op, whichever path
        np.testing.assert_allclose(got, a @ b, rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-4)
    assert threaded == len(cases) - 1


def test_a_product_that_aliases_its_operand_is_not_threaded(compiled_here):
    a = np.random.default_rng(3).standard_normal((256, 256)).astype(np.float32)
    out = a.copy()
    assert not products.threaded_product(out, a, out)


def test_other_processes_take_threads_away(compiled_here, monkeypatch):
    monkeypatch.setattr(intra_op, "_worker_seen", False)  # (this thread may start teams)
    monkeypatch.setattr(intra_op, "_threads", 4)
    monkeypatch.setattr(intra_op, "CORES", 4)
    assert intra_op.enter() == 4
    monkeypatch.setattr(intra_op, "others_busy", lambda: 2.6)  # three cores taken by other processes
    assert intra_op.enter() == 1
    monkeypatch.setattr(intra_op, "others_busy", lambda: 1.4)
    assert intra_op.enter() == 3
    monkeypatch.setattr(intra_op, "others_busy", lambda: 0.2)  # (under half a core: noise)
    assert intra_op.enter() == 4
    monkeypatch.setattr(intra_op, "_threads", intra_op.CORES)


def test_set_threads_checks_its_argument():
    for bad in (0, -2, 1.5, True):
        with pytest.raises(ValueError, match="set_threads: expected a positive int"):
            intra_op.set_threads(bad)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_runs_every_kernel_serially(tmp_path):
    # GNU OpenMP kills a forked child that starts its pool: DataLoader workers must keep working
    code = textwrap.dedent("""
        import os, numpy as np, numba, tidal
        from tidal.vm import intra_op
        tidal.vm.set_fusion(background_compile=False)
        intra_op.others_busy = lambda: 0.0
        x = tidal.tensor(np.linspace(-3, 3, 100000, dtype=np.float32))
        w = tidal.tensor(np.ones((512, 512), np.float32))
        def work():
            y = tidal.nn.functional.gelu(x * 2.0 + 1.0)
            z = tidal.matmul(w, w)
            return float(y.sum()), float(z.sum())
        for _ in range(4):
            parent = work()
        pid = os.fork()
        if pid == 0:
            ok = work() == parent and not intra_op.parallel()
            os._exit(0 if ok else 3)
        _, status = os.waitpid(pid, 0)
        print("child", os.waitstatus_to_exitcode(status), intra_op.parallel())
    """)
    out = run_python(code, tmp_path).split()
    assert out[:2] == ["child", "0"]


def test_parallel_row_kernels_match_the_serial_ones_and_torch(compiled_here):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(4)
    x = rng.standard_normal((512, 96)).astype(np.float32)  # 49152 elements: the parallel row loops
    g = rng.standard_normal((512, 96)).astype(np.float32)
    w = rng.standard_normal(96).astype(np.float32)
    b = rng.standard_normal(96).astype(np.float32)
    assert x.size >= intra_op.PARALLEL_ELEMENTS

    def run():
        xt, wt, bt = (tidal.tensor(a).requires_grad_() for a in (x, w, b))
        y = tidal.nn.functional.layer_norm(xt, (96,), wt, bt)
        s = tidal.softmax(xt * 3.0, -1)
        ls = tidal.log_softmax(xt, -1)
        ((y * tidal.tensor(g)).sum() + (s * tidal.tensor(g)).sum() + (ls * tidal.tensor(g)).sum()).backward()
        return [t.detach().numpy() for t in (y, s, ls, xt.grad, wt.grad, bt.grad)]
    par = [run() for _ in range(3)][-1]
    tidal.vm.set_threads(1)
    try:
        ser = [run() for _ in range(3)][-1]
    finally:
        tidal.vm.set_threads(intra_op.CORES)
    for p, s in zip(par[:4], ser[:4]):  # rows are independent: the same bits
        assert np.array_equal(p, s)
    for p, s in zip(par[4:], ser[4:]):  # the weight and bias gradients sum per block of rows
        np.testing.assert_allclose(p, s, rtol=1e-5, atol=1e-5)
    xt, wt, bt = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    y = torch.nn.functional.layer_norm(xt, (96,), wt, bt)
    s, ls = torch.softmax(xt * 3.0, -1), torch.log_softmax(xt, -1)
    ((y * torch.tensor(g)).sum() + (s * torch.tensor(g)).sum() + (ls * torch.tensor(g)).sum()).backward()
    for ours, theirs in zip(par, (y, s, ls, xt.grad, wt.grad, bt.grad)):
        np.testing.assert_allclose(ours, theirs.detach().numpy(), rtol=1e-4, atol=1e-4)


def test_parallel_fused_reductions(compiled_here, async_mode):
    rng = np.random.default_rng(5)
    x = tidal.tensor(rng.standard_normal((256, 300)).astype(np.float32))
    g = tidal.tensor(rng.standard_normal((256, 300)).astype(np.float32))

    def run():
        rows = (x * g + 1.0).sum(1)      # kept dim outside: its rows split over threads, the same bits
        columns = (x * g - 0.5).sum(0)   # a bias gradient's sum over rows: blocks of rows, then added
        top = (x * 2.0).amax(0)
        return [t.numpy() for t in (rows, columns, top)]
    par = [run() for _ in range(3)][-1]
    kernels = {k[1][0] for k in codegen._kernel_files if k[1][-1] == codegen.PARALLEL and k[0] and
               isinstance(k[1][0], str)}
    assert {"natural", "outer"} <= kernels
    tidal.vm.set_threads(1)
    try:
        ser = [run() for _ in range(3)][-1]
    finally:
        tidal.vm.set_threads(intra_op.CORES)
    assert np.array_equal(par[0], ser[0]) and np.array_equal(par[2], ser[2])
    np.testing.assert_allclose(par[1], ser[1], rtol=1e-6, atol=1e-5)
    xs, gs = x.numpy().astype(np.float64), g.numpy().astype(np.float64)
    np.testing.assert_allclose(par[0], (xs * gs + 1).sum(1), rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(par[1], (xs * gs - 0.5).sum(0), rtol=1e-5, atol=1e-4)
    np.testing.assert_array_equal(par[2], (x.numpy() * np.float32(2)).max(0))


def test_once_a_worker_ran_kernels_only_workers_start_teams(compiled_here, monkeypatch):
    import threading
    monkeypatch.setattr(intra_op, "_worker_seen", False)
    assert intra_op.enter() == intra_op.CORES  # the program's thread, no worker yet (sync mode)
    found = []

    class Stream:
        _waiters = 1  # the program's thread waits for the stream: every core

    class Issuing:
        _waiters = 0  # the program's thread issues ops meanwhile: one core left to it

    def on_worker():
        for stream in (Stream(), Issuing()):
            intra_op._thread.stream = stream
            found.append(intra_op.enter())
    t = threading.Thread(target=on_worker)
    t.start()
    t.join()
    assert found == [intra_op.CORES, max(intra_op.CORES - 1, 1)]
    assert intra_op.enter() == 1  # GNU OpenMP would throttle two teams' spinning (see intra_op._worker_seen)

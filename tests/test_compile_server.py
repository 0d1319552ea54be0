"""Kernels compile in a helper process (vm/compile_server.py), never holding the program's GIL."""
import base64
import io
import math
import pickle
import time

import numpy as np

import tidal
from tidal.vm import codegen, compile_server


def _request(tag, name, path, dummies, function="kernel") -> bytes:
    return base64.b64encode(pickle.dumps((tag, name, path, function, dummies))) + b"\n"


def test_serve_compiles_each_request_and_reports_failures(tmp_path):
    src = tmp_path / "k_test.py"
    src.write_text("from numba import njit\n\n@njit(cache=True)\ndef kernel(o0, i0):\n"
                   "    for j in range(o0.shape[0]):\n        o0[j] = i0[j] * 2\n")
    out = np.zeros(2, np.float32)
    requests = io.BytesIO(_request(1, "tidal_test_kernel_serve", str(src), [out, np.ones(2, np.float32)])
                          + _request(2, "tidal_test_kernel_missing", str(tmp_path / "absent.py"), [])
                          + _request(3, "tidal.ops.elementwise.special", None, ["erf", "float64"], function="build"))
    replies = io.BytesIO()
    compile_server.serve(requests, replies)
    answers = [pickle.loads(base64.b64decode(line)) for line in replies.getvalue().splitlines()]
    assert answers[0] == (1, None)
    assert list((tmp_path / "__pycache__").glob("k_test.kernel-*.nbi"))  # compiled into numba's cache
    assert answers[1][0] == 2 and "FileNotFoundError" in answers[1][1]  # reported; the server went on
    assert answers[2] == (3, None)  # an importable module's builder (a special function's ufunc)


def _unusual(x):
    # a program no other test builds: its kernel file is new in this test's cache directory
    return (tidal.copysign(x * 7 - 3, x).expm1().abs() * 0.25 + x)


def test_background_kernels_are_compiled_by_the_helper_process(tmp_path, monkeypatch, async_mode,
                                                                fusion_settings):
    monkeypatch.setenv("TIDAL_CACHE_DIR", str(tmp_path))  # an empty kernel cache: a real compile
    monkeypatch.setattr(codegen.compiler, "in_process", False)
    tidal.vm.set_fusion(compile_after=1, background_compile=True, compile_heat=0)
    xn = np.linspace(-2, 2, 257).astype(np.float32)
    x = tidal.tensor(xn)
    expected = _unusual(tidal.tensor(xn)).numpy()  # (runs on NumPy: seen once)
    def ours():  # this program's kernels that are ready (other tests' may finish meanwhile)
        return [k for k in list(codegen.compiler.ready) if isinstance(k, tuple) and isinstance(k[0], codegen.Program)
                and [line[0].split("(")[1] for line in k[0].lines[2:5]] == ["np.copysign", "np.expm1", "np.abs"]]

    deadline = time.monotonic() + 120
    while not ours() and time.monotonic() < deadline:
        np.testing.assert_allclose(_unusual(x).numpy(), expected, rtol=1e-6)  # NumPy or compiled
        time.sleep(0.05)
    assert ours()
    server = codegen.compiler._server
    assert server not in (None, False) and server.poll() is None  # the process compiled, and lives on
    assert list((tmp_path / "kernels" / "__pycache__").glob("*.nbi"))  # numba's cache, written there
    np.testing.assert_allclose(_unusual(x).numpy(), expected, rtol=1e-6)


def test_special_function_runs_on_the_c_library_while_its_ufunc_builds(monkeypatch):
    from tidal.ops.elementwise import special
    erf = special.LazyUfunc("erf")  # a fresh one: nothing built yet
    requested = []
    monkeypatch.setattr(codegen, "background", True)
    monkeypatch.setattr(codegen.compiler, "request", lambda key, load, remote, first: requested.append((key, remote)))
    x = np.linspace(-3, 3, 101).astype(np.float32)
    y = erf(x)
    assert y.dtype == np.float32 and not erf._by_type  # computed without building the ufunc
    np.testing.assert_array_max_ulp(y, np.array([math.erf(v) for v in x.astype(np.float64)], np.float32), maxulp=1)
    ref = np.array([math.erfc(v) for v in x.astype(np.float64)], np.float32)
    np.testing.assert_array_max_ulp(special.LazyUfunc("erfc")(x), ref, maxulp=2)
    y64 = erf(x.astype(np.float64))  # float64: the C library's erf itself, element by element
    np.testing.assert_array_equal(y64, [math.erf(v) for v in x.astype(np.float64)])
    assert requested[0] == (("ufunc", "erf", np.float32),
                            ("tidal.ops.elementwise.special", None, "build", ("erf", "float32", 1)))
    monkeypatch.setattr(codegen, "background", False)  # compile in the foreground (deterministic mode)
    np.testing.assert_allclose(erf(x), y, rtol=1e-6)
    assert np.float32 in erf._by_type


def test_kernel_specs_survive_pickling_with_their_layout(tmp_path):
    # the compile process must compile the signature the program will call: a strided or read-only
    # argument pickled as an array would arrive contiguous and writeable, and the program would then
    # compile again, holding its GIL
    src = tmp_path / "k_layout.py"
    src.write_text("from numba import njit\n\n@njit(cache=True)\ndef kernel(o0, i0):\n"
                   "    for j in range(o0.shape[0]):\n        o0[j] = i0[j] + 1\n")
    strided = np.zeros(8, np.float32)[::2]
    frozen = np.zeros(4, np.float64)
    frozen.flags.writeable = False
    specs = pickle.loads(pickle.dumps([codegen._dummy_spec(np.zeros(4, np.float32)), codegen._dummy_spec(strided)]))
    codegen.compile_kernel_file("tidal_test_kernel_layout", str(src), specs)
    kernel = codegen.import_file("tidal_test_kernel_layout", str(src)).kernel
    assert [str(t) for t in kernel.signatures[0]] == ["array(float32, 1d, C)", "array(float32, 1d, A)"]
    args = [codegen._dummy(s) for s in pickle.loads(pickle.dumps([codegen._dummy_spec(np.zeros(4)), codegen._dummy_spec(frozen)]))]
    assert not args[1].flags.writeable and args[0].flags.writeable


def test_kernel_module_loads_in_the_background_and_a_failed_load_leaves_the_numpy_path(tmp_path, monkeypatch):
    import numba  # noqa: F401  (kernel modules wait for numba to be loaded)
    (tmp_path / "tidal_test_kmod.py").write_text(
        "import numpy as np\nfrom numba import njit\n\n@njit(cache=True)\ndef twice(x, out):\n"
        "    for j in range(x.shape[0]):\n        out[j] = 2 * x[j]\n\n"
        "def warm():\n    twice(np.ones(2), np.empty(2))\n")
    (tmp_path / "tidal_test_kmod_broken.py").write_text("def warm():\n    raise RuntimeError('no compiler')\n")
    monkeypatch.syspath_prepend(str(tmp_path))  # (the compile process, started earlier, may not see it: the
    before = tidal.vm.get_fusion()["background_compile"]  # compiler thread then compiles here, as documented)
    try:
        tidal.vm.set_fusion(background_compile=True)
        module = codegen.kernel_module("tidal_test_kmod")
        for _ in range(400):  # None while the compile process and the compiler thread work
            if module is not None:
                break
            time.sleep(0.025)
            module = codegen.kernel_module("tidal_test_kmod")
        assert module is not None
        out = np.empty(3)
        module.twice(np.arange(3.0), out)
        assert out.tolist() == [0.0, 2.0, 4.0]
        tidal.vm.set_fusion(background_compile=False)
        assert codegen.kernel_module("tidal_test_kmod_broken") is None  # the load failed: NumPy paths, no error
        assert codegen.kernel_module("tidal_test_kmod_broken") is None  # and it is not tried again
        assert "tidal_test_kmod_broken" in codegen._failed_modules
    finally:
        tidal.vm.set_fusion(background_compile=before)


def test_a_call_worth_more_than_loading_a_stored_module_loads_it_at_once(tmp_path, monkeypatch):
    import importlib

    import numba  # noqa: F401
    (tmp_path / "tidal_test_kmod_stored.py").write_text(
        "import numpy as np\nfrom numba import njit\n\n@njit(cache=True)\ndef thrice(x, out):\n"
        "    for j in range(x.shape[0]):\n        out[j] = 3 * x[j]\n\n"
        "def warm():\n    thrice(np.ones(2), np.empty(2))\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.import_module("tidal_test_kmod_stored").warm()  # compiled once: numba's disk cache holds it now
    assert codegen.in_disk_cache(str(tmp_path / "tidal_test_kmod_stored.py"))
    before = tidal.vm.get_fusion()["background_compile"]
    try:
        tidal.vm.set_fusion(background_compile=True)
        # this call's NumPy path would take a second: loading the stored module here costs less, so it comes back
        # loaded at once rather than after a background load
        module = codegen.kernel_module("tidal_test_kmod_stored", spent=1.0)
        assert module is not None
        out = np.empty(3)
        module.thrice(np.arange(3.0), out)
        assert out.tolist() == [0.0, 3.0, 6.0]
    finally:
        tidal.vm.set_fusion(background_compile=before)


def test_a_large_random_draw_brings_in_the_compiled_random_loops(tmp_path):
    import subprocess
    import sys
    # a fresh process (numba not loaded) with an empty kernel cache, compiling in the foreground: a draw of millions
    # of normals is NumPy time enough to compile ops/random/kernels.py, with torch's values either way
    code = ("import sys, numpy as np, tidal\n"
            "from tidal.vm import codegen\n"
            "tidal.vm.set_fusion(background_compile=False)\n"
            "tidal.manual_seed(0)\n"
            "a = tidal.randn(3000, 3000).numpy()\n"
            "assert 'numba' in sys.modules and 'tidal.ops.random.kernels' in codegen._kernel_modules\n"
            "tidal.manual_seed(0)\n"
            "assert np.array_equal(tidal.randn(3000, 3000).numpy(), a)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=240,
                          env={**__import__("os").environ, "TIDAL_CACHE_DIR": str(tmp_path)})
    assert done.returncode == 0, done.stderr[-2000:]

"""numba imported by several threads at once (a VM worker building a special-function ufunc, another loading a
pool kernel, the compiler thread loading a generated kernel) must not deadlock in numba's circular imports:
every such import goes through vm.codegen's numba lock. Run in a fresh process, where numba is not imported."""
import os
import subprocess
import sys
import textwrap

PROGRAM = textwrap.dedent("""
    import sys, threading
    import numpy as np
    import tidal
    from tidal.ops.elementwise import special
    from tidal.vm import codegen
    assert "numba" not in sys.modules
    errors = []
    barrier = threading.Barrier(3)

    def run(fn):
        barrier.wait()
        try:
            fn()
        except BaseException as exc:
            errors.append(repr(exc))

    def ufunc():
        special.build("erfinv", "float32")

    def pool():
        codegen.import_numba_user(".pool_kernels", "tidal.ops.windowed")

    def kernel():
        codegen.import_numba_user(".conv_kernels", "tidal.ops.windowed")

    threads = [threading.Thread(target=run, args=(f,)) for f in (ufunc, pool, kernel)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not any(t.is_alive() for t in threads), "an import hung"
    assert not errors, errors
    print(float(special.build("erfinv", "float32")(np.float32(0.5))))
""")


def test_concurrent_first_numba_imports(tmp_path):
    proc = subprocess.run([sys.executable, "-c", PROGRAM], capture_output=True, text=True, timeout=180,
                          env={**os.environ, "TIDAL_CACHE_DIR": str(tmp_path)})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert abs(float(proc.stdout.strip().splitlines()[-1]) - 0.4769362762044699) < 1e-6  # erfinv(0.5)

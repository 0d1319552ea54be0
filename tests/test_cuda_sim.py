"""CUDA kernels generated from the elementwise Programs (vm/codegen_cuda.py) and the `cuda` device.

Without a GPU the kernels run under numba's CUDA simulator. numba reads NUMBA_ENABLE_CUDASIM
when numba.cuda is first imported, and the rest of the suite uses the real numba.cuda, so
`test_simulator_suite` runs this file again in a subprocess with the simulator on; there the
`sim` tests compare every elementwise record of tests/op_db.py on `cuda` against the CPU
(float32/float64/int64/bool, broadcast and non-contiguous inputs, Python scalars), fused
chains, in-place writes, transfers and errors. The lowering tests (no GPU needed either) type
and lower generated kernels for the real CUDA target, to NVVM IR. `gpu` tests need a device.
"""
from __future__ import annotations

import os
import subprocess
import sys
import types

import numpy as np
import pytest
from op_db import OPS, sample

import tidal
from tidal.ops.elementwise import declarations, plans as ew
from tidal.vm import codegen, codegen_cuda
from tidal.vm.codegen import Program

SIMULATED = os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"
sim = pytest.mark.skipif(not SIMULATED, reason="runs under NUMBA_ENABLE_CUDASIM=1 (test_simulator_suite)")
real_numba_cuda = pytest.mark.skipif(SIMULATED, reason="needs numba's real CUDA target")
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")  # NumPy scalars in the simulator


def _has_gpu() -> bool:
    if SIMULATED:
        return False
    try:
        from numba import cuda
        return bool(cuda.is_available())
    except Exception:  # noqa: BLE001 - no driver, no toolkit
        return False


needs_gpu = pytest.mark.skipif(not _has_gpu(), reason="needs a CUDA GPU")


@real_numba_cuda
@pytest.mark.timeout(150)
def test_simulator_suite():
    """This file's simulator tests, in a process where numba.cuda is the simulator."""
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", "-m", "not gpu",
                           os.path.abspath(__file__)], cwd=root, env=env, capture_output=True, text=True,
                          timeout=140)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-3000:]
    assert " passed" in proc.stdout and " failed" not in proc.stdout


# -- the simulator: every elementwise record on cuda against the CPU -----------------------------------
DTYPES = ("float32", "float64", "int64", "bool")
SHAPES = {1: [((3, 4), "t")], 2: [((3, 4), "t"), ((4,), "c")], 3: [((3, 4), "s"), ((4,), "c"), ((3, 1), "c")]}
RECORDS = [(info, d) for info in OPS for d in DTYPES if d in info.dtypes]


def _make(domain: str, shape: tuple, layout: str, dtype: str, rng) -> tidal.Tensor:
    if layout == "t":  # transposed: not contiguous
        return tidal.tensor(sample(domain, shape[::-1], dtype, rng)).t()
    if layout == "s":  # every other column
        return tidal.tensor(sample(domain, shape[:-1] + (2 * shape[-1],), dtype, rng))[..., ::2]
    return tidal.tensor(sample(domain, shape, dtype, rng))


def _check(got: tidal.Tensor, want: tidal.Tensor, info=None) -> None:
    assert got.device.type == "cuda"
    assert got.dtype is want.dtype and tuple(got.shape) == tuple(want.shape)
    g, w = got.cpu().numpy(), want.numpy()
    if w.dtype.kind == "f" and not (info is not None and info.exact):
        rtol, atol = info.tolerance(got.dtype.name) if info is not None else (2e-6, 1e-6)
        np.testing.assert_allclose(g, w, rtol=max(rtol, 2e-6), atol=max(atol, 1e-6), equal_nan=True)
    else:
        np.testing.assert_array_equal(g, w)


@sim
@pytest.mark.parametrize("info,dtype", RECORDS, ids=[f"{i.name}-{d}" for i, d in RECORDS])
def test_record_on_cuda_matches_cpu(info, dtype, rng):
    """One op record and dtype: broadcast, non-contiguous inputs (and a Python scalar) on cuda."""
    cpu = [_make(dom, shape, layout, dtype, rng) for dom, (shape, layout) in zip(info.domains, SHAPES[info.arity])]
    want = info.op(*cpu)
    _check(info.op(*[t.to("cuda") for t in cpu]), want, info)
    if info.scalars:
        scalar = {"float32": 1.5, "float64": -2.25, "int64": 3, "bool": True}[dtype]
        if info.domains[1] in ("nonzero", "positive", "exponent", "shift") and dtype != "bool":
            scalar = 2
        _check(info.op(cpu[0].to("cuda"), scalar), info.op(cpu[0], scalar), info)


@sim
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_fused_chain_with_broadcast_and_scalars(dtype, rng):
    """A chain fuses into one kernel (async mode) and matches the CPU, first uncompiled then compiled."""
    a_host = sample("real", (5, 6), dtype, rng)
    b_host = sample("positive", (6,), dtype, rng)

    def chain(a, b):
        y = (a * 2 + b) - 1
        return tidal.maximum(y, a).abs() * (b > 2)

    want = chain(tidal.tensor(a_host), tidal.tensor(b_host))
    a, b = tidal.tensor(a_host, device="cuda"), tidal.tensor(b_host, device="cuda")
    for _ in range(3):  # the third sighting runs the compiled-group path
        tidal.vm.reset_stats()
        got = chain(a.t().t(), b)
        _check(got, want)
        if tidal.vm.get_mode() == "async" and tidal.vm.get_fusion()["enabled"]:
            assert tidal.vm.stats()["fused_away"] > 0


@sim
def test_inplace_into_strided_views_and_0d():
    """In-place ops write through transposed and strided views; 0-d and empty tensors work."""
    base = np.arange(12, dtype=np.float32).reshape(3, 4)
    x = tidal.tensor(base, device="cuda")
    x.t().mul_(2)
    x[:, ::2].add_(tidal.tensor([10.0, 20.0], device="cuda"))
    want = base * 2
    want[:, ::2] += [10.0, 20.0]
    np.testing.assert_array_equal(x.cpu().numpy(), want)
    s = tidal.tensor(3.0, device="cuda")
    assert (s * 2 + 1).item() == 7.0
    assert (x + s).cpu().numpy()[0, 0] == want[0, 0] + 3
    c = tidal.tensor(2.0)  # a 0-d CPU tensor is an operand on any device, as in PyTorch
    np.testing.assert_array_equal((x * c).cpu().numpy(), want * 2)
    e = tidal.zeros(0, 3).to("cuda")
    assert tuple((e + 1).cpu().shape) == (0, 3)


@sim
def test_transfers_round_trip():
    """tensor(device=), .to, .cuda, .cpu keep values and dtypes (bfloat16 bytes included)."""
    for dtype in (tidal.float32, tidal.float64, tidal.int64, tidal.bool, tidal.uint8, tidal.bfloat16):
        host = tidal.arange(12).reshape(3, 4).to(dtype)
        dev = host.to("cuda")
        assert dev.device == tidal.device("cuda", 0) and dev.dtype is dtype
        back = dev.cpu()
        assert back.device.type == "cpu"
        np.testing.assert_array_equal(back.to(tidal.float32).numpy(), host.to(tidal.float32).numpy())
    t = tidal.tensor([[1, 2], [3, 4]], device="cuda")
    np.testing.assert_array_equal(t.t().cpu().numpy(), [[1, 3], [2, 4]])  # a strided view comes back right
    np.testing.assert_array_equal(t.to(tidal.float64).cpu().numpy(), [[1.0, 2.0], [3.0, 4.0]])
    assert tidal.ones(2).cuda().device.type == "cuda"
    z = tidal.zeros(2, 3, device="cuda", dtype=tidal.int64)  # factories make device tensors too
    assert z.device.type == "cuda" and z.cpu().tolist() == [[0, 0, 0], [0, 0, 0]]
    assert "device='cuda:0'" in repr(t)
    with pytest.raises(TypeError, match="Use Tensor.cpu"):
        t.numpy()


@sim
def test_unsupported_ops_and_dtypes_raise_clearly():
    """Ops without a cuda kernel name the op and device; 16-bit float kernels say so at sync."""
    x = tidal.ones(3).to("cuda")
    with pytest.raises(NotImplementedError, match="cuda"):
        tidal.matmul(x.reshape(1, 3), x.reshape(3, 1))
    h = tidal.ones(3, dtype=tidal.float16).to("cuda")
    with pytest.raises(NotImplementedError, match="float16/bfloat16"):
        (h + 1).cpu()


@sim
def test_kernel_sources_are_files_in_the_cache():
    """Each kernel is a generated file (so numba's cache can key on it), reused, never rewritten."""
    x = tidal.ones(4).to("cuda")
    (x * 3 + 0.5).cpu()
    files = [f for f in os.listdir(codegen._cache_dir()) if f.startswith("cudasim_") and f.endswith(".py")]
    assert files
    prog = Program((("as_float32({0} * {1})", ("i0", "i1")),), 2, ("t0",))
    src = codegen_cuda.module_source(prog, 1, (True, False))
    assert "@cuda.jit(cache=True)" in src and "cuda.gridsize(1)" in src and "t0 = as_float32(a0 * i1)" in src
    assert "cuda_math as np" in src
    module = codegen.load_generated(src, prefix="cuda")
    mtime = os.path.getmtime(module.__file__)
    assert codegen.load_generated(src, prefix="cuda") is module and os.path.getmtime(module.__file__) == mtime


# -- lowering for the real CUDA target (no GPU needed) --------------------------------------------------
def _numba_type(np_dtype):
    from numba import types as nt
    return {"float32": nt.float32, "float64": nt.float64, "int64": nt.int64, "bool": nt.boolean,
            "int32": nt.int32, "uint8": nt.uint8}[np.dtype(np_dtype).name]


def _lowering_case(names, dtype: str) -> tuple:
    """One Program computing every op in `names` on inputs i0..i2 of `dtype` (i3: a bool condition,
    i4: a scalar operand), each result stored, and the numba argument types of its kernel."""
    from numba import types as nt
    d = getattr(tidal, dtype)
    lines, out_types = [], []
    for name in names:
        op = declarations.OPS[name]
        args = tuple(tidal.ones(2, dtype=tidal.bool if op.rule == "where" and k == 0 else d) for k in range(op.nin))
        try:
            plan = ew.plan_for(op, args)
        except (RuntimeError, TypeError):  # the op refuses this dtype
            continue
        lines.append((plan.expr, ("i3", "i1", "i2") if op.rule == "where" else ("i0", "i1", "i2")[:op.nin]))
        out_types.append(_numba_type(plan.dtype.np))
    lines.append((ew.plan_for(declarations.OPS["add"], (tidal.ones(2, dtype=d), 2)).expr, ("i0", "i4")))
    out_types.append(out_types[-1] if dtype == "bool" else _numba_type(d.np))
    prog = Program(tuple(lines), 5, tuple(f"t{k}" for k in range(len(lines))))
    array = [nt.Array(t, 2, "A") for t in out_types] + [nt.Array(_numba_type(d.np), 2, "A")] * 3
    scalar = _numba_type(ew.plan_for(declarations.OPS["add"], (tidal.ones(2, dtype=d), 2)).scalar_types[1])
    return prog, tuple(array + [nt.Array(nt.boolean, 2, "A"), scalar])


def _lower(prog: Program, argtypes: tuple, monkeypatch) -> None:
    from tidal.vm import cuda as cuda_backend
    cuda_backend.runtime()  # what numba-cuda needs of NumPy (the np.row_stack alias), as a program gets it
    import numba.cuda.dispatcher as cuda_dispatcher
    from numba import types as nt
    from numba.cuda.compiler import compile_cuda
    # device functions ask the current device for its compute capability: pretend there is one
    monkeypatch.setattr(cuda_dispatcher, "get_current_device",
                        lambda: types.SimpleNamespace(compute_capability=(8, 0)))
    module = codegen.load_generated(codegen_cuda.module_source(prog, 2, (True,) * 4 + (False,)), prefix="cuda")
    compile_cuda(module.kernel.py_func, nt.void, argtypes, cc=(8, 0))


# float32 runs every op; the other dtypes only the ops whose code differs with the input type
# (integer branches of cuda_math, bool logic, float64 libdevice calls)
_LOWERING_SETS = {
    "float32": lambda name, op: True,
    "float64": lambda name, op: name in ("round", "nextafter", "remainder", "floor_divide", "fmod", "pow"),
    "int64": lambda name, op: op.rule in ("same", "int", "keep", "bool") and name not in ("maximum", "minimum"),
    "bool": lambda name, op: op.rule in ("logical", "int", "where") or name in ("isnan", "isfinite", "signbit"),
}


@real_numba_cuda
@pytest.mark.parametrize("dtype", list(_LOWERING_SETS))
def test_kernels_lower_for_cuda(dtype, monkeypatch):
    """The elementwise ops' expressions for `dtype`, in one generated CUDA kernel (2-d, broadcast
    layout, a scalar operand), type and lower to NVVM IR: what a GPU would compile."""
    names = [n for n, op in declarations.OPS.items() if _LOWERING_SETS[dtype](n, op)]
    _lower(*_lowering_case(names, dtype), monkeypatch)


# -- a real GPU -----------------------------------------------------------------------------------------
@pytest.mark.gpu
@needs_gpu
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_gpu_chain_matches_cpu(dtype, rng):
    """On a GPU: a fused broadcast chain and every record against the CPU."""
    a_host, b_host = sample("real", (64, 33), dtype, rng), sample("positive", (33,), dtype, rng)
    want = (tidal.tensor(a_host) * 2 + tidal.tensor(b_host)).abs() - 1
    got = (tidal.tensor(a_host, device="cuda") * 2 + tidal.tensor(b_host, device="cuda")).abs() - 1
    _check(got, want)
    for info in OPS:
        if dtype in info.dtypes:
            cpu = [_make(dom, shape, layout, dtype, rng) for dom, (shape, layout) in
                   zip(info.domains, SHAPES[info.arity])]
            _check(info.op(*[t.to("cuda") for t in cpu]), info.op(*cpu), info)

"""Fused complex64/complex128 groups run as compiled numba loops (vm/codegen.py with
ops/complex_numbers/kernels.py), with torch's values: special values (signed zeros, infinities, NaNs,
negative reals on branch cuts), mixed real and complex inputs, gradients; the functions numba gets
wrong for complex values keep their groups on the NumPy path (ops/complex_numbers/compiled.py).

Each test builds a few wide groups (one kernel per group and dtype) so that compiling stays cheap.
"""
from __future__ import annotations

import os
import types

import numpy as np
import pytest
import torch

import tidal
from tidal.ops.complex_numbers import compiled as complex_compiled
from tidal.vm import codegen, fusion

DTYPES = ["complex64", "complex128"]
TOL = {"complex64": dict(rtol=2e-6, atol=1e-30), "complex128": dict(rtol=1e-14, atol=1e-300)}
TOL["float64"] = TOL["complex128"]
_PARTS = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 1e30, -1e30, np.inf, -np.inf, np.nan, 1e-30]
SPECIAL = np.array([complex(a, b) for a in _PARTS for b in _PARTS])  # 169 values


@pytest.fixture
def runs(monkeypatch):
    """Fused groups compile on first sight, in the foreground; yields a record of which programs
    ran compiled ('compiled': (program, layout) pairs) and which complex ones ran on NumPy."""
    saved, mode = tidal.vm.get_fusion(), tidal.vm.get_mode()
    seen = {"compiled": [], "numpy": []}
    real_kernel, real_numpy = codegen.compiled_kernel, codegen.run_numpy

    def kernel(prog, variant):
        seen["compiled"].append((prog, variant))
        return real_kernel(prog, variant)

    def numpy_path(prog, ins, outs):
        if len(prog.lines) > 1 and any(getattr(x, "dtype", np.dtype(float)).kind == "c" for x in ins + outs):
            seen["numpy"].append(prog)
        return real_numpy(prog, ins, outs)

    monkeypatch.setattr(codegen, "compiled_kernel", kernel)
    monkeypatch.setattr(codegen, "run_numpy", numpy_path)
    monkeypatch.setattr(fusion, "run_numpy", numpy_path)
    monkeypatch.setattr(codegen, "_ready_calls", {})  # kernels bound earlier are looked up (and seen) anew
    monkeypatch.setattr(codegen.compiler, "pending", set())
    tidal.vm.set_mode("async")  # the fusion window exists in async mode
    tidal.vm.set_fusion(enabled=True, compile_after=1, max_group=512, background_compile=False)
    try:
        yield seen
    finally:
        tidal.vm.set_fusion(**saved)
        tidal.vm.set_mode(mode)


def _unfused(fn, *args):
    """fn(*args) with fusion off: every op alone, on the NumPy path."""
    saved = tidal.vm.get_fusion()
    tidal.vm.set_fusion(enabled=False)
    try:
        out = fn(*args)
        return [t.numpy() for t in out] if isinstance(out, (list, tuple)) else out.numpy()
    finally:
        tidal.vm.set_fusion(**saved)


def _complex_compiled(seen) -> bool:
    return any(variant[-1] == codegen.COMPLEX for _, variant in seen["compiled"])


def _np(t) -> np.ndarray:
    if isinstance(t, np.ndarray):
        return t
    return t.detach().resolve_conj().numpy() if isinstance(t, torch.Tensor) else t.detach().numpy()


def _same(got, want, dtype: str, signs: bool = True) -> None:
    """Finite values within rtol of |want| (complex magnitude), the same infinities and NaN parts
    elsewhere, and (`signs`) zeros of want's sign."""
    got, want = _np(got), _np(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype, got.shape, want.shape)
    g, w = got.astype(np.complex128), want.astype(np.complex128)
    tol = TOL[dtype]
    finite = np.isfinite(g) & np.isfinite(w)
    with np.errstate(all="ignore"):
        close = np.abs(g - w) <= tol["rtol"] * np.abs(w) + tol["atol"]
    ok = np.ones(g.shape, bool)
    for a, b in ((g.real, w.real), (g.imag, w.imag)):
        with np.errstate(all="ignore"):
            part = (a == b) | (np.isnan(a) & np.isnan(b)) | (np.abs(a - b) <= tol["rtol"] * np.abs(b) + tol["atol"])
        ok &= np.where(finite, close, part)
        if signs:
            ok &= ~((a == 0) & (b == 0) & (np.signbit(a) != np.signbit(b)))
    where = np.argwhere(~ok)[:4].tolist()
    assert ok.all(), f"{np.count_nonzero(~ok)} differ, at {where}: {got[~ok][:4]} vs {want[~ok][:4]}"


# -- every compiled unary op, one group per dtype: row k of the result is op k on the special values ----
UNARY = {  # name: (tidal fn, torch fn)
    "neg": (lambda z: -z, lambda z: -z), "positive": (lambda z: +z, lambda z: +z),
    "conj": (tidal.conj_physical, torch.conj_physical), "square": (tidal.square, torch.square),
    "abs": (tidal.abs, torch.abs), "sgn": (tidal.sgn, torch.sgn), "reciprocal": (tidal.reciprocal, torch.reciprocal),
    "rsqrt": (tidal.rsqrt, torch.rsqrt), "sqrt": (tidal.sqrt, torch.sqrt), "exp": (tidal.exp, torch.exp),
    "exp2": (tidal.exp2, torch.exp2), "expm1": (tidal.expm1, torch.expm1), "log": (tidal.log, torch.log),
    "log2": (tidal.log2, torch.log2), "log10": (tidal.log10, torch.log10), "log1p": (tidal.log1p, torch.log1p),
    "sigmoid": (tidal.sigmoid, torch.sigmoid), "sin": (tidal.sin, torch.sin), "cos": (tidal.cos, torch.cos),
    "tan": (tidal.tan, torch.tan), "sinh": (tidal.sinh, torch.sinh), "cosh": (tidal.cosh, torch.cosh),
    "tanh": (tidal.tanh, torch.tanh), "sinc": (tidal.sinc, torch.sinc),
    "isnan": (tidal.isnan, torch.isnan), "isinf": (tidal.isinf, torch.isinf),
    "isfinite": (tidal.isfinite, torch.isfinite),
    "eq0": (lambda z: z == 0, lambda z: z == 0), "ne1": (lambda z: z != 1, lambda z: z != 1),
    "mul_scalar": (lambda z: z * (2 - 1j), lambda z: z * (2 - 1j)), "div_scalar": (lambda z: z / 3j, lambda z: z / 3j),
    "pow_half": (lambda z: z ** 1.5, lambda z: z ** 1.5), "pow_7": (lambda z: z ** -7, lambda z: z ** -7),
    "asin": (tidal.asin, torch.asin), "acos": (tidal.acos, torch.acos), "atan": (tidal.atan, torch.atan),
    "asinh": (tidal.asinh, torch.asinh), "acosh": (tidal.acosh, torch.acosh), "atanh": (tidal.atanh, torch.atanh),
}
# complex64 runs the ops whose code differs from complex128's beyond the final rounding (float32 steps
# as NumPy's complex64 loop: division, exp2, expm1, log1p, sinc, power) and a few others: the rest
# is complex128's code rounded once (and each op costs compile time)
SINGLE = ("neg", "conj", "square", "abs", "sgn", "reciprocal", "rsqrt", "sqrt", "exp", "exp2", "expm1", "log1p",
          "sigmoid", "sinh", "tanh", "sinc", "isfinite", "mul_scalar", "div_scalar", "pow_half", "pow_7", "asin")
_HUGE = lambda z: ~np.isfinite(z) | (np.abs(z) > 1e20)  # noqa: E731
# where tidal's NumPy path (whose values the compiled loops keep) and torch disagree, by op: such
# elements are not compared with torch (sgn of infinities: NumPy's z/|z| is nan+nanj, torch's
# vectorized loop nan j; log1p: NumPy's log(1+z) loses tiny real parts and takes infinities its own
# way; sinc, square: the two round differently where parts overflow; pow: NumPy's 0 ** b is nan
# for b.real <= 0, a ** -7 is 1 / (products), torch's exp(b log a) over- and underflows elsewhere;
# acos: torch's complex128 acos(1 + 1e-30j) has real part 8.9e-16, glibc's and NumPy's 1e-15)
TORCH_DIFFERS = {"sgn": _HUGE, "log1p": lambda z: _HUGE(z) | (np.abs(z) < 1e-20),
                 "sinc": _HUGE, "square": _HUGE, "pow_half": lambda z: _HUGE(z) | (z == 0),
                 "pow_7": lambda z: _HUGE(z) | (np.abs(z) < 1e-20), "acos": lambda z: np.abs(np.abs(z) - 1) < 1e-20}
# and where the NumPy path is not what the compiled loop gives: square, whose SIMD loop fuses a
# multiply-add (the real part of (1e30+1e30j)**2 in float64 is -8.8e43 there, 0 here and in torch)
NUMPY_DIFFERS = {"square": _HUGE}


def _mask(table: dict, z: np.ndarray, ops: dict) -> np.ndarray:
    skip = np.zeros(z.shape, bool)
    for k, name in enumerate(ops):
        if name in table:
            skip[k] = table[name](z[k])
    return skip


def _rows(ops: dict, z, lib):
    """One fused group: where(row == k, op_k(z), acc), so that row k holds op k's values."""
    mod = tidal if lib == "tidal" else torch
    k, n = len(ops), z.shape[-1]
    rows = mod.arange(k).reshape(k, 1).expand(k, n) if lib == "torch" else tidal.arange(k).reshape(k, 1) * \
        tidal.ones(1, n, dtype=tidal.int64)
    acc = mod.zeros(k, n, dtype=z.dtype)
    for j, (fn_t, fn_torch) in enumerate(ops.values()):
        acc = mod.where(rows == j, (fn_t if lib == "tidal" else fn_torch)(z), acc)
    return acc


@pytest.mark.parametrize("dtype", DTYPES)
def test_unary_ops_compiled_with_special_values(dtype, runs):
    ops = UNARY if dtype == "complex128" else {name: UNARY[name] for name in SINGLE}
    z = np.broadcast_to(SPECIAL.astype(dtype), (len(ops), len(SPECIAL))).copy()
    got = _rows(ops, tidal.tensor(z), "tidal").numpy()
    assert _complex_compiled(runs) and not runs["numpy"], "the complex group did not run compiled"
    skip = _mask(NUMPY_DIFFERS, z, ops)
    plain = _unfused(_rows, ops, tidal.tensor(z), "tidal")
    _same(np.where(skip, 0, got), np.where(skip, 0, plain), dtype)  # the NumPy path's values, zero signs too
    skip = _mask(TORCH_DIFFERS, z, ops)
    want = _rows(ops, torch.tensor(z), "torch").numpy()
    _same(np.where(skip, 0, got), np.where(skip, 0, want), dtype, signs=False)


# -- binary ops and mixed real/complex operands, on every pair of special values ---------------------------
BINARY = {
    "add": lambda lib, a, b, r: a + b, "sub": lambda lib, a, b, r: a - b, "mul": lambda lib, a, b, r: a * b,
    "div": lambda lib, a, b, r: a / b, "eq": lambda lib, a, b, r: a == b, "ne": lambda lib, a, b, r: a != b,
    "logaddexp": lambda lib, a, b, r: lib.logaddexp(a, b), "lerp": lambda lib, a, b, r: lib.lerp(a, b, 0.25),
    "where": lambda lib, a, b, r: lib.where(a.abs() > b.abs(), a, b),
    "real_mul": lambda lib, a, b, r: r * b, "real_div": lambda lib, a, b, r: r / a, "pow": lambda lib, a, b, r: a ** b,
    "real_add_abs": lambda lib, a, b, r: (a + r).abs() * r,
}
# tidal's NumPy path (kept by the compiled loops) against torch: torch's add and sub compute a + alpha b
# with alpha the complex 1 (0 + inf j plus 0 is nan + inf j there), NumPy's multiply fuses a multiply-add
# where products overflow, and its logaddexp template meets infinities its own way
TORCH_DIFFERS_2 = {"add": _HUGE, "sub": _HUGE, "mul": _HUGE, "logaddexp": _HUGE, "div": _HUGE, "real_div": _HUGE,
                   "lerp": _HUGE, "real_add_abs": _HUGE, "pow": lambda z: _HUGE(z) | (z == 0)}
NUMPY_DIFFERS_2 = {"mul": _HUGE, "lerp": _HUGE, "logaddexp": _HUGE,
                   "pow": _HUGE}  # (b log a in float32 there, and the sign of what underflows)


def _binary_rows(lib, a, b, r):
    mod = tidal if lib == "tidal" else torch
    k, n = len(BINARY), a.shape[-1]
    rows = mod.arange(k).reshape(k, 1) * mod.ones(1, n, dtype=mod.int64)
    acc = mod.zeros(k, n, dtype=a.dtype)
    for j, fn in enumerate(BINARY.values()):
        acc = mod.where(rows == j, fn(mod, a, b, r), acc)
    return acc


@pytest.mark.parametrize("dtype", DTYPES)
def test_binary_and_mixed_ops_compiled_with_special_values(dtype, runs):
    pairs = (np.repeat(SPECIAL, len(SPECIAL)), np.tile(SPECIAL, len(SPECIAL)))
    a, b = (np.broadcast_to(p.astype(dtype), (len(BINARY), p.size)).copy() for p in pairs)
    r = b.real.copy()  # a real operand: float32 beside complex64, float64 beside complex128
    args = [tidal.tensor(x) for x in (a, b, r)]
    got = _binary_rows("tidal", *args).numpy()
    assert _complex_compiled(runs) and not runs["numpy"], "the complex group did not run compiled"
    skip = np.zeros(a.shape, bool)
    for k, name in enumerate(BINARY):
        skip[k] = NUMPY_DIFFERS_2[name](a[k]) | NUMPY_DIFFERS_2[name](b[k]) if name in NUMPY_DIFFERS_2 else False
    _same(np.where(skip, 0, got), np.where(skip, 0, _unfused(_binary_rows, "tidal", *args)), dtype)
    for k, name in enumerate(BINARY):
        skip[k] = TORCH_DIFFERS_2[name](a[k]) | TORCH_DIFFERS_2[name](b[k]) if name in TORCH_DIFFERS_2 else False
    want = _binary_rows("torch", *[torch.tensor(x) for x in (a, b, r)]).numpy()
    _same(np.where(skip, 0, got), np.where(skip, 0, want), dtype, signs=False)


# -- what stays on NumPy, views of complex results, broadcasting, gradients ------------------------------
def _randn(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)


def test_a_name_ruled_numpy_only_keeps_complex_groups_on_numpy(runs, monkeypatch):
    """The rule for a function numba would get wrong on complex values (ops/complex_numbers/compiled.py's
    table, empty today): a complex group using it runs on the NumPy path, a real one still compiles."""
    assert complex_compiled.COMPLEX_NUMPY_ONLY == {} and codegen._complex_module == "tidal.ops.complex_numbers.kernels"
    monkeypatch.setattr(codegen, "_complex_numpy_only", codegen._calls_of(["np.sqrt"]))
    z = _randn(16, np.complex128)
    got = ((tidal.tensor(z) * 2).sqrt() + 1).numpy()
    assert not runs["compiled"] and runs["numpy"], "the complex group should have run on the NumPy path"
    _same(got, ((torch.tensor(z) * 2).sqrt() + 1).numpy(), "complex128")
    ((tidal.tensor(z.real) * 2).sqrt() + 1).numpy()
    assert runs["compiled"] and not _complex_compiled(runs)


def test_real_view_of_a_fused_complex_result_broadcast_and_strided(runs):
    """A complex group over broadcast and transposed operands (the loop-nest layout), its result's .real
    and .imag (float views of complex memory) feeding a real group; complex64 beside a float32 scalar."""
    zn, wn = _randn((6, 1), np.complex64, 1), _randn((7, 6), np.complex64, 2)

    def fn(m, z, w):
        u = (z * w.t() + 0.5j).exp() / (w.t() - 3)
        return [u, u.real.abs() * 2 + u.imag.abs(), (u.conj() * z).real.sigmoid()]
    got = [t.numpy() for t in fn(tidal, tidal.tensor(zn), tidal.tensor(wn))]
    assert any(v[0] == "nd" and v[-1] == codegen.COMPLEX for _, v in runs["compiled"]), runs["compiled"]
    want = fn(torch, torch.tensor(zn), torch.tensor(wn))
    for g, w in zip(got, want):
        _same(g, w, "complex64", signs=False)


def test_gradients_of_a_fused_complex_chain(runs):
    """The backward pass of a complex chain (holomorphic ops, abs, conj, a real mix) runs compiled groups,
    and the gradients are torch's (complex128: PyTorch's conjugate Wirtinger convention)."""
    zn, wn = _randn((5, 4), np.complex128, 3), _randn((5, 4), np.complex128, 4)
    rn = np.random.default_rng(5).standard_normal((5, 4))

    def loss(m, z, w, r):
        y = (z * w).exp() * 0.5 - z.conj() * (w + r).sigmoid()
        return (y.abs() * r + (y / w).real).sum()
    args = [tidal.tensor(x, requires_grad=True) for x in (zn, wn, rn)]
    out = loss(tidal, *args)
    value = out.item()  # (the forward group stores every result autograd saves: too many outputs to compile)
    runs["compiled"].clear()
    out.backward()
    grads = [a.grad.numpy() for a in args]
    assert _complex_compiled(runs), "no complex group of the backward pass ran compiled"
    targs = [torch.tensor(x, requires_grad=True) for x in (zn, wn, rn)]
    tout = loss(torch, *targs)
    tout.backward()
    np.testing.assert_allclose(value, tout.item(), rtol=1e-13)
    for g, t in zip(grads, targs):
        _same(g, t.grad.numpy(), "complex128" if g.dtype.kind == "c" else "float64")


# -- the CUDA kernel of a complex program (no GPU needed: typed and lowered for the real target) --------
@pytest.mark.skipif(os.environ.get("NUMBA_ENABLE_CUDASIM") == "1", reason="needs numba's real CUDA target")
def test_complex_kernel_lowers_for_cuda(monkeypatch):
    """One kernel with each kind of complex code a GPU kernel holds (ops/complex_numbers/cuda.py: division,
    complex_math's functions in both precisions, cmath, part tests, real) types and lowers: i0 is
    complex64, i1 complex128 (the CPU tests cover the functions' values, the same code on a GPU)."""
    from numba import types as nt
    from numba.cuda.compiler import compile_cuda
    import numba.cuda.dispatcher as cuda_dispatcher
    from tidal.ops.elementwise import declarations, plans as ew
    from tidal.vm import cuda as cuda_backend, codegen_cuda
    cuda_backend.runtime()
    monkeypatch.setattr(cuda_dispatcher, "get_current_device", lambda: types.SimpleNamespace(compute_capability=(8, 0)))
    numba_type = {"complex64": nt.complex64, "complex128": nt.complex128, "float32": nt.float32,
                  "float64": nt.float64, "bool": nt.boolean}
    lines, out_types = [], []
    for arg, names in (("i0", ("div", "exp2", "sqrt", "isfinite")),
                       ("i1", ("div", "asin", "conj", "logaddexp", "sgn", "logical_not"))):
        d = tidal.complex64 if arg == "i0" else tidal.complex128
        for name in names:
            op = declarations.OPS[name]
            plan = ew.plan_for(op, (tidal.ones(2, dtype=d),) * op.nin)
            lines.append((plan.expr, (arg,) * op.nin))
            out_types.append(numba_type[plan.dtype.name])
    prog = codegen.Program(tuple(lines), 2, tuple(f"t{k}" for k in range(len(lines))))
    src = codegen_cuda.module_source(prog, 2, (True, True), complex_values=True)
    assert "np.true_divide(a0, a0)" in src and "complex_numbers.cuda import *" in src
    kernel = codegen.load_generated(src, prefix="cuda").kernel
    arrays = out_types + [nt.complex64, nt.complex128]
    compile_cuda(kernel.py_func, nt.void, tuple(nt.Array(t, 2, "A") for t in arrays), cc=(8, 0))

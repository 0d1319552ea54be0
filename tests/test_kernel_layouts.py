"""Compiled kernels over the layouts programs hand them: in-place results, inputs broadcast by a 0 stride, reduced rows
longer than a block, and float32 exp (vm/codegen.py, vm/fusion_reduce.py, ops/elementwise/scalar_kernels.py)."""
import numpy as np
import pytest

import tidal
from tidal.vm import codegen, fusion_reduce


@pytest.fixture
def compiled():
    """Fused groups compile in the foreground on their third run."""
    saved = tidal.vm.get_fusion()
    tidal.vm.set_fusion(background_compile=False, compile_after=2)
    yield
    tidal.vm.set_fusion(**{k: saved[k] for k in ("background_compile", "compile_after")})


def _runs(fn, times=8):
    """fn()'s result after its group had the runs that compile it."""
    for _ in range(times - 1):
        fn()
    return fn()


def _program(*lines, n_in: int) -> codegen.Program:
    return codegen.Program(tuple(lines), n_in, (f"t{len(lines) - 1}",))


def test_an_in_place_kernel_reads_its_output_as_the_input(compiled):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 48)).astype(np.float32)
    acc = rng.standard_normal((64, 48)).astype(np.float32)
    want = np.exp(x * np.float32(0.5)) + acc
    prog = _program(("as_float32({0} * {1})", ("i0", "i1")), ("as_float32(exp_single({0}))", ("t0",)),
                    ("as_float32({0} + {1})", ("t1", "i2")), n_in=3)
    codegen.run_compiled(prog, [x, np.float32(0.5), acc], [acc])  # acc += exp(x * 0.5), as `acc.add_(...)`
    np.testing.assert_allclose(acc, want, rtol=2e-6, atol=1e-6)
    variant = codegen._elementwise_variant([acc], [x, np.float32(0.5), acc])
    assert "    i2 = o0" in codegen._kernel_source(prog, variant)  # one name for the one array


def test_kernels_read_inputs_broadcast_by_zero_strides(compiled):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((32, 40)).astype(np.float32)
    col = rng.standard_normal((32, 1)).astype(np.float32)
    wide = np.broadcast_to(col, (32, 40))  # stride 0 along dim 1
    assert codegen.unbroadcast(wide).shape == (32, 1) and codegen.unbroadcast(x) is x
    prog = _program(("as_float32({0} * {1})", ("i0", "i1")), ("as_float32(exp_single({0}))", ("t0",)), n_in=2)
    out = np.empty((32, 40), np.float32)
    codegen.run_compiled(prog, [x, wide], [out])
    np.testing.assert_allclose(out, np.exp(x * col), rtol=2e-6)
    tx, tcol = tidal.tensor(x), tidal.tensor(col).expand(32, 40)
    total = _runs(lambda: (tx * tcol - 0.5).exp().sum(1))
    np.testing.assert_allclose(total.numpy(), np.exp(x * col - np.float32(0.5)).sum(1), rtol=1e-5)


@pytest.mark.parametrize("n", [1, 3, 4, 5, 255, 256, 257, 600])
def test_rows_longer_than_a_block_reduce_as_numpy(compiled, n):
    rng = np.random.default_rng(n)
    x = rng.standard_normal((6, n)).astype(np.float32)
    tx = tidal.tensor(x)
    got = _runs(lambda: (tx * 2.0 + 1.0).sum(1))
    np.testing.assert_allclose(got.numpy(), (x * 2 + 1).sum(1, dtype=np.float64).astype(np.float32), rtol=1e-5, atol=1e-5)
    soft = _runs(lambda: tidal.softmax(tx, 1))
    e = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(soft.numpy(), e / e.sum(1, keepdims=True), rtol=2e-6, atol=1e-7)
    assert n < fusion_reduce.BLOCK or fusion_reduce.BLOCK % fusion_reduce.LANES == 0


def test_float32_exp_is_within_one_ulp_with_libm_special_values(compiled):
    rng = np.random.default_rng(2)
    x = np.concatenate([(rng.random(20000, dtype=np.float32) - 0.5) * 220,
                        np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, 88.72283, 88.7229, -87.33655, -103.9, -104.0,
                                  -110.0, 1e-30, -1e-30], np.float32)])
    got = np.empty_like(x)
    codegen.run_compiled(_program(("as_float32(exp_single({0}))", ("i0",)), n_in=1), [x], [got])
    with np.errstate(over="ignore"):
        exact = np.exp(x.astype(np.float64)).astype(np.float32)
    both_nan = np.isnan(got) & np.isnan(exact)
    ulps = np.abs(got.view(np.int32).astype(np.int64) - exact.view(np.int32).astype(np.int64))
    assert np.all(both_nan | (ulps <= 1))
    assert got[-13] == np.inf and got[-12] == 0.0 and np.isnan(got[-11]) and got[-7] == np.inf
    assert got[-5] > 0 and got[-4] == 0.0  # exp(-103.9): a denormal; exp(-104): below half the smallest one

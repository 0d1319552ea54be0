"""Trailing reductions fused into the elementwise group computing their input."""
import numpy as np
import pytest

import tidal


PATHS = ("numpy", "compiled", "unfused", "sync")


def use_path(path: str) -> None:
    """Fused on the NumPy path, fused and compiled at once, unfused (async), or sync mode."""
    tidal.vm.set_mode("sync" if path == "sync" else "async")
    tidal.vm.set_fusion(enabled=path != "unfused", compile_after=1 if path == "compiled" else 10**6,
                        background_compile=False)


def rand(rng, shape, dtype=np.float32):
    if np.dtype(dtype).kind == "b":
        return rng.random(shape) < 0.5
    if np.dtype(dtype).kind in "iu":
        return rng.integers(-4 if np.dtype(dtype).kind == "i" else 0, 5, shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


# name -> (tidal/NumPy function, input shapes); each is written once for both libraries. Every
# group has two ops or more, so the "compiled" path compiles it (a lone op stays on NumPy).
FLOAT_CASES = {
    "mse_mean_all": (lambda m, x, y: m.mean((x - y) ** 2), [(7, 33), (7, 33)]),
    "dot_last_dim_broadcast": (lambda m, x, w: m.sum(x * w * 2, -1), [(5, 4, 9), (9,)]),
    "exp_sum_keepdim": (lambda m, x: m.sum(m.exp(x * 0.5), 1, keepdims=True), [(3, 6, 4)]),
    "bias_grad_leading_dim": (lambda m, x, y: m.sum(x * y + 1, 0), [(16, 8), (16, 8)]),
    "leading_dims_last_kept": (lambda m, x: m.sum(x * 2 + 1, (1, 0)), [(3, 4, 5)]),
    "middle_dim_last_kept": (lambda m, x: m.amax(x * 2 + 1, 1), [(4, 3, 5)]),
    "middle_and_first_dims": (lambda m, x: m.sum(x * x + 1, (0, 2)), [(3, 5, 4)]),
    "long_rows": (lambda m, x: m.sum(x * x - 1, -1), [(3, 37)]),
    "amax_rows": (lambda m, x: m.amax(x * 2 - 1, 1), [(6, 10)]),
    "amin_all": (lambda m, x: m.amin((x + 3) * 2, (0, 1)), [(6, 10)]),
    "prod_last": (lambda m, x: m.prod(x * 0.5 + 1, -1), [(4, 6)]),
    "mean_reversed_dims": (lambda m, x: m.mean(m.abs(x) * 2, (2, 0)), [(4, 3, 5)]),
}


class NumpyLib:
    """The NumPy spelling of the few ops the cases use, taking `keepdims` like NumPy."""
    exp, abs = np.exp, np.abs

    @staticmethod
    def sum(x, dim=None, keepdims=False):
        return np.sum(x, axis=dim, keepdims=keepdims)

    @staticmethod
    def mean(x, dim=None):
        return np.mean(x, axis=dim)

    @staticmethod
    def prod(x, dim):
        return np.prod(x, axis=dim)

    @staticmethod
    def amax(x, dim):
        return np.amax(x, axis=dim)

    @staticmethod
    def amin(x, dim):
        return np.amin(x, axis=dim)


class TidalLib:
    """tidal's spelling (keepdim=)."""
    exp, abs, amax, amin, prod, mean = tidal.exp, tidal.abs, tidal.amax, tidal.amin, tidal.prod, tidal.mean

    @staticmethod
    def sum(x, dim=None, keepdims=False):
        return tidal.sum(x, dim, keepdim=keepdims)


def run_case(fn, arrays, loops: int = 2):
    out = None
    for _ in range(loops):  # the second run uses the kernel the first one compiled
        out = fn(TidalLib, *[tidal.tensor(a) for a in arrays]).numpy()
    return out


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("case", sorted(FLOAT_CASES))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_float_reductions_match_numpy(fusion_settings, rng, path, case, dtype):
    if path == "compiled" and dtype == np.float64:
        pytest.skip("the compiled loops are dtype-generic: float32 covers them (compiling costs seconds)")
    use_path(path)
    fn, shapes = FLOAT_CASES[case]
    arrays = [rand(rng, s, dtype) for s in shapes]
    got = run_case(fn, arrays)
    want = fn(NumpyLib, *[a.astype(np.float64) for a in arrays])
    assert got.dtype == dtype
    np.testing.assert_allclose(got, want, rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-6)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint8, np.bool_])
def test_integer_and_bool_reductions_are_exact(fusion_settings, rng, path, dtype):
    if path == "compiled" and dtype in (np.int64, np.uint8):
        pytest.skip("int32 and bool cover the compiled integer loops (compiling costs seconds)")
    use_path(path)
    xn, yn = rand(rng, (6, 7), dtype), rand(rng, (6, 7), dtype)
    x, y = tidal.tensor(xn), tidal.tensor(yn)
    xyy = (xn * yn * yn).astype(np.int64)
    for _ in range(2):
        total = (x * y * y).sum()  # ints and bool sum to int64
        rows = (x * y * y).sum(1, keepdim=True)
        cols = (x * y * y).sum(0)
        assert total.dtype is tidal.int64
        assert total.item() == xyy.sum()
        np.testing.assert_array_equal(rows.numpy(), xyy.sum(1, keepdims=True))
        np.testing.assert_array_equal(cols.numpy(), xyy.sum(0))
        if dtype != np.bool_:
            np.testing.assert_array_equal(((x + y) * 1).amax(0).numpy(), (xn + yn).max(0))
            np.testing.assert_array_equal(((x - y) * 1).amin(1).numpy(), (xn - yn).min(1))
            np.testing.assert_array_equal(((x + 1) * 1).prod(1).numpy(), (xn.astype(np.int64) + 1).prod(1))


@pytest.mark.parametrize("path", PATHS)
def test_nan_propagates_through_fused_extremes(fusion_settings, path):
    use_path(path)
    xn = np.array([[1.0, np.nan, 3.0], [4.0, 5.0, -np.inf]], np.float32)
    x = tidal.tensor(xn)
    for _ in range(2):
        np.testing.assert_array_equal((x * 1).amax(1).numpy(), [np.nan, 5.0])
        np.testing.assert_array_equal((x + 0).amin(1).numpy(), [np.nan, -np.inf])
        assert np.isnan((x * 2).sum().item())


@pytest.mark.parametrize("path", PATHS)
def test_half_precision_and_noncontiguous_inputs(fusion_settings, rng, path):
    use_path(path)
    base = rand(rng, (5, 8), np.float32)
    x = tidal.tensor(base)
    for _ in range(2):
        np.testing.assert_allclose((x.t() * 3).sum(0).numpy(), (base.T * 3).sum(0), rtol=1e-5)
        np.testing.assert_allclose((x[:, ::2] + 1).mean(1).numpy(), (base[:, ::2] + 1).mean(1), rtol=1e-5)
        h = x.to(tidal.float16)
        got = (h * 2).sum(1)
        assert got.dtype is tidal.float16
        np.testing.assert_allclose(got.numpy().astype(np.float32), (base.astype(np.float16) * 2).astype(
            np.float32).sum(1), rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("path", PATHS)
def test_dtype_rules_and_errors_stay(fusion_settings, path):
    use_path(path)
    xi = tidal.tensor(np.arange(6, dtype=np.int32).reshape(2, 3))
    with pytest.raises(RuntimeError, match="mean\\(\\): could not infer output dtype"):
        (xi * 2).mean()
    got = (xi * 2).sum(dtype=tidal.float64)
    assert got.dtype is tidal.float64 and got.item() == 30.0
    empty = tidal.zeros(0, 4)
    assert (empty * 2).sum(0).numpy().tolist() == [0.0] * 4
    assert (empty + 1).prod(1).numpy().shape == (0,)


def test_mse_is_one_kernel_without_intermediates(fusion_settings, rng):
    use_path("compiled")
    x, y = tidal.tensor(rand(rng, (64, 32))), tidal.tensor(rand(rng, (64, 32)))
    for _ in range(2):
        tidal.vm.reset_stats()
        loss = ((x - y) ** 2).mean()
        loss.item()
        s = tidal.vm.stats()
        assert s["instructions"] == 3 and s["kernels"] == 1
        assert s["fused_away"] == 2 and s["allocations_avoided"] == 2
        assert s["allocations"] == 1  # the scalar result only


def test_live_intermediate_is_written_and_reduced_in_one_kernel(fusion_settings, rng):
    use_path("compiled")
    xn = rand(rng, (4, 10))
    x = tidal.tensor(xn)
    for _ in range(2):
        tidal.vm.reset_stats()
        e = x.exp()
        denom = e.sum(1, keepdim=True)
        np.testing.assert_allclose(denom.numpy(), np.exp(xn).sum(1, keepdims=True), rtol=1e-6)
        np.testing.assert_allclose(e.numpy(), np.exp(xn), rtol=1e-6)
        s = tidal.vm.stats()
        assert s["kernels"] == 1 and s["allocations_avoided"] == 0


def test_inplace_target_reduced_after_update(fusion_settings):
    use_path("compiled")
    x = tidal.tensor(np.arange(6, dtype=np.float32))
    x.mul_(2)
    total = x.sum()
    assert total.item() == 30.0
    np.testing.assert_array_equal(x.numpy(), np.arange(6) * 2)


def test_reduction_of_another_view_is_not_fused(fusion_settings):
    use_path("compiled")
    base = np.arange(6, dtype=np.float32).reshape(2, 3)
    x = tidal.tensor(base)
    tidal.vm.reset_stats()
    y = x * 2
    cols = y.t().sum(1)
    np.testing.assert_array_equal(cols.numpy(), (base * 2).sum(0))
    assert tidal.vm.stats()["kernels"] == 2


@pytest.mark.parametrize("knob", ["fusion_off", "reductions_off"])
def test_knobs_turn_reduction_fusion_off(fusion_settings, rng, knob):
    use_path("compiled")
    if knob == "fusion_off":
        tidal.vm.set_fusion(enabled=False)
    else:
        tidal.vm.set_fusion(reductions=False)
    xn, yn = rand(rng, (8, 8)), rand(rng, (8, 8))
    x, y = tidal.tensor(xn), tidal.tensor(yn)
    tidal.vm.reset_stats()
    loss = ((x - y) ** 2).mean()
    np.testing.assert_allclose(loss.item(), ((xn - yn) ** 2).mean(), rtol=1e-6)
    assert tidal.vm.stats()["kernels"] == (3 if knob == "fusion_off" else 2)


def test_fused_and_unfused_agree_on_broadcast_gradients(fusion_settings, rng):
    xn, wn, bn = rand(rng, (16, 5), np.float64), rand(rng, (5,), np.float64), rand(rng, (5,), np.float64)
    grads = []
    for path in PATHS:
        use_path(path)
        for _ in range(2):
            x = tidal.tensor(xn)
            w, b = tidal.tensor(wn, requires_grad=True), tidal.tensor(bn, requires_grad=True)
            ((x * w + b) ** 2).mean().backward()
        grads.append((w.grad.numpy(), b.grad.numpy()))
    r = 2 * (xn * wn + bn) / xn.size
    for gw, gb in grads:
        np.testing.assert_allclose(gw, (r * xn).sum(0), rtol=1e-12)
        np.testing.assert_allclose(gb, r.sum(0), rtol=1e-12)


def test_background_compile_keeps_results(fusion_settings, rng):
    use_path("numpy")
    tidal.vm.set_fusion(compile_after=1, background_compile=True, compile_heat=0)
    xn = rand(rng, (3, 50))
    x = tidal.tensor(xn)
    rows, cols = (np.sin(xn) * 2).astype(np.float64).sum(1), (np.sin(xn) * 2).astype(np.float64).sum(0)
    for _ in range(20):
        np.testing.assert_allclose((x.sin() * 2).sum(1).numpy(), rows, rtol=1e-5)
        np.testing.assert_allclose((x.sin() * 2).sum(0).numpy(), cols, rtol=1e-5)

"""Random sampling: distributions (generous statistical bounds), ranges, reproducibility, generator
state, sync/async determinism, and dtypes/errors against PyTorch."""
from __future__ import annotations

import re

import numpy as np
import pytest

import tidal
from pairs import assert_raises_like

torch = pytest.importorskip("torch")

N = 200_000
FLOATS = ["float16", "bfloat16", "float32", "float64"]


def _np(t) -> np.ndarray:
    arr = np.asarray(t.detach()._host_array())
    return arr.astype(np.float64) if t.dtype.is_floating_point else arr  # 16-bit sums overflow


def _name(d) -> str:
    return str(d).split(".")[-1]


@pytest.fixture(autouse=True)
def _seeded():
    tidal.manual_seed(1234)
    yield


# -- continuous distributions ---------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", FLOATS)
def test_rand_uniform_on_unit_interval(dtype):
    x = _np(tidal.rand(N, dtype=getattr(tidal, dtype)))
    assert x.min() >= 0 and x.max() < 1
    assert abs(x.mean() - 0.5) < 0.01 and abs(x.var() - 1 / 12) < 0.005
    assert len(np.unique(x)) > (200 if dtype == "bfloat16" else 1000)


@pytest.mark.parametrize("dtype", FLOATS)
def test_uniform_inplace_bounds(dtype):
    x = tidal.empty(N, dtype=getattr(tidal, dtype)).uniform_(-3, 5)
    v = _np(x)
    assert v.min() >= -3 and v.max() <= 5 and abs(v.mean() - 1) < 0.05 and abs(v.var() - 64 / 12) < 0.15
    assert (_np(tidal.zeros(10).uniform_(2, 2)) == 2).all()


@pytest.mark.parametrize("dtype", FLOATS)
def test_randn_and_normal_inplace(dtype):
    z = _np(tidal.randn(N, dtype=getattr(tidal, dtype)))
    assert abs(z.mean()) < 0.02 and abs(z.std() - 1) < 0.02
    assert abs(np.mean(np.abs(z) < 1) - 0.6827) < 0.01
    y = _np(tidal.empty(N, dtype=getattr(tidal, dtype)).normal_(10, 0.5))
    assert abs(y.mean() - 10) < 0.02 and abs(y.std() - 0.5) < 0.02
    assert (_np(tidal.zeros(5).normal_(3, 0)) == 3).all()


def test_normal_forms():
    assert abs(_np(tidal.normal(2, 3, (N,))).mean() - 2) < 0.05
    segments = np.repeat(np.array([0.0, 10.0, -5.0], np.float32), N // 4)
    scales = np.repeat(np.array([1.0, 0.1, 2.0], np.float32), N // 4)
    m, s = tidal.from_numpy(segments), tidal.from_numpy(scales)
    for out in (tidal.normal(m, s), tidal.normal(m, tidal.from_numpy(scales.astype(np.float64)))):
        v = _np(out).reshape(3, -1)
        np.testing.assert_allclose(v.mean(axis=1), [0, 10, -5], atol=0.05)
        np.testing.assert_allclose(v.std(axis=1), [1, 0.1, 2], rtol=0.05)
        assert out.dtype is tidal.float32
    v = _np(tidal.normal(m, 0.5)).reshape(3, -1)
    np.testing.assert_allclose(v.std(axis=1), 0.5, rtol=0.05)
    v = _np(tidal.normal(1.5, s)).reshape(3, -1)
    np.testing.assert_allclose(v.mean(axis=1), 1.5, atol=0.05)
    assert _np(tidal.normal(mean=tidal.zeros(N))).std() == pytest.approx(1, abs=0.02)
    assert tidal.normal(tidal.zeros(2, 1), tidal.ones(3)).shape == torch.normal(torch.zeros(2, 1),
                                                                                torch.ones(3)).shape
    assert tidal.normal(tidal.zeros(3, dtype=tidal.float64), tidal.ones(3)).dtype is tidal.float64
    assert tidal.normal(0., tidal.ones(3, dtype=tidal.float16)).dtype is tidal.float16
    assert tidal.normal(tidal.zeros(3, dtype=tidal.bfloat16), 1.).dtype is tidal.bfloat16
    assert tidal.normal(2, 3, size=(2,), requires_grad=True).requires_grad
    assert tidal.normal(2, 3, (2,), dtype=tidal.float64).dtype is tidal.float64


def test_exponential_log_normal_cauchy():
    e = _np(tidal.empty(N).exponential_(2.0))
    assert e.min() >= 0 and abs(e.mean() - 0.5) < 0.01 and abs(e.std() - 0.5) < 0.01
    ln = _np(tidal.empty(N, dtype=tidal.float64).log_normal_(1.0, 0.5))
    assert ln.min() > 0 and abs(np.log(ln).mean() - 1) < 0.01 and abs(np.log(ln).std() - 0.5) < 0.01
    default = np.log(_np(tidal.empty(N, dtype=tidal.float64).log_normal_()))
    assert abs(default.mean() - 1) < 0.03 and abs(default.std() - 2) < 0.03
    c = _np(tidal.empty(N, dtype=tidal.float64).cauchy_(3.0, 2.0))
    q1, med, q3 = np.percentile(c, [25, 50, 75])
    assert abs(med - 3) < 0.05 and abs(q1 - 1) < 0.1 and abs(q3 - 5) < 0.1


def test_poisson():
    rates = tidal.from_numpy(np.repeat(np.array([0.0, 0.5, 4.0, 100.0], np.float32), N // 4))
    v = _np(tidal.poisson(rates)).reshape(4, -1)
    assert (v == np.round(v)).all() and (v[0] == 0).all()
    np.testing.assert_allclose(v[1:].mean(axis=1), [0.5, 4, 100], rtol=0.02)
    np.testing.assert_allclose(v[1:].var(axis=1), [0.5, 4, 100], rtol=0.05)
    assert tidal.poisson(tidal.ones(3, dtype=tidal.float16)).dtype is tidal.float16
    assert tidal.poisson(tidal.ones(2, 3)).shape == (2, 3)


# -- discrete distributions -------------------------------------------------------------------------------------
@pytest.mark.parametrize("args", [(10, (N,)), (-5, 5, (N,)), (0, 2, (N,))])
def test_randint_range_and_uniformity(args):
    low, high = (0, args[0]) if len(args) == 2 else args[:2]
    v = _np(tidal.randint(*args))
    assert v.dtype == np.int64 and v.min() == low and v.max() == high - 1
    counts = np.bincount(v - low)
    assert len(counts) == high - low and counts.min() > 0.9 * N / (high - low)


@pytest.mark.parametrize("dtype", ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16",
                                   "float32", "float64"])
def test_randint_dtypes(dtype):
    high = 2 if dtype == "bool" else 100
    t = tidal.randint(0, high, (1000,), dtype=getattr(tidal, dtype))
    assert _name(t.dtype) == dtype
    v = _np(t).astype(np.int64)
    assert v.min() == 0 and v.max() == high - 1


def test_randint_argument_forms():
    assert tidal.randint(low=2, high=3, size=(3,)).tolist() == [2, 2, 2]
    assert tidal.randint(3, size=(4, 5)).shape == (4, 5)
    assert tidal.randint(high=3, size=[2]).shape == (2,)
    assert tidal.randint(tidal.tensor(3), (3,)).dtype is tidal.int64
    assert tidal.randint(0, 2 ** 63 - 1, (3,)).dtype is tidal.int64
    assert tidal.randint(3, size=(3,), dtype=tidal.float32, requires_grad=True).requires_grad
    assert tidal.randint(5, ()).shape == ()


@pytest.mark.parametrize("dtype,low,high", [("bool", 0, 1), ("uint8", 0, 255), ("int8", 0, 127),
                                            ("int16", 0, 32767), ("float16", 0, 2048), ("bfloat16", 0, 256),
                                            ("float32", 0, 2 ** 24)])
def test_random_default_range(dtype, low, high):
    v = _np(tidal.empty(N, dtype=getattr(tidal, dtype)).random_()).astype(np.float64)
    assert v.min() >= low and v.max() <= high and v.max() > high * 0.9 and (v == np.round(v)).all()


def test_random_argument_forms():
    assert set(_np(tidal.empty(N).random_(5)).tolist()) == {0, 1, 2, 3, 4}
    assert set(_np(tidal.empty(N).random_(-2, 3)).tolist()) == {-2, -1, 0, 1, 2}
    assert set(_np(tidal.empty(N).random_(to=3)).tolist()) == {0, 1, 2}
    v = _np(tidal.empty(N, dtype=tidal.int8).random_(-3, None))
    assert v.min() == -3 and v.max() == 127
    v = _np(tidal.empty(1000, dtype=tidal.int64).random_(-2 ** 63, None))
    assert v.min() < -2 ** 61 and v.max() > 2 ** 61


@pytest.mark.parametrize("n", [0, 1, 2, 7, 1000])
@pytest.mark.parametrize("dtype", ["int64", "int32", "float32", "float16"])
def test_randperm_is_a_permutation(n, dtype):
    p = tidal.randperm(n, dtype=getattr(tidal, dtype))
    assert _name(p.dtype) == dtype and p.shape == (n,)
    np.testing.assert_array_equal(np.sort(_np(p)), np.arange(n))


def test_randperm_is_uniform():
    firsts = np.array([tidal.randperm(4).tolist()[0] for _ in range(2000)])
    assert np.bincount(firsts, minlength=4).min() > 400
    assert not (_np(tidal.randperm(1000)) == np.arange(1000)).all()


def test_bernoulli_forms():
    p = np.tile(np.array([0.0, 1.0, 0.3], np.float32), N // 3)
    v = _np(tidal.bernoulli(tidal.from_numpy(p))).reshape(-1, 3)
    assert (v[:, 0] == 0).all() and (v[:, 1] == 1).all() and abs(v[:, 2].mean() - 0.3) < 0.01
    assert abs(_np(tidal.bernoulli(tidal.zeros(N), p=0.7)).mean() - 0.7) < 0.01
    assert abs(_np(tidal.zeros(N).bernoulli_(0.25)).mean() - 0.25) < 0.01
    assert abs(_np(tidal.zeros(N, dtype=tidal.int64).bernoulli_()).mean() - 0.5) < 0.01
    rows = _np(tidal.zeros(N // 3, 3).bernoulli_(tidal.tensor([0.0, 1.0, 0.5])))
    assert (rows[:, 0] == 0).all() and (rows[:, 1] == 1).all() and abs(rows[:, 2].mean() - 0.5) < 0.02
    assert tidal.ones(3).bernoulli().dtype is tidal.float32
    assert tidal.ones(3, dtype=tidal.bool).bernoulli(0.5).dtype is tidal.bool
    assert tidal.bernoulli(tidal.ones(3, dtype=tidal.float16)).dtype is tidal.float16
    assert tidal.zeros(3, dtype=tidal.uint8).bernoulli_(tidal.full((3,), 0.5)).dtype is tidal.uint8


@pytest.mark.parametrize("dtype", ["int32", "int64", "float32", "float64"])
def test_geometric(dtype):
    v = _np(tidal.empty(N, dtype=getattr(tidal, dtype)).geometric_(0.25)).astype(np.float64)
    assert v.min() == 1 and (v == np.round(v)).all()
    assert abs(v.mean() - 4) < 0.05 and abs(v.var() - 12) < 0.5


def test_multinomial_with_replacement_frequencies():
    weights = tidal.tensor([1.0, 0.0, 6.0, 3.0])  # unnormalised
    v = _np(tidal.multinomial(weights, N, replacement=True))
    freq = np.bincount(v, minlength=4) / N
    assert freq[1] == 0
    np.testing.assert_allclose(freq, [0.1, 0, 0.6, 0.3], atol=0.01)
    two = _np(tidal.multinomial(tidal.tensor([[0.0, 1.0], [1.0, 0.0]]), 50, True))
    assert (two[0] == 1).all() and (two[1] == 0).all()


def test_multinomial_without_replacement():
    w = tidal.tensor([[1.0, 2.0, 3.0, 4.0, 0.0, 5.0]] * 500, dtype=tidal.float64)
    picks = _np(tidal.multinomial(w, 5))
    assert picks.shape == (500, 5) and picks.dtype == np.int64
    for row in picks:
        assert sorted(row.tolist()) == [0, 1, 2, 3, 5]  # distinct, never the zero-weight category
    firsts = np.bincount(picks[:, 0], minlength=6) / 500
    np.testing.assert_allclose(firsts, [1 / 15, 2 / 15, 3 / 15, 4 / 15, 0, 5 / 15], atol=0.07)
    everything = _np(tidal.multinomial(tidal.ones(7), 7))
    assert sorted(everything.tolist()) == list(range(7))
    assert tidal.multinomial(tidal.tensor([1.0, 0, 0]), 3).tolist() == [0, 1, 2]
    assert tidal.multinomial(tidal.ones(0, 3), 1).shape == (0, 1)
    assert tidal.ones(3).multinomial(2).shape == (2,)
    assert tidal.multinomial(tidal.ones(3, dtype=tidal.float16), 2).dtype is tidal.int64


# -- reproducibility and generator state -------------------------------------------------------------------------
def _draws(generator=None):
    kw = {} if generator is None else {"generator": generator}
    x = tidal.empty(6)
    return [tidal.rand(5, **kw).tolist(), tidal.randn(2, 3, **kw).tolist(), tidal.randint(0, 100, (5,), **kw).tolist(),
            tidal.randperm(8, **kw).tolist(), x.uniform_(**kw).tolist(), x.exponential_(**kw).tolist(),
            tidal.multinomial(tidal.ones(9), 4, **kw).tolist(), tidal.bernoulli(tidal.full((6,), 0.5), **kw).tolist(),
            tidal.normal(tidal.zeros(4), 1.0, **kw).tolist(), tidal.poisson(tidal.ones(5) * 3, **kw).tolist()]


def test_same_seed_same_numbers_different_seeds_differ():
    tidal.manual_seed(7)
    a = _draws()
    tidal.manual_seed(7)
    assert _draws() == a
    tidal.manual_seed(8)
    b = _draws()
    assert all(x != y for x, y in zip(a[:3], b[:3]))
    assert _draws() != b  # the stream moves on


def test_results_do_not_depend_on_mode_or_timing():
    old = tidal.vm.get_mode()
    results = []
    try:
        for mode in ("sync", "async", "async"):
            tidal.vm.set_mode(mode)
            tidal.manual_seed(99)
            first = tidal.rand(1000)
            if len(results) == 2:  # a sync point between ops must not change anything
                tidal.sync()
            results.append([first.tolist()] + _draws())
    finally:
        tidal.vm.set_mode(old)
    assert results[0] == results[1] == results[2]


def test_generator_objects():
    g1, g2 = tidal.Generator(), tidal.Generator()
    assert g1.initial_seed() == torch.Generator().initial_seed() == 67280421310721
    assert g1.device == tidal.device("cpu") and tidal.Generator("cpu").device == tidal.device("cpu")
    assert g1.manual_seed(3) is g1
    g2.manual_seed(3)
    tidal.manual_seed(0)
    before = tidal.get_rng_state()
    assert _draws(g1) == _draws(g2)
    assert tidal.get_rng_state().tolist() == before.tolist()  # the default generator did not move
    g1.manual_seed(4)
    assert _draws(g1) != _draws(g2)
    assert g1.manual_seed(-1).initial_seed() == 2 ** 64 - 1 == torch.Generator().manual_seed(-1).initial_seed()
    s = g1.seed()
    assert isinstance(s, int) and g1.initial_seed() == s


def test_state_round_trip():
    for gen in (None, tidal.Generator().manual_seed(5)):
        kw = {} if gen is None else {"generator": gen}
        get = tidal.get_rng_state if gen is None else gen.get_state
        put = tidal.set_rng_state if gen is None else gen.set_state
        tidal.rand(3, **kw)
        state = get()
        assert state.dtype is tidal.uint8 and state.dim() == 1
        a = tidal.randn(10, **kw).tolist()
        tidal.randn(10, **kw)
        put(state)
        assert tidal.randn(10, **kw).tolist() == a
        assert get().tolist() != state.tolist()


def test_module_seed_functions():
    assert tidal.manual_seed(5) is tidal.default_generator
    assert tidal.initial_seed() == 5 and tidal.manual_seed(1.5).initial_seed() == 1
    assert tidal.manual_seed(True).initial_seed() == 1
    s = tidal.seed()
    assert tidal.initial_seed() == s and 0 <= s < 2 ** 64


def test_inplace_sampling_of_views_and_versions():
    base = np.zeros((4, 6), np.float32)
    view = tidal.from_numpy(base[:, ::2])
    version = view._version
    view.uniform_(1, 2)
    tidal.sync()
    assert (base[:, ::2] >= 1).all() and (base[:, 1::2] == 0).all()
    assert view._version == version + 1
    fresh = tidal.rand(3)
    assert fresh._version == 0 and not fresh.requires_grad and tidal.rand(3, requires_grad=True).requires_grad


def test_default_dtype_and_like_forms():
    old = tidal.get_default_dtype()
    tidal.set_default_dtype(tidal.float64)
    try:
        assert tidal.rand(2).dtype is tidal.float64 and tidal.randn(2).dtype is tidal.float64
        assert tidal.normal(0, 1, (2,)).dtype is tidal.float64
    finally:
        tidal.set_default_dtype(old)
    x = tidal.zeros(2, 3, dtype=tidal.float16)
    assert tidal.rand_like(x).dtype is tidal.float16 and tidal.randn_like(x).shape == (2, 3)
    assert tidal.rand_like(x, dtype=tidal.float64).dtype is tidal.float64
    assert tidal.randint_like(x, 5).dtype is tidal.float16
    assert tidal.randint_like(x, 5, dtype=tidal.int32).dtype is tidal.int32
    v = _np(tidal.randint_like(tidal.zeros(N, dtype=tidal.int64), 3, 6))
    assert v.min() == 3 and v.max() == 5
    assert set(_np(tidal.randint_like(tidal.zeros(1000), high=2)).tolist()) == {0, 1}
    assert tidal.rand_like(tidal.ones(2), requires_grad=True).requires_grad


# -- errors -------------------------------------------------------------------------------------------------------
ERRORS = [
    lambda lib: lib.rand(2, dtype=lib.int64), lambda lib: lib.rand(2, dtype=lib.bool),
    lambda lib: lib.randn(2, dtype=lib.int64), lambda lib: lib.rand(-1), lambda lib: lib.rand(2.5),
    lambda lib: lib.rand(2, 2.5), lambda lib: lib.rand(2, dtype=lib.int64, requires_grad=True),
    lambda lib: lib.randint(5, 3), lambda lib: lib.randint(5, size=3), lambda lib: lib.randint(5, 5, (3,)),
    lambda lib: lib.randint(6, 5, (3,)), lambda lib: lib.randint(0, 300, (3,), dtype=lib.uint8),
    lambda lib: lib.randint(-1, 3, (3,), dtype=lib.uint8), lambda lib: lib.randint(0, 3, (3,), dtype=lib.bool),
    lambda lib: lib.randint(3, size=(3,), requires_grad=True), lambda lib: lib.randint(3, (-1,)),
    lambda lib: lib.randperm(-1), lambda lib: lib.randperm(5, dtype=lib.bool),
    lambda lib: lib.randperm(300, dtype=lib.uint8), lambda lib: lib.randperm(3000, dtype=lib.float16),
    lambda lib: lib.randperm(5, requires_grad=True), lambda lib: lib.randperm(2.5),
    lambda lib: lib.normal(0, -1, (2, 3)), lambda lib: lib.normal(0, 1, (2,), dtype=lib.int64),
    lambda lib: lib.normal(lib.zeros(3), -1.), lambda lib: lib.normal(lib.zeros(2, 3), lib.ones(5)),
    lambda lib: lib.normal(lib.zeros(3, dtype=lib.int64), 1.),
    lambda lib: lib.bernoulli(lib.full((3,), 0.5), p=1.7), lambda lib: lib.bernoulli(lib.ones(3, dtype=lib.int64)),
    lambda lib: lib.zeros(3).bernoulli_(1.0000001), lambda lib: lib.zeros(3).bernoulli_(lib.tensor([0.1, 0.2])),
    lambda lib: lib.zeros(3).bernoulli_(lib.tensor([1, 0, 1])),
    lambda lib: lib.multinomial(lib.ones(3), 4), lambda lib: lib.multinomial(lib.ones(3), 0),
    lambda lib: lib.multinomial(lib.ones(2, 3, 4), 2), lambda lib: lib.multinomial(lib.ones(()), 1),
    lambda lib: lib.multinomial(lib.ones(3, dtype=lib.int64), 1), lambda lib: lib.multinomial(lib.ones(0), 1),
    lambda lib: lib.multinomial(lib.ones(3), 2.0), lambda lib: lib.poisson(lib.ones(3, dtype=lib.int64)),
    lambda lib: lib.zeros(3).uniform_(1, 0), lambda lib: lib.zeros(3, dtype=lib.int64).uniform_(),
    lambda lib: lib.zeros(3).uniform_(float("-inf"), 0), lambda lib: lib.zeros(3, dtype=lib.float16).uniform_(0, 1e6),
    lambda lib: lib.zeros(3).uniform_(-3e38, 3e38), lambda lib: lib.zeros(3).normal_(0, -1e-10),
    lambda lib: lib.zeros(3).normal_(0, -123456789), lambda lib: lib.zeros(3, dtype=lib.int64).normal_(),
    lambda lib: lib.zeros(3).exponential_(0), lambda lib: lib.zeros(3, dtype=lib.int64).exponential_(),
    lambda lib: lib.zeros(3).geometric_(1), lambda lib: lib.zeros(3, dtype=lib.bool).geometric_(0.5),
    lambda lib: lib.zeros(3).log_normal_(1, 0), lambda lib: lib.zeros(3, dtype=lib.int64).log_normal_(),
    lambda lib: lib.zeros(3).cauchy_(0, -1), lambda lib: lib.zeros(3, dtype=lib.int64).cauchy_(),
    lambda lib: lib.zeros(3).random_(5, 5), lambda lib: lib.zeros(3).random_(-5),
    lambda lib: lib.zeros(3, dtype=lib.uint8).random_(300), lambda lib: lib.zeros(3, dtype=lib.bool).random_(3),
    lambda lib: lib.zeros(3, dtype=lib.float16).random_(2 ** 20), lambda lib: lib.zeros(3).random_(0, 2 ** 70),
    lambda lib: lib.zeros(3, dtype=lib.int32).random_(2 ** 31 + 1),
    lambda lib: lib.zeros(3, dtype=lib.int8).random_(-3, 200),
    lambda lib: lib.rand_like(lib.zeros(2, dtype=lib.int64)), lambda lib: lib.randn_like(lib.zeros(2, dtype=lib.int64)),
    lambda lib: lib.randint_like(lib.zeros(2), 5, 3), lambda lib: lib.randint_like(lib.zeros(2, dtype=lib.uint8), 300),
    lambda lib: lib.Generator().manual_seed(1.5), lambda lib: lib.Generator().manual_seed(2 ** 64),
    lambda lib: lib.Generator().manual_seed(True),
]


@pytest.mark.parametrize("case", range(len(ERRORS)))
def test_errors_match_torch(case):
    assert_raises_like(ERRORS[case])


LOOSE_ERRORS = [
    (lambda lib: lib.normal(0., 1.), r"normal\(\) received an invalid combination of arguments"),
    (lambda lib: lib.zeros(3).bernoulli_(lib.tensor([[0.1, 0.2, 0.3]])), r"must be greater or equal to the number"),
    (lambda lib: lib.rand(2, generator=1), r"generator"),
    (lambda lib: lib.Generator().set_state(lib.zeros(3)), r"RNG state must be a"),
    (lambda lib: lib.Generator().set_state([1]), r"expected a .*ByteTensor, but got list"),
    (lambda lib: lib.Generator().set_state(lib.zeros(3, dtype=lib.uint8)), r"RNG state size to be 3"),
    (lambda lib: lib.randint(0.5, 3, (3,)), r"randint\(\)"),
]


@pytest.mark.parametrize("case", range(len(LOOSE_ERRORS)))
def test_errors_like_torch(case):
    assert_raises_like(*LOOSE_ERRORS[case])


def test_generator_device_mismatch():
    with pytest.raises(RuntimeError, match="Expected a 'cpu' device type for generator but found 'cuda'"):
        tidal.rand(3, generator=tidal.Generator("cuda"))


DATA_ERRORS = [
    (lambda: tidal.bernoulli(tidal.tensor([0.5, 1.5])), "Expected p_in >= 0 && p_in <= 1"),
    (lambda: tidal.zeros(2).bernoulli_(tidal.tensor([-0.5, 0.5])), "Expected p_in >= 0 && p_in <= 1"),
    (lambda: tidal.normal(tidal.zeros(3), -tidal.ones(3)), "normal expects all elements of std >= 0.0"),
    (lambda: tidal.normal(1., tidal.tensor([1.0, -1.0])), "normal expects all elements of std >= 0.0"),
    (lambda: tidal.multinomial(tidal.tensor([1., -1., 1.]), 1), "probability tensor contains either `inf`, `nan`"),
    (lambda: tidal.multinomial(tidal.tensor([1., float("nan")]), 1), "probability tensor contains either"),
    (lambda: tidal.multinomial(tidal.tensor([[1., 1.], [0., 0.]]), 1), r"sum of probabilities <= 0"),
    (lambda: tidal.poisson(tidal.tensor([1.0, -1.0])), "invalid Poisson rate, expected rate to be non-negative"),
    (lambda: tidal.poisson(tidal.tensor([float("nan")])), "invalid Poisson rate"),
]


@pytest.mark.parametrize("case", range(len(DATA_ERRORS)))
def test_data_errors_surface_at_sync_and_vm_recovers(case):
    make, message = DATA_ERRORS[case]
    with pytest.raises(RuntimeError, match=re.escape(message) if "(" not in message else message):
        make().tolist()
    assert tidal.ones(2).tolist() == [1.0, 1.0]  # the VM keeps working


def test_out_argument():
    buf = tidal.zeros(N, dtype=tidal.float64)
    assert tidal.rand(N, out=buf) is buf and 0.49 < _np(buf).mean() < 0.51
    ints = tidal.zeros(100, dtype=tidal.int32)
    assert tidal.randint(5, (100,), out=ints) is ints and set(ints.tolist()) <= set(range(5))
    assert tidal.randperm(100, out=ints) is ints and sorted(ints.tolist()) == list(range(100))
    assert tidal.normal(tidal.zeros(3), 1.0, out=tidal.zeros(3)).shape == (3,)
    assert_raises_like(lambda lib: lib.rand(3, out=lib.empty(3, dtype=lib.float64), dtype=lib.float32))

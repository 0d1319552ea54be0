"""tidal's CPU random streams are torch's: seeded alike, every random op gives torch's values bit for bit
(ops/random/mt19937.py, ops/random/transforms.py, ops/random/plans.py), and the generator state is torch's bytes."""
import numpy as np
import pytest
import torch

import tidal
import tidal.nn as tnn
import tidal.nn.functional as TF
from tidal.ops.random.plans import MKL_BERNOULLI

SEEDS = [0, 1, 12345, 2 ** 40 + 3]
SIZES = [0, 1, 15, 16, 17, 1000]
FLOATS = ["float32", "float64", "float16", "bfloat16"]


def _torch(x) -> torch.Tensor:
    """A tidal tensor as a torch one (bfloat16 through float32, exactly)."""
    if x.dtype is tidal.bfloat16:
        return torch.from_numpy(np.ascontiguousarray(x.float().numpy())).to(torch.bfloat16)
    return torch.from_numpy(np.ascontiguousarray(x.numpy()))


def _same(ours, theirs) -> None:
    got = _torch(ours)
    assert got.dtype == theirs.dtype and got.shape == theirs.shape
    assert torch.equal(got, theirs) or (got.isnan() == theirs.isnan()).all() and torch.equal(
        got[~got.isnan()], theirs[~theirs.isnan()]), (got.flatten()[:6], theirs.flatten()[:6])


def _both(seed: int, fn) -> None:
    """fn(module) under manual_seed(seed) in each library: equal results."""
    torch.manual_seed(seed)
    theirs = fn(torch)
    tidal.manual_seed(seed)
    ours = fn(tidal)
    for a, b in zip(ours if isinstance(ours, tuple) else (ours,), theirs if isinstance(theirs, tuple) else (theirs,)):
        _same(a, b)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("dtype", FLOATS)
def test_rand_and_randn(seed, dtype):
    for n in SIZES:
        _both(seed, lambda m: (m.rand(n, dtype=getattr(m, dtype)), m.randn(n, dtype=getattr(m, dtype)),
                               m.randn(3, n, dtype=getattr(m, dtype))))


@pytest.mark.parametrize("dtype", FLOATS)
def test_uniform_and_normal_parameters(dtype):
    def draws(m):
        d = getattr(m, dtype)
        return (m.empty(1000, dtype=d).uniform_(-0.37, 0.37), m.empty(333, dtype=d).uniform_(2.5, 7.25),
                m.empty(1000, dtype=d).normal_(0.3, 2.5), m.empty(7, dtype=d).normal_(-1.5, 0.25),
                m.normal(2.0, 3.0, (40,), dtype=d))
    for seed in SEEDS[:3]:
        _both(seed, draws)


@pytest.mark.parametrize("seed", SEEDS[:2])
def test_non_contiguous_outputs_draw_in_memory_order(seed):
    def draws(m):
        a = m.empty(40, 30).t().uniform_()
        b = m.empty(40, 30).t().normal_()  # not contiguous: the serial kernel, with its cached normal
        c = m.zeros(20, 30)[:, ::2].normal_(1.0, 2.0)
        d = m.zeros(6, 5, dtype=m.int64).t().random_(0, 1000)
        e = m.zeros(50, 40).t().bernoulli_(m.rand(40, 1))
        f = m.empty(4, 3, 5).permute(2, 0, 1).exponential_()
        g = m.randn(5, 4, out=m.empty(4, 5).t())  # (torch samples into out= itself, in its memory order)
        h = m.rand(6, 4, out=m.zeros(6, 8)[:, ::2])
        return a, b, c, d, e, f, g, h, m.randn(5)
    _both(seed, draws)


@pytest.mark.parametrize("seed", SEEDS)
def test_integers(seed):
    def draws(m):
        out = [m.randint(-5, 100, (n,)) for n in SIZES]
        out += [m.randint(10, (3, 4), dtype=getattr(m, name))
                for name in ("int8", "uint8", "int16", "int32", "float32")]
        out += [m.randint(-2 ** 40, 2 ** 40, (50,)), m.randint(0, 2 ** 33, (7,), dtype=m.float64)]
        out += [m.randint(0, span, (5,), dtype=d) for span in (2 ** 28 - 1, 2 ** 28) for d in (m.int32, m.int64)]
        out += [m.empty(100, dtype=getattr(m, name)).random_() for name in
                ("int64", "int32", "int16", "int8", "uint8", "bool", "float32", "float64", "float16", "bfloat16")]
        out += [m.empty(60, dtype=m.int64).random_(-2 ** 63, None), m.empty(9, dtype=m.int32).random_(-7, None)]
        return tuple(out)
    _both(seed, draws)


@pytest.mark.parametrize("n", [0, 1, 2, 17, 1000, 5000])
def test_randperm(n):
    for seed in SEEDS[:3]:
        _both(seed, lambda m: (m.randperm(n), m.randperm(n, dtype=m.float32), m.rand(3)))


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_continuous_distributions(dtype):
    def draws(m):
        d = getattr(m, dtype)
        return (m.empty(500, dtype=d).exponential_(1.5), m.empty(300, dtype=d).cauchy_(0.5, 2.0),
                m.empty(200, dtype=d).log_normal_(0.5, 0.7), m.empty(3, dtype=d).log_normal_(),
                m.empty(400, dtype=d).geometric_(0.3), m.empty(17, dtype=m.int64).geometric_(0.05))
    for seed in SEEDS[:3]:
        _both(seed, draws)


def test_bernoulli_with_tensor_p():
    def draws(m):
        p = m.linspace(0, 1, 1000)
        return (m.bernoulli(p), m.bernoulli(p.double()), m.empty(8, 125).bernoulli_(m.rand(125)),
                m.empty(5, 3, dtype=m.int64).bernoulli_(m.rand(5, 1).double()), m.randn(20))
    for seed in SEEDS:
        _both(seed, draws)


def test_bernoulli_with_a_number_p_and_dropout():
    """Without MKL's Intel path (here: torch's serial kernel) the values are torch's; with it, torch seeds MKL's
    stream with one word: tidal takes that word too, so the next draw is torch's either way."""
    def draws(m):
        x = m.randn(32, 64)
        dropped = m.nn.functional.dropout(x, 0.3) if m is torch else TF.dropout(x, 0.3)
        mask = m.empty(17, 3).bernoulli_(0.25)
        after = m.randn(40)
        return (after, dropped, mask) if not MKL_BERNOULLI else (after,)
    for seed in SEEDS:
        _both(seed, draws)


def test_multinomial_fast_path():
    def draws(m):
        probs = m.tensor([[0.1, 0.2, 0.7, 0.0, 0.5], [1.0, 1.0, 1.0, 1.0, 1.0]])
        return (m.multinomial(probs, 3), m.multinomial(probs, 1), m.multinomial(probs, 1, replacement=True),
                m.multinomial(m.rand(50).double(), 10), m.multinomial(m.rand(5, 8).t(), 3), m.rand(4))
    for seed in SEEDS:
        _both(seed, draws)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_multinomial_with_replacement(dtype):
    def draws(m):
        probs = m.rand(3, 7, dtype=getattr(m, dtype))
        return (m.multinomial(probs, 50, replacement=True), m.multinomial(probs[0], 20, replacement=True),
                m.multinomial(m.tensor([0.0, 1.0, 0.0, 3.0]), 9, replacement=True), m.rand(3))
    for seed in SEEDS[:3]:
        _both(seed, draws)


def test_data_loader_orders_as_torch():
    from torch.utils.data import DataLoader, SubsetRandomSampler, TensorDataset, WeightedRandomSampler
    from tidal.utils import data as tdata
    for seed in SEEDS[:2]:
        torch.manual_seed(seed)
        tidal.manual_seed(seed)
        for _ in range(2):  # two epochs: each draws a new base seed and a new permutation
            theirs = [b[0].tolist() for b in DataLoader(TensorDataset(torch.arange(100)), batch_size=16, shuffle=True)]
            ours = [b[0].tolist() for b in tdata.DataLoader(tdata.TensorDataset(tidal.arange(100)), batch_size=16,
                                                             shuffle=True)]
            assert ours == theirs
        weights = [0.1, 0.5, 2.0, 1.0]
        assert list(tdata.WeightedRandomSampler(weights, 20)) == list(WeightedRandomSampler(weights, 20))
        assert list(tdata.SubsetRandomSampler(list(range(10, 30)))) == list(SubsetRandomSampler(list(range(10, 30))))
        _same(tidal.randn(4), torch.randn(4))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_poisson_and_gamma(dtype):
    from tidal.distributions._sampling import standard_gamma

    def draws(m):
        rates = m.tensor([0.0, 0.5, 3.0, 9.99, 10.0, 20.0, 100.0, 1e4], dtype=getattr(m, dtype))
        alpha = m.tensor([0.05, 0.5, 1.0, 3.0, 20.0, 1e-3], dtype=getattr(m, dtype))
        gamma = m._standard_gamma(alpha) if m is torch else standard_gamma(alpha)
        return m.poisson(rates), gamma, m.poisson(rates.view(2, 4).t()), m.randn(3), m.rand(2)
    for seed in SEEDS[:3]:
        _both(seed, draws)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_binomial(dtype):
    from tidal.distributions._sampling import binomial

    def draws(m):
        d = getattr(m, dtype)
        count = m.tensor([0., 1., 5., 10., 20., 50., 100., 1000., 30., 7., 200., 13.], dtype=d)
        prob = m.tensor([0.3, 0.5, 0.9, 0.05, 0.5, 0.2, 0.95, 0.01, 0.7, 1.0, 0.45, 0.0], dtype=d)
        return (m.binomial(count, prob) if m is torch else binomial(count, prob)), m.rand(3)
    for seed in range(4):
        _both(seed, draws)


def test_gamma_and_poisson_distributions():
    import tidal.distributions as tdist

    def draws(m):
        dist = torch.distributions if m is torch else tdist
        return (dist.Gamma(m.tensor([2.0, 0.3]), m.tensor([1.5, 2.0])).sample((4,)),
                dist.Poisson(m.tensor([2.0, 30.0])).sample((4,)), dist.Chi2(m.tensor([3.0])).sample((2,)),
                dist.Binomial(m.tensor([10.0, 200.0]), m.tensor([0.3, 0.6])).sample((5,)), m.rand(3))
    for seed in SEEDS[:2]:
        _both(seed, draws)


def test_normal_with_tensor_parameters():
    def draws(m):
        mean, std = m.arange(20.0), m.arange(20.0) / 7
        return (m.normal(mean, 2.0), m.normal(mean, std), m.normal(0.5, std), m.normal(mean[:5], 1.5),
                m.normal(mean.view(4, 5), std[:5]))
    for seed in SEEDS[:3]:
        _both(seed, draws)


def test_complex_random():
    def draws(m):
        return (m.rand(20, dtype=m.complex64), m.randn(20, dtype=m.complex64), m.randn(3, dtype=m.complex128),
                m.empty(9, dtype=m.complex64).normal_(1.0, 2.0), m.empty(5, dtype=m.complex128).uniform_(-1, 2))
    for seed in SEEDS[:3]:
        _both(seed, draws)


def test_interleaved_ops_stay_on_torchs_stream():
    def draws(m):
        out = []
        for n in (5, 17, 3, 1000, 1):
            out += [m.rand(n), m.randn(n), m.randint(0, 9, (n,)), m.randperm(n), m.randn(n, dtype=m.float64),
                    m.empty(n).exponential_(), m.empty(n).log_normal_()]
        return tuple(out)
    for seed in SEEDS:
        _both(seed, draws)


def test_generators_are_independent_and_seeded_alike():
    g, h = torch.Generator().manual_seed(5), tidal.Generator().manual_seed(5)
    torch.manual_seed(9)
    tidal.manual_seed(9)
    _same(tidal.rand(7, generator=h), torch.rand(7, generator=g))
    _same(tidal.randn(3), torch.randn(3))
    _same(tidal.randperm(30, generator=h), torch.randperm(30, generator=g))
    _same(tidal.randn(3, generator=h), torch.randn(3, generator=g))
    assert h.initial_seed() == g.initial_seed() == 5
    big = 2 ** 64 - 3
    assert tidal.Generator().manual_seed(big).initial_seed() == torch.Generator().manual_seed(big).initial_seed()
    _same(tidal.rand(4, generator=tidal.Generator().manual_seed(-7)),
          torch.rand(4, generator=torch.Generator().manual_seed(-7)))


def test_state_bytes_round_trip_with_torch():
    g, h = torch.Generator().manual_seed(11), tidal.Generator().manual_seed(11)
    assert np.array_equal(h.get_state().numpy(), g.get_state().numpy())
    for draw in (lambda m, gen: m.rand(700, generator=gen), lambda m, gen: m.randn(3, generator=gen),
                 lambda m, gen: m.randn(40, generator=gen)):
        _same(draw(tidal, h), draw(torch, g))
        state = g.get_state()
        assert state.numel() == 5056
        assert np.array_equal(h.get_state().numpy(), state.numpy())  # incl. the cached normal after randn(3)
    saved = g.get_state()
    restored = tidal.Generator()
    restored.set_state(tidal.tensor(saved.numpy()))
    _same(tidal.randn(9, generator=restored), torch.randn(9, generator=g))
    mine = restored.get_state()
    g.set_state(torch.from_numpy(mine.numpy()))  # and back: tidal's bytes restore torch's generator
    _same(tidal.rand(5, generator=restored), torch.rand(5, generator=g))
    tidal.set_rng_state(tidal.tensor(torch.get_rng_state().numpy()))
    _same(tidal.randn(6), torch.randn(6))


def test_state_refusals_as_torch():
    gen = tidal.Generator()
    with pytest.raises(RuntimeError, match="Expected a CPUGeneratorImplState of size 5056 but found the input RNG "
                                           "state size to be 16"):
        gen.set_state(tidal.zeros(16, dtype=tidal.uint8))
    with pytest.raises(RuntimeError, match="Invalid mt19937 state"):
        gen.set_state(tidal.zeros(5056, dtype=tidal.uint8))
    with pytest.raises(RuntimeError, match="Invalid mt19937 state"):
        torch.Generator().set_state(torch.zeros(5056, dtype=torch.uint8))
    with pytest.raises(RuntimeError, match="CPU Generator does not use offset"):
        gen.get_offset()


def test_seed_reseeds_with_the_returned_value():
    value = tidal.seed()
    assert tidal.initial_seed() == value
    torch.manual_seed(value)
    _same(tidal.rand(5), torch.rand(5))


@pytest.mark.parametrize("seed", [0, 7])
def test_modules_initialise_as_torch(seed):
    def build(m):
        nn = m.nn if m is torch else tnn
        lin, conv = nn.Linear(64, 32), nn.Conv2d(3, 8, 3)
        emb, lstm = nn.Embedding(10, 4), nn.LSTM(4, 6)
        return (lin.weight.detach(), lin.bias.detach(), conv.weight.detach(), conv.bias.detach(),
                emb.weight.detach()) + tuple(p.detach() for p in lstm.parameters()) + (m.randn(4, 64),)
    _both(seed, build)


def test_compiled_engine_gives_numpys_words():
    """ops/random/mt19937_kernels.py (used for long draws once numba has compiled it) continues NumPy's MT19937
    exactly."""
    pytest.importorskip("numba")
    from tidal.ops.random import mt19937_kernels
    bits = np.random.MT19937(0)
    bits._legacy_seeding(5)
    bits.random_raw(100)  # mid-block
    state = bits.state["state"]
    key, out = np.array(state["key"], np.uint32), np.empty(5000, np.uint32)
    pos = mt19937_kernels.fill(key, int(state["pos"]), out)
    assert np.array_equal(out, bits.random_raw(5000).astype(np.uint32))
    assert pos == bits.state["state"]["pos"] and np.array_equal(key, bits.state["state"]["key"])


def test_init_functions_draw_as_torch():
    def draws(m):
        init = m.nn.init if m is torch else tnn.init
        return (init.trunc_normal_(m.empty(100, 30), std=0.02), init.trunc_normal_(m.empty(50, 30), 1.0, 1.0, 2.0, 4.0),
                init.sparse_(m.empty(20, 30), 0.3), m.randn(5))
    for seed in SEEDS[:2]:
        _both(seed, draws)
    torch.manual_seed(3)
    tidal.manual_seed(3)
    torch.nn.init.orthogonal_(torch.empty(20, 30))
    tnn.init.orthogonal_(tidal.empty(20, 30))
    _same(tidal.rand(4), torch.rand(4))  # (its values are a QR's, equal to rounding; its draws are torch's)


def test_compiled_transforms_give_the_numpy_paths_bits(monkeypatch):
    """ops/random/kernels.py (used once numba has compiled it) and random_transforms.py's NumPy code agree to the
    bit."""
    pytest.importorskip("numba")
    from tidal.ops.random import kernels as random_kernels
    from tidal.ops.random import transforms as rt
    words = np.random.default_rng(0).integers(0, 2 ** 32, 40000, dtype=np.uint32)

    def run():
        f32, f64 = np.dtype(np.float32), np.dtype(np.float64)
        return (rt.normal_fill(words[:rt.normal_fill_words(f32, 9999)], f32, 9999, 0.5, 2.0),
                rt.normal_fill(words[:rt.normal_fill_words(f64, 3001)], f64, 3001, -1.0, 0.3),
                rt.normal_fill(words[:rt.normal_fill_words(np.dtype(np.float16), 999)], np.dtype(np.float16), 999,
                               0, 1),
                rt.normal_scalar(words[:4000], 1999, 0.25, 0.1, 3.0)[0], rt.exponential(words[:4000], 2.5),
                rt.cauchy(words[:4000], 1.0, 0.5), rt.log_normal(rt.normal_scalar(words[:400], 200, None, 0, 1)[0]),
                rt.geometric(words[:4000], 0.2), rt.randperm(words[:2999], 3000),
                rt.uniform(words, f32, -0.37, 0.37), rt.uniform(words[:999], np.dtype(np.float16), 2.5, 7.25),
                rt.bernoulli_scalar(words, 0.3), rt.bernoulli_scalar(words, 1 - 2.0 ** -40))
    monkeypatch.setattr(rt, "_compiled", lambda n: random_kernels)
    compiled = run()
    monkeypatch.setattr(rt, "_compiled", lambda n: None)
    for ours, numpy_path in zip(compiled, run()):
        assert ours.dtype == numpy_path.dtype and np.array_equal(ours, numpy_path, equal_nan=True)


def test_rrelu_noise_draws_as_torch():
    """ops.random.rrelu_noise: one double uniform per element <= 0, row-major, as ATen's rrelu_with_noise."""
    from tidal.ops.random.sampling import rrelu_noise
    base = np.linspace(-3, 3, 60).reshape(6, 10)
    base[0, :3] = 0
    base[1, 1] = np.nan
    for dtype in ("float32", "float64"):
        torch.manual_seed(4)
        tidal.manual_seed(4)
        theirs = torch.ops.aten.rrelu_with_noise(torch.tensor(base, dtype=getattr(torch, dtype)).t(),
                                                 torch.empty(10, 6, dtype=getattr(torch, dtype)), 0.1, 0.4, True)
        x = tidal.tensor(base, dtype=getattr(tidal, dtype)).t()
        _same(x * rrelu_noise(x, 0.1, 0.4), theirs)
        _same(tidal.rand(3), torch.rand(3))


def test_functional_rrelu_as_torch():
    def draws(m):
        x = m.linspace(-3, 3, 50).requires_grad_()
        y = (m.nn.functional if m is torch else TF).rrelu(x, 0.1, 0.4, training=True)
        y.sum().backward()
        return y.detach(), x.grad, m.rand(2)
    _both(0, draws)


def test_von_mises_samples_as_torch():
    import tidal.distributions as tdist

    def draws(m):
        dist = torch.distributions if m is torch else tdist
        return (dist.VonMises(m.tensor([0.0, 1.0, -2.0]), m.tensor([2.0, 0.1, 30.0])).sample((50,)), m.rand(2))
    for seed in SEEDS[:2]:
        _both(seed, draws)


def test_wishart_samples_as_torch():
    import warnings

    import tidal.distributions as tdist

    def draws(m):
        dist = torch.distributions if m is torch else tdist
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # (torch's correction loop always warns)
            return (dist.Wishart(m.tensor(6.0), m.eye(3) * 2).rsample((4,)),
                    dist.Wishart(m.tensor([5.0, 7.0]), scale_tril=m.eye(2)).rsample((3,)), m.rand(2))
    for seed in SEEDS[:2]:
        torch.manual_seed(seed)
        tidal.manual_seed(seed)
        theirs, ours = draws(torch), draws(tidal)
        for a, b in zip(ours[:2], theirs[:2]):  # (3x3 products: equal to float32 rounding)
            assert torch.allclose(_torch(a), b, rtol=1e-6, atol=1e-5)
        _same(ours[2], theirs[2])


_DEFAULT_KERNELS = """
import numpy as np, torch, tidal
from tidal.ops.random import transforms as random_transforms
assert torch.backends.cpu.get_cpu_capability() == "DEFAULT" and not random_transforms.FUSED
draws = [lambda m: m.empty(1000).uniform_(-0.37, 0.37), lambda m: m.empty(999, dtype=m.float64).uniform_(-0.37, 2.1),
         lambda m: m.empty(1000, dtype=m.float16).uniform_(-0.37, 0.37), lambda m: m.randn(1000),
         lambda m: m.empty(1000).normal_(0.3, 2.5), lambda m: m.empty(999, dtype=m.float64).normal_(0.3, 2.5),
         lambda m: m.randn(1000, dtype=m.float16), lambda m: m.empty(7, dtype=m.float64).normal_(0.3, 2.5),
         lambda m: m.empty(300, dtype=m.float64).cauchy_(0.5, 1.7), lambda m: m.rand(3)]
for seed in (0, 1, 2):
    torch.manual_seed(seed)
    tidal.manual_seed(seed)
    for draw in draws:
        assert np.array_equal(draw(torch).numpy(), draw(tidal).numpy()), (seed, draw)
print("same")
"""


def test_default_cpu_kernels_as_torch():
    """ATEN_CPU_CAPABILITY=default (torch's portable kernels, as on a CPU without AVX2): no contraction, and the
    scalar float Box-Muller; tidal reads the same variable."""
    import os
    import subprocess
    import sys
    env = dict(os.environ, ATEN_CPU_CAPABILITY="default")
    done = subprocess.run([sys.executable, "-c", _DEFAULT_KERNELS], env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "same", done.stderr[-2000:]


def test_compiled_engine_and_numpy_engine_share_one_state(monkeypatch):
    """Long draws run on the compiled engine, short ones on NumPy's: the state moves between them exactly."""
    pytest.importorskip("numba")
    from tidal.ops.random import mt19937, mt19937_kernels
    monkeypatch.setattr(mt19937, "_compiled", lambda: mt19937_kernels)
    g, h = torch.Generator().manual_seed(21), tidal.Generator().manual_seed(21)
    for draw in (lambda m, gen: m.rand(5000, generator=gen), lambda m, gen: m.rand(3, generator=gen),
                 lambda m, gen: m.randn(6000, generator=gen), lambda m, gen: m.randn(5, generator=gen),
                 lambda m, gen: m.randperm(4097, generator=gen)):
        _same(draw(tidal, h), draw(torch, g))
        assert np.array_equal(h.get_state().numpy(), g.get_state().numpy())
    h.set_state(tidal.tensor(g.get_state().numpy()))
    _same(tidal.rand(5000, generator=h), torch.rand(5000, generator=g))
    _same(tidal.poisson(tidal.full((3000,), 4.0), generator=h), torch.poisson(torch.full((3000,), 4.0), generator=g))
    _same(tidal.rand(2, generator=h), torch.rand(2, generator=g))


def test_dirichlet_and_beta_samples_as_torch():
    import tidal.distributions as tdist

    def draws(m):
        dist = torch.distributions if m is torch else tdist
        conc = m.tensor([[2.0, 3.0, 0.5, 9.0], [0.1, 0.2, 0.3, 1.0]])
        return (dist.Dirichlet(conc).rsample((20,)), dist.Beta(m.tensor([0.5, 2.0]), m.tensor([3.0, 0.2])).sample((30,)),
                m.rand(2))
    for seed in SEEDS[:2]:
        _both(seed, draws)

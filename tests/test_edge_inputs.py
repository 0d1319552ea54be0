"""Edge inputs where tidal must give torch's answer or torch's error: circular padding with negative and
wrapping pads, pinv(hermitian=True), logcumsumexp's gradient at large values, prelu on 0-d inputs,
sum_to_size's dtype, the norms on empty or 1-D inputs, matrix norms over empty dims, antialiased
interpolation, and the autograd links of sampled tensors (normal, bernoulli, poisson).

Each case runs the same call in tidal and torch (float64 unless said) and compares values, gradients,
dtypes and shapes, or the error's type and message.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

import tidal

torch = pytest.importorskip("torch")


def both(fn, arrays=(), grad_weights: bool = True):
    """fn(lib, *leaves) in tidal and torch: (output, input grads) each, or (error type, message)."""
    results = []
    for lib in (tidal, torch):
        leaves = [lib.tensor(a, requires_grad=True) for a in arrays]
        try:
            out = fn(lib, *leaves)
        except Exception as exc:  # noqa: BLE001 - the error itself is compared
            results.append((type(exc), str(exc).replace("tidal.Size", "torch.Size")))
            continue
        grads = []
        if leaves and grad_weights and out.requires_grad and out.numel():
            weights = np.cos(np.arange(out.numel())).reshape(tuple(out.shape))
            out.backward(lib.tensor(weights, dtype=out.dtype))
            grads = [None if leaf.grad is None else leaf.grad.numpy() for leaf in leaves]
        results.append((out, grads))
    return results


def check(fn, arrays=(), rtol: float = 1e-10, atol: float = 1e-12) -> None:
    ours, theirs = both(fn, arrays)
    if isinstance(theirs[0], type):
        assert ours[0] is theirs[0] and ours[1] == theirs[1], (ours, theirs)
        return
    assert not isinstance(ours[0], type), ours
    out, grads = ours
    tout, tgrads = theirs
    assert tuple(out.shape) == tuple(tout.shape) and str(out.dtype).split(".")[-1] == str(tout.dtype).split(".")[-1]
    np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy(), rtol=rtol, atol=atol)
    assert len(grads) == len(tgrads)
    for g, tg in zip(grads, tgrads):
        assert (g is None) == (tg is None)
        if tg is not None:
            np.testing.assert_allclose(g, tg, rtol=rtol, atol=atol)


@pytest.fixture
def rng():
    return np.random.default_rng(11)


# -- F.pad(mode="circular") ---------------------------------------------------------------------
@pytest.mark.parametrize("shape,pad", [
    ((1, 3, 4, 4), (-1, 1, -2, 1)), ((1, 3, 3), (1, 2)), ((0, 3, 3, 3), (0, 2, 0, 1)), ((3, 3, 5, 5), (0, 2, 0, 1)),
    ((1, 3, 3, 3, 3), (1, 1, 1, 1, 1, 1)), ((2, 5), (-1, 2)), ((2, 5), (5, 0)), ((2, 5), (-2, -1)), ((2, 5), (3, -2)),
    ((1, 1, 3, 4), (4, 4, 3, 3)), ((1, 1, 3, 4), (-2, 2, 0, -1)), ((2, 5), (-3, -2)), ((1, 2, 5, 4), (2, -2, -4, 1)),
], ids=str)
def test_pad_circular(rng, shape, pad):
    check(lambda m, x: m.nn.functional.pad(x, pad, mode="circular"), [rng.normal(size=shape)])


def test_pad_circular_every_pair_of_pads(rng):
    """Every (left, right) on a dim of 5 whose result torch defines: crop first, then wrap what is left."""
    a = rng.normal(size=(2, 5))
    for left in range(-5, 6):
        for right in range(-5, 6):
            if 5 + left + right >= 0 and max(left, right) <= 5 - max(-left, 0) - max(-right, 0):
                check(lambda m, x: m.nn.functional.pad(x, (left, right), mode="circular"), [a])


@pytest.mark.parametrize("pad", [(6, 0), (-6, -1), (-3, 3), (4, -4), (1, 2, -1, 3)], ids=str)
def test_pad_circular_errors(pad):
    """Wrapping more than once, an empty result, or (torch's copy overlapping itself) a pad wider than the crop."""
    check(lambda m: m.nn.functional.pad(m.ones(1, 1, 3, 5), pad, mode="circular"))


# -- linalg: pinv(hermitian=True), slogdet, norms over empty dims ------------------------------
@pytest.mark.parametrize("case", ["symmetric", "lower triangle only", "singular", "tolerances", "batch"])
def test_pinv_hermitian_values(rng, case):
    a = rng.normal(size=(2, 5, 5) if case == "batch" else (5, 5))
    kwargs = {}
    if case in ("symmetric", "singular", "tolerances", "batch"):
        a = a + np.swapaxes(a, -1, -2)
    if case == "singular":
        a[..., 0, :] = a[..., :, 0] = 0
    if case == "tolerances":
        kwargs = dict(atol=0.5, rtol=0.1)
    for lib_out in [both(lambda m, x: m.linalg.pinv(x, hermitian=True, **kwargs), [a], grad_weights=False)]:
        (out, _), (tout, _) = lib_out
        np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy(), rtol=1e-9, atol=1e-12)
    check(lambda m: m.linalg.pinv(m.ones(3, 4), hermitian=True))


def test_slogdet_values(rng):
    a = rng.normal(size=(3, 4, 4))
    check(lambda m, x: m.linalg.slogdet(x).sign, [a])  # no gradient reaches x from the sign
    check(lambda m, x: m.linalg.slogdet(x)[1][::2], [a])
    a[1] = 0
    for part in (0, 1):
        check(lambda m: m.linalg.slogdet(m.tensor(a))[part])
    check(lambda m: m.linalg.slogdet(m.ones(0, 0)).logabsdet)


@pytest.mark.parametrize("shape", [(0, 3), (3, 0), (0, 0), (2, 0, 3), (0, 2, 3)], ids=str)
@pytest.mark.parametrize("ord", ["fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf], ids=str)
def test_matrix_norm_of_empty(shape, ord):
    """The largest of no singular values or column sums is 0; the smallest is amin's error, on torch's dim."""
    check(lambda m, x: m.linalg.matrix_norm(x, ord), [np.ones(shape)])
    check(lambda m, x: m.linalg.norm(x, ord, dim=(0, 1)), [np.ones(shape)])


@pytest.mark.parametrize("shape", [(0,), (0, 3), (3, 0), (2, 0, 3)], ids=str)
@pytest.mark.parametrize("ord", [0, 0.5, 1, 2, math.inf, -math.inf, -1], ids=str)
@pytest.mark.parametrize("dim", [None, 0, -1, (0,), (), (0, -1)], ids=str)
def test_vector_norm_of_empty(shape, ord, dim):
    """Norms with an identity give 0 over empty dims; the others raise torch's error (before repeated dims')."""
    check(lambda m, x: m.linalg.vector_norm(x, ord, dim, keepdim=True), [np.ones(shape)])
    check(lambda m, x: m.linalg.norm(x, ord, dim if dim != () else None), [np.ones(shape)])


# -- logcumsumexp's gradient ------------------------------------------------------------------
def _exact_logcumsumexp_grad(a: np.ndarray, g: np.ndarray, dim: int) -> np.ndarray:
    """sum_{j >= i} g_j exp(a_i - y_j), term by term in long double."""
    a = np.moveaxis(a.astype(np.longdouble), dim, -1)
    g = np.moveaxis(g.astype(np.longdouble), dim, -1)
    y = np.logaddexp.accumulate(a, axis=-1)
    out = np.zeros_like(a)
    for i in range(a.shape[-1]):
        out[..., i] = (g[..., i:] * np.exp(a[..., i:i + 1] - y[..., i:])).sum(-1)
    return np.moveaxis(out, -1, dim).astype(np.float64)


@pytest.mark.parametrize("dim", [0, 1])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_logcumsumexp_grad_with_large_values(rng, dim, dtype):
    """torch's op-database sample (one slice at 1e4): float32 must not lose 1e-3 to log|g| - y rounding."""
    a = rng.uniform(-9, 9, size=(5, 5, 5))
    a[0] = 10000
    a = a.astype(dtype)
    g = rng.normal(size=a.shape).astype(dtype)
    x = tidal.tensor(a, requires_grad=True)
    tidal.logcumsumexp(x, dim).backward(tidal.tensor(g))
    assert x.grad.dtype is x.dtype
    tol = 2e-6 if dtype == "float32" else 1e-11
    np.testing.assert_allclose(x.grad.numpy(), _exact_logcumsumexp_grad(a, g, dim), rtol=tol, atol=tol)
    if dtype == "float64":
        check(lambda m, t: m.logcumsumexp(t, dim), [a], rtol=1e-9, atol=1e-11)


def test_logcumsumexp_double_backward(rng):
    a = rng.normal(size=(3, 4)).astype(np.float32)
    grads = []
    for lib in (tidal, torch):
        x = lib.tensor(a, requires_grad=True)
        (g,) = lib.autograd.grad(lib.logcumsumexp(x, 1).sin().sum(), x, create_graph=True)
        (g2,) = lib.autograd.grad((g * g).sum(), x)
        grads.append((g.detach().numpy(), g2.numpy()))
    for ours, theirs in zip(*grads):
        np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-5)


# -- prelu, sum_to_size -----------------------------------------------------------------------
@pytest.mark.parametrize("x_shape,w_shape", [((), (1,)), ((), ()), ((4,), (1,)), ((2, 3), (3,)), ((2, 3, 2), (1,)),
                                             ((1, 1), (1, 1)), ((), (2,))], ids=str)
def test_prelu_shapes(rng, x_shape, w_shape):
    check(lambda m, x, w: m.nn.functional.prelu(x, w), [rng.normal(size=x_shape), rng.uniform(0.1, 0.5, w_shape)])


@pytest.mark.parametrize("dtype", ["bool", "uint8", "int8", "int16", "int32"])
def test_sum_to_size_of_0d_is_a_sum(dtype):
    check(lambda m: m.ones((), dtype=getattr(m, dtype)).sum_to_size(()))


def _half(x):
    return tidal.float16 if isinstance(x, tidal.Tensor) else torch.float16


SUM_CALLS = {"1x3": lambda x: x.sum_to_size(1, 3), "3": lambda x: x.sum_to_size(3), "()": lambda x: x.sum_to_size(()),
             "same": lambda x: x.sum_to_size(2, 3), "all": lambda x: x.sum(), "dim0": lambda x: x.sum(0),
             "dims()": lambda x: x.sum((), keepdim=True), "own dtype": lambda x: x.sum(dtype=x.dtype),
             "to f16": lambda x: x.sum(0, dtype=_half(x))}


@pytest.mark.parametrize("dtype", ["bool", "uint8", "int32", "int64", "float16", "float32"])
@pytest.mark.parametrize("call", SUM_CALLS.values(), ids=SUM_CALLS.keys())
def test_sum_dtypes(dtype, call):
    check(lambda m: call(m.ones(2, 3, dtype=getattr(m, dtype))))


# -- normalization on empty and 1-D inputs -----------------------------------------------------
@pytest.mark.parametrize("shape", [(3,), (), (0, 3), (0, 3, 2), (2, 3, 0), (1, 3), (0,), (4,), (2, 3)], ids=str)
@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("stats", [True, False])
def test_batch_norm_edges(rng, shape, training, stats):
    def fn(m, x, w, b):
        mean, var = (m.zeros(3, dtype=m.float64), m.ones(3, dtype=m.float64)) if stats else (None, None)
        out = m.nn.functional.batch_norm(x, mean, var, w, b, training=training)
        if stats:  # an empty batch leaves the running statistics alone
            assert mean.tolist() == ([0.0] * 3 if x.numel() == 0 or not training else mean.tolist())
        return out
    check(fn, [rng.normal(size=shape), rng.normal(size=3), rng.normal(size=3)])


@pytest.mark.parametrize("shape", [(0, 4), (0, 4, 3), (4,), (0,), (), (1, 4), (2, 0), (2, 4, 3)], ids=str)
@pytest.mark.parametrize("affine", [True, False])
def test_group_norm_edges(rng, shape, affine):
    if affine:
        check(lambda m, x, w, b: m.nn.functional.group_norm(x, 2, w, b),
              [rng.normal(size=shape), rng.normal(size=4), rng.normal(size=4)])
    else:
        check(lambda m, x: m.nn.functional.group_norm(x, 2), [rng.normal(size=shape)])


@pytest.mark.parametrize("shape", [(0, 3, 2), (2, 0, 2), (0, 3), (3, 2), (2, 3, 1), (2, 3, 4)], ids=str)
def test_instance_norm_edges(rng, shape):
    check(lambda m, x: m.nn.functional.instance_norm(x), [rng.normal(size=shape)])
    if len(shape) == 3 and shape[1] == 3:
        stats = lambda m: (m.zeros(3, dtype=m.float64), m.ones(3, dtype=m.float64))  # noqa: E731
        check(lambda m, x: m.nn.functional.instance_norm(x, *stats(m)), [rng.normal(size=shape)])
        check(lambda m, x: m.nn.functional.instance_norm(x, *stats(m), use_input_stats=False), [rng.normal(size=shape)])


def test_instance_norm_stats_size():
    check(lambda m: m.nn.functional.instance_norm(m.ones(2, 3, 4), m.zeros(4), m.ones(3)))


# -- interpolate(antialias=True) ----------------------------------------------------------------
@pytest.mark.parametrize("mode", ["bilinear", "bicubic", "lanczos"])
@pytest.mark.parametrize("kwargs", [dict(size=(3, 4)), dict(size=(9, 10)), dict(size=(2, 20)), dict(size=(1, 1)),
                                    dict(scale_factor=0.37), dict(scale_factor=(0.5, 1.7)),
                                    dict(scale_factor=0.3, recompute_scale_factor=True),
                                    dict(size=(4, 3), align_corners=True)], ids=str)
def test_interpolate_antialias(rng, mode, kwargs):
    if mode == "lanczos" and kwargs.get("align_corners"):
        kwargs = dict(kwargs, align_corners=False)
    check(lambda m, x: m.nn.functional.interpolate(x, mode=mode, antialias=True, **kwargs),
          [rng.normal(size=(2, 1, 13, 9))], rtol=1e-9, atol=1e-12)


def test_interpolate_antialias_float32_and_errors(rng):
    a = rng.normal(size=(1, 2, 8, 8)).astype(np.float32)
    check(lambda m, x: m.nn.functional.interpolate(x, size=(3, 5), mode="bilinear", antialias=True), [a],
          rtol=1e-5, atol=1e-6)
    for mode, shape, kwargs in [("linear", (1, 1, 4), {}), ("nearest", (1, 1, 4, 4), {}), ("bicubic", (1, 1, 4), {}),
                                ("lanczos", (1, 1, 4, 4), dict(antialias=False)),
                                ("lanczos", (1, 1, 4, 4), dict(align_corners=True))]:
        kwargs = dict(dict(antialias=True), **kwargs)
        check(lambda m: m.nn.functional.interpolate(m.ones(shape), size=2, mode=mode, **kwargs))


# -- sampled tensors and autograd ---------------------------------------------------------------
SAMPLERS = [
    ("normal tensors", lambda m, mean, std: m.normal(mean, std)),
    ("normal mean", lambda m, mean, std: m.normal(mean, 2.0)),
    ("normal std", lambda m, mean, std: m.normal(1.0, std)),
    ("bernoulli", lambda m, mean, std: m.bernoulli(std * 0.5)),
    ("bernoulli method", lambda m, mean, std: (std * 0.5).bernoulli()),
    ("poisson", lambda m, mean, std: m.poisson(std)),
]


@pytest.mark.parametrize("name,fn", SAMPLERS, ids=[s[0] for s in SAMPLERS])
def test_samples_link_to_their_parameters(rng, name, fn):
    """torch records a node whose gradient for the parameters is zero (sampling is not reparameterized)."""
    arrays = [rng.normal(size=(2, 1)), rng.uniform(0.5, 1.5, size=(3,))]
    ours, theirs = both(fn, arrays)
    (out, grads), (tout, tgrads) = ours, theirs
    assert out.requires_grad and not out.is_leaf and tout.requires_grad
    assert tuple(out.shape) == tuple(tout.shape)
    for g, tg in zip(grads, tgrads):
        assert (g is None) == (tg is None)
        assert tg is None or (g.shape == tg.shape and not g.any() and not tg.any())
    with tidal.no_grad():
        assert not fn(tidal, *[tidal.tensor(a, requires_grad=True) for a in arrays]).requires_grad


def test_sample_errors(rng):
    mean, std = rng.normal(size=3), rng.uniform(0.5, 1.5, size=3)
    check(lambda m, a, s: m.normal(a, s, out=m.empty(3, dtype=m.float64)), [mean, std])
    check(lambda m, a, s: m.bernoulli(s * 0.5, out=m.empty(3, dtype=m.float64)), [mean, std])
    for lib in (tidal, torch):  # linked to `input` without a derivative: backward raises
        sample = lib.bernoulli(lib.tensor(std, requires_grad=True), 0.3)
        with pytest.raises(RuntimeError, match="derivative for aten::bernoulli is not implemented"):
            sample.sum().backward()

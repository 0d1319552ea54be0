"""Strides of new results against torch's, for each caller of torch's "dense strides in the order of the input's
strides" rule: empty_like and the preserve_format copies (clone, to, *_like, flip), torch.cat/stack (the format
every input suggests) and TensorIterator's outputs (ops/memory_format.iterator_strides, checked on its own since
tidal's elementwise ops follow it only for channels_last inputs). Layouts come from a seeded grid: permuted,
sliced, expanded (stride 0), overlapping (equal strides), with size-0 and size-1 dims (odd strides on those)."""
from types import SimpleNamespace

import numpy as np
import pytest
import torch

import tidal.compat as tc
from tidal.ops.movement.memory_format import elementwise_strides, iterator_strides
from tidal.tensor import contiguous_strides

RNG = np.random.default_rng(2013)
SIZES = (0, 1, 1, 2, 3, 4)


def _layout(rng, shape) -> tuple:
    """Strides for `shape`: dense in a random dim order, then maybe a gap, an expanded dim, a tie, odd size-1 ones."""
    ndim = len(shape)
    strides, acc = [0] * ndim, 1
    for d in rng.permutation(ndim):
        strides[d] = acc
        acc *= max(shape[d], 1) * (2 if rng.random() < 0.2 else 1)
    if ndim and rng.random() < 0.25:
        strides[rng.integers(ndim)] = 0
    if ndim > 1 and rng.random() < 0.2:
        a, b = rng.choice(ndim, 2, replace=False)
        strides[a] = strides[b]
    for d in range(ndim):
        if shape[d] == 1 and rng.random() < 0.5:
            strides[d] = int(rng.integers(0, 9))
    return tuple(int(s) for s in strides)


def _shape(rng, ndim: int) -> tuple:
    return tuple(int(rng.choice(SIZES)) for _ in range(ndim))


def _grid(n: int, seed: int) -> list:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        shape = _shape(rng, int(rng.integers(1, 5)))
        out.append((shape, _layout(rng, shape)))
    # hand-picked: channels_last(_3d), a tie broken by sizes, 0-d, a size-0 dim among permuted ones
    out += [((2, 3, 4, 5), (60, 1, 15, 3)), ((2, 3, 2, 5), (60, 1, 30, 3)), ((2, 3, 2, 4, 5), (120, 1, 60, 15, 3)),
            ((3, 4), (1, 1)), ((4, 3), (1, 1)), ((2, 3, 4), (2, 1, 1)), ((), ()), ((4, 0, 3), (1, 4, 4)),
            ((2, 5, 0, 3), (2, 12, 4, 4)), ((4, 1, 3), (1, 99, 4)), ((3, 5, 4), (1, 0, 3))]
    return out


GRID = _grid(160, 1)


def _strided(lib, shape: tuple, strides: tuple):
    """A tensor of `lib` with this geometry over arange values (the same elements in tidal and torch)."""
    span = 1 + sum((n - 1) * s for n, s in zip(shape, strides)) if all(shape) else 1
    return lib.arange(span, dtype=lib.float32).as_strided(shape, strides)


def _outcome(fn):
    """A result's strides and values, or the error's type and message."""
    try:
        r = fn()
    except Exception as e:  # noqa: BLE001 (the error itself is compared)
        return type(e).__name__, str(e)
    return tuple(r.stride()), r.detach().numpy().tolist()


PRESERVING = {
    "empty_like": lambda L, t: L.empty_like(t).stride(),
    "empty_like_preserve": lambda L, t: L.empty_like(t, memory_format=L.preserve_format).stride(),
    "zeros_like": lambda L, t: L.zeros_like(t).stride(),
    "rand_like": lambda L, t: L.rand_like(t).stride(),
    "clone_preserve": lambda L, t: _outcome(lambda: t.clone(memory_format=L.preserve_format)),
    "to_preserve": lambda L, t: _outcome(lambda: t.to(L.float64, memory_format=L.preserve_format)),
    "flip": lambda L, t: _outcome(lambda: t.flip(0)) if t.ndim else None,
    "contiguous_preserve": lambda L, t: _outcome(lambda: t.contiguous(memory_format=L.preserve_format)),
}


@pytest.mark.parametrize("caller", sorted(PRESERVING))
def test_preserve_format_strides(caller):
    fn = PRESERVING[caller]
    for shape, strides in GRID:
        got, want = fn(tc, _strided(tc, shape, strides)), fn(torch, _strided(torch, shape, strides))
        assert got == want, (shape, strides)


def test_cat_and_stack_strides_and_values():
    rng = np.random.default_rng(7)
    cases = [((2, 3, 4, 5), (60, 1, 15, 3), (2, 3, 4, 5), (60, 1, 15, 3)),  # both channels_last
             ((2, 3, 4, 5), (60, 1, 15, 3), (2, 3, 4, 5), (60, 20, 5, 1)),  # mixed: contiguous
             ((2, 3, 2, 5), (60, 1, 30, 3), (2, 3, 2, 5), (30, 1, 15, 3)),  # sliced channels_last
             ((2, 3, 2, 4, 5), (120, 1, 60, 15, 3), (2, 3, 2, 4, 5), (120, 1, 60, 15, 3)),
             ((2, 3, 1, 1), (3, 1, 1, 1), (2, 3, 1, 1), (3, 1, 3, 3)),  # ambiguous N C 1 1
             ((0, 3, 4, 5), (60, 1, 15, 3), (0, 3, 4, 5), (60, 1, 15, 3))]  # empty: never channels_last
    for _ in range(40):  # permuted, expanded, sliced, with 0/1 dims: same shape, each its own layout
        shape = _shape(rng, int(rng.integers(1, 6)))
        cases.append((shape, _layout(rng, shape), shape, _layout(rng, shape)))
    for sa, ta, sb, tb in cases:
        for dim in range(len(sa)):
            for op in (lambda L, x, y: L.cat([x, y], dim), lambda L, x, y: L.stack([x, y], dim),
                       lambda L, x, y: L.stack([x, y], dim + 1)):
                got = _outcome(lambda: op(tc, _strided(tc, sa, ta), _strided(tc, sb, tb)))
                want = _outcome(lambda: op(torch, _strided(torch, sa, ta), _strided(torch, sb, tb)))
                assert got == want, (sa, ta, sb, tb, dim)


def test_cat_of_channels_last_keeps_gradients():
    a = np.random.default_rng(3).standard_normal((2, 3, 4, 5)).astype("float32")
    results = []
    for L in (tc, torch):
        x = L.tensor(a, requires_grad=True)
        y = L.cat([x.to(memory_format=L.channels_last), (2 * x).to(memory_format=L.channels_last)], 1)
        s = L.stack([x.to(memory_format=L.channels_last)] * 2, 0)
        ((y * y).sum() + (s * s).sum()).backward()
        results.append((y.stride(), s.stride(), type(y.grad_fn).__name__, type(s.grad_fn).__name__,
                        s._is_view(), y.detach().numpy(), x.grad.numpy()))
    ours, ref = results
    assert ours[:5] == ref[:5]
    np.testing.assert_allclose(ours[5], ref[5])
    np.testing.assert_allclose(ours[6], ref[6], rtol=1e-6)


def _broadcast_partner(rng, shape: tuple) -> tuple:
    """A shape that broadcasts against `shape`: leading dims dropped, some dims made 1."""
    keep = shape[int(rng.integers(0, len(shape) + 1)):] if rng.random() < 0.3 else shape
    return tuple(1 if n and rng.random() < 0.3 else n for n in keep)


def _iterator_cases(n: int, seed: int) -> list:
    rng = np.random.default_rng(seed)
    out = []
    for shape, strides in _grid(n, seed):
        other = _broadcast_partner(rng, shape)
        out.append((shape, strides, other, _layout(rng, other)))
    return out


ITERATOR = _iterator_cases(160, 5)


@pytest.mark.parametrize("form", ["unary", "number", "binary", "binary_swapped"])
def test_iterator_strides(form):
    for sa, ta, sb, tb in ITERATOR:
        x, t = _strided(tc, sa, ta), _strided(torch, sa, ta)
        if form == "unary":
            got, want = iterator_strides(sa, [x]), (-t).stride()
        elif form == "number":
            got, want = iterator_strides(sa, [x, 2.0]), (t * 2.0).stride()
        else:
            y, u = _strided(tc, sb, tb), _strided(torch, sb, tb)
            args, refs = ([x, y], (t, u)) if form == "binary" else ([y, x], (u, t))
            w = refs[0] + refs[1]
            got, want = iterator_strides(tuple(w.shape), args), w.stride()
        assert got == want, (sa, ta, sb, tb)


def test_elementwise_strides_of_channels_last_inputs():
    """The elementwise hook follows TensorIterator for a channels_last input, and leaves others row-major."""
    x = _strided(tc, (2, 3, 4, 5), (60, 1, 15, 3))
    t = _strided(torch, (2, 3, 4, 5), (60, 1, 15, 3))
    row_major = contiguous_strides((2, 3, 4, 5))
    for other in ((1, 3, 1, 1), (2, 3, 4, 5), (5,), (3, 1, 1)):
        y, u = tc.ones(other), torch.ones(other)
        plan = SimpleNamespace(shape=(2, 3, 4, 5), strides=row_major,
                               plain=((0, row_major), (1, contiguous_strides(other))))
        assert elementwise_strides(plan, (x, y)) == (t + u).stride()
        if other == (2, 3, 4, 5):  # the first input's order wins: row-major here, as torch's
            assert elementwise_strides(plan, (y, x)) == (u + t).stride() == row_major
    p = _strided(tc, (2, 3, 4, 5), (60, 5, 1, 15))  # permuted, not channels_last: tidal keeps row-major
    assert (p + 1).stride() == (60, 20, 5, 1)
    plan = SimpleNamespace(shape=(2, 3, 4, 5), strides=row_major, plain=((0, row_major),))
    assert elementwise_strides(plan, (p,)) is row_major
    q = tc.ones(120).as_strided((2, 3, 4, 5), [60, 20, 5, 1])  # equal strides, another tuple: takes the plan's
    assert q._v.strides == row_major and q._v.strides is not row_major
    assert elementwise_strides(plan, (q,)) is row_major and q._v.strides is row_major

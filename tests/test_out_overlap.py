"""Memory overlap of a written-to tensor (out= and in-place), against torch: an expanded out=, an out=
aliasing or partly overlapping an input are refused as torch refuses them (RuntimeError "unsupported
operation"), and the layouts torch accepts still compute its values."""
import numpy as np
import pytest
import torch

import tidal.compat as ttorch

pytestmark = pytest.mark.filterwarnings("ignore:An output with one or more elements was resized")


def _expanded(lib, n=3, dtype=None):
    return lib.ones(1, dtype=dtype or lib.float32).expand(n)


# name -> fn(lib): the same call built with torch or with tidal.compat
CASES = {
    "index_select out expanded": lambda L: L.index_select(L.arange(6.).reshape(3, 2), 1, L.tensor([0]),
                                                          out=L.ones(1, 1).expand(3, 1)),
    "index_select out is input": lambda L: (lambda x: L.index_select(x, 0, L.tensor([1, 0]), out=x))(
        L.arange(4.).reshape(2, 2)),
    "index_select out is index": lambda L: (lambda i: L.index_select(L.arange(5), 0, i, out=i))(L.tensor([1, 0])),
    "index_select out disjoint view": lambda L: (lambda b: L.index_select(b[:2], 0, L.tensor([1, 0]), out=b[2:]))(
        L.arange(4.)),
    "take out expanded": lambda L: L.take(L.arange(6.), L.tensor([0, 1, 2]), out=_expanded(L)),
    "take out overlaps index": lambda L: (lambda i: L.take(L.arange(6), i[1:], out=i[:-1]))(L.tensor([0, 1, 2])),
    "masked_select out is input": lambda L: (lambda x: L.masked_select(x, x > 2, out=x))(L.arange(6.)),
    "masked_select out is mask": lambda L: (lambda m: L.masked_select(m.clone(), m, out=m))(L.tensor([True, False])),
    "masked_select out fresh": lambda L: L.masked_select(L.arange(6.), L.arange(6.) > 2, out=L.zeros(3)),
    "nonzero out is input": lambda L: (lambda x: L.nonzero(x, out=x))(L.tensor([[1, 0], [0, 3]])),
    "cat out expanded": lambda L: L.cat([L.ones(2, 2), L.ones(2, 2)], out=L.ones(1, 2).expand(4, 2)),
    "cat out is input": lambda L: (lambda x: L.cat([x, x], out=x))(L.ones(2, 2)),
    "cat out slice of input": lambda L: (lambda z: L.cat([L.ones(1, 2), z], out=z[:2]))(L.zeros(3, 2)),
    "cat out disjoint": lambda L: (lambda b: L.cat([b[0:1], b[1:2]], out=b[2:4]))(L.arange(8.).reshape(4, 2)),
    "kthvalue out is input": lambda L: (lambda x: L.kthvalue(x, 2, out=(x, L.empty((), dtype=L.int64))))(
        L.tensor([3., 1., 2.])),
    "kthvalue out fresh": lambda L: L.kthvalue(L.tensor([[3., 1., 2.], [0., 5., 4.]]), 2, 1,
                                               out=(L.empty(2), L.empty(2, dtype=L.int64))),
    "bernoulli out expanded": lambda L: L.bernoulli(L.rand(3), out=_expanded(L)),
    "rand out expanded": lambda L: L.rand(3, out=_expanded(L)),
    "index_add_ expanded self": lambda L: _expanded(L).index_add_(0, L.tensor([0]), L.ones(1)),
    "index_add_ source is self": lambda L: (lambda x: x.index_add_(0, L.tensor([0, 1]), x[1:]))(L.arange(3.)),
    "scatter_ expanded self": lambda L: _expanded(L).scatter_(0, L.tensor([0]), L.ones(1)),
    "uniform_ expanded": lambda L: _expanded(L).uniform_(),
    "bernoulli_ expanded": lambda L: _expanded(L).bernoulli_(0.5),
    "zeros out expanded": lambda L: L.zeros(3, out=_expanded(L)),
    "full out expanded": lambda L: L.full((3,), 2.0, out=_expanded(L)),
    "fill_ expanded": lambda L: _expanded(L).fill_(2.0),
    "add_ expanded": lambda L: _expanded(L).add_(1),
    "copy_ expanded": lambda L: _expanded(L).copy_(L.arange(3.)),
    "exp out expanded": lambda L: L.exp(L.ones(3), out=_expanded(L)),
    "arange out expanded": lambda L: L.arange(3.0, out=_expanded(L)),
    "add out is input": lambda L: (lambda x: L.add(x, 1, out=x))(L.arange(3.)),
    "add_ partly overlapping input": lambda L: (lambda x: x[1:].add_(x[:-1]))(L.arange(4.)),
    "mul_ transposed self": lambda L: (lambda x: x.mul_(x.t()))(L.arange(4.).reshape(2, 2)),
}


def _run(lib, fn):
    try:
        return fn(lib), None
    except Exception as exc:  # noqa: BLE001 - the outcome is compared
        return None, exc


def _values(out) -> list:
    if isinstance(out, (tuple, list)):
        return [v for o in out for v in _values(o)]
    return [np.asarray(out.tolist())]


@pytest.mark.parametrize("name", list(CASES))
def test_same_outcome_as_torch(name):
    fn = CASES[name]
    want, want_exc = _run(torch, fn)
    got, got_exc = _run(ttorch, fn)
    if want_exc is not None:
        assert got_exc is not None, f"tidal accepts what torch refuses: {want_exc}"
        assert type(got_exc) is type(want_exc), f"{type(got_exc).__name__}: {got_exc} (torch: {want_exc})"
        assert "unsupported operation" in str(got_exc) or "unsupported operation" not in str(want_exc), got_exc
        return
    assert got_exc is None, f"tidal refuses what torch takes: {type(got_exc).__name__}: {got_exc}"
    for g, w in zip(_values(got), _values(want), strict=True):
        np.testing.assert_allclose(g, w)


def test_kthvalue_out_returns_the_out_tensors():
    values, indices = ttorch.empty(2), ttorch.empty(2, dtype=ttorch.int64)
    result = ttorch.kthvalue(ttorch.tensor([[3., 1., 2.], [0., 5., 4.]]), 1, 1, out=(values, indices))
    assert result.values is values and result.indices is indices
    assert values.tolist() == [1.0, 0.0] and indices.tolist() == [1, 0]


def test_kthvalue_out_refuses_grad():
    x = ttorch.tensor([3., 1., 2.], requires_grad=True)
    with pytest.raises(RuntimeError, match="out=... arguments don't support automatic differentiation"):
        ttorch.kthvalue(x, 1, out=(ttorch.empty(()), ttorch.empty((), dtype=ttorch.int64)))

"""gather/scatter with an empty index: torch checks nothing of its shape (its dims may differ from the input's
and the source's), so these compute; a non-empty index of other dims is still refused. Against torch 2.13."""
import pytest
import torch

import tidal.compat as ttorch


def _y(L):
    return L.arange(12.0).reshape(3, 4)


def _e(L, *shape, dtype="int64"):
    return L.zeros(*shape, dtype=getattr(L, dtype))


CASES = {
    "scatter src": lambda L: L.scatter(_y(L), 0, _e(L, 2, 0, 3), L.ones(3, 4)),
    "scatter_add": lambda L: L.scatter_add(_y(L), 0, _e(L, 2, 0, 3), L.ones(3, 4)),
    "scatter value": lambda L: L.scatter(_y(L), 0, _e(L, 2, 0, 3), 1.0),
    "scatter_reduce": lambda L: L.scatter_reduce(_y(L), 0, _e(L, 2, 0, 3), L.ones(3, 4), "sum"),
    "scatter_ src of other dims": lambda L: _y(L).scatter_(1, _e(L, 2, 0), L.ones(3)),
    "gather 0-d": lambda L: L.gather(L.tensor(1.0), 0, _e(L, 0, 2)),
    "gather uint8 empty": lambda L: L.gather(L.arange(5.0), 0, _e(L, 2, 0, dtype="uint8")),
    "gather 3-d empty": lambda L: L.gather(_y(L), 1, _e(L, 5, 0, 2)),
    "gather non-empty of other dims": lambda L: L.gather(_y(L), 1, _e(L, 1, 2, 3)),
    "scatter non-empty of other dims": lambda L: L.scatter(_y(L), 1, _e(L, 1, 2, 3), 1.0),
}


def _outcome(fn):
    try:
        r = fn()
    except Exception as exc:  # noqa: BLE001 - the type and message are compared
        return type(exc).__name__, str(exc)
    return tuple(r.shape), str(r.dtype).split(".")[-1], r.tolist()


@pytest.mark.parametrize("name", list(CASES))
def test_as_torch(name):
    assert _outcome(lambda: CASES[name](ttorch)) == _outcome(lambda: CASES[name](torch))


def test_gather_gradient_with_empty_index():
    grads = []
    for L in (torch, ttorch):
        x = L.arange(5.0, requires_grad=True)
        (L.gather(x, 0, _e(L, 2, 0)).sum() + x.sum()).backward()
        grads.append(x.grad.tolist())
    assert grads[0] == grads[1]

"""Tensors of more than 64 dims against torch: elementwise ops (fused or not, broadcast, in place, through
views), casts and copies, creation, whole reductions, gradients, item and tolist compute as torch's;
reductions over given dims and all/any raise torch's error at the call (ops/movement/many_dims.py collapses dims
before the kernels)."""
import numpy as np
import pytest
import torch

import tidal
import tidal.compat as ttorch
from tidal.ops.movement import many_dims


ONES = (1,) * 68


def _x(L, shape=ONES + (2, 3)):
    n = int(np.prod(shape))
    return (L.arange(n, dtype=L.float32) / 4 - 0.5).reshape(shape)


def _y(L):
    return (L.arange(3, dtype=L.float32) + 1).reshape(ONES + (1, 3))


def _t(L):  # not contiguous: the last two dims swapped
    return _x(L, ONES + (3, 2)).transpose(-1, -2)


CALLS = {
    "x + y (broadcast)": lambda L: _x(L) + _y(L),
    "x * 2 + 1 (fused)": lambda L: (_x(L) * 2 + 1).exp() - _x(L),
    "exp(transposed)": lambda L: L.exp(_t(L)),
    "t + x": lambda L: _t(L) + _x(L),
    "where": lambda L: L.where(_x(L) > 0, _x(L), _y(L)),
    "x == t": lambda L: _x(L) == _t(L),
    "add_ in place": lambda L: _x(L).add_(_y(L)),
    "mul_ into a transposed view": lambda L: _t(L).mul_(3),
    "ones": lambda L: L.ones(ONES + (2, 3)),
    "full int": lambda L: L.full(ONES + (2, 1, 3), 7),
    "zeros_like(t)": lambda L: L.zeros_like(_t(L)),
    "to float64": lambda L: _x(L).double(),
    "t.contiguous()": lambda L: _t(L).contiguous(),
    "clone(t)": lambda L: _t(L).clone(),
    "copy_ broadcast": lambda L: L.zeros(ONES + (2, 3)).copy_(_y(L)),
    "sum": lambda L: _x(L).sum(),
    "sum keepdim": lambda L: _x(L).sum(dim=None, keepdim=True),
    "amax keepdim": lambda L: _x(L).amax(dim=(), keepdim=True),
    "nansum keepdim": lambda L: _x(L).nansum(keepdim=True),
    "nanmean": lambda L: _x(L).nanmean(),
    "mean(t)": lambda L: _t(L).mean(),
    "max": lambda L: _x(L).max(),
    "argmax(t)": lambda L: _t(L).argmax(),
    "prod": lambda L: (_x(L) + 2).prod(),
    "var": lambda L: _x(L).var(),
    "norm": lambda L: _x(L).norm(),
    "sum over a dim": lambda L: _x(L).sum(-1),
    "all": lambda L: (_x(L) > -1).all(),
    "any": lambda L: (_x(L) > 0).any(),
    "empty + 1": lambda L: L.zeros(ONES + (0, 3)) + 1,
}


def _outcome(fn):
    try:
        return fn(), None
    except Exception as exc:  # noqa: BLE001 - the outcome is compared
        return None, exc


@pytest.mark.parametrize("name", list(CALLS))
def test_call_as_torch(name):
    want, want_exc = _outcome(lambda: CALLS[name](torch))
    got, got_exc = _outcome(lambda: CALLS[name](ttorch))
    if want_exc is not None:
        assert got_exc is not None, f"tidal computes where torch raises {want_exc!r}"
        assert type(got_exc) is type(want_exc) and str(got_exc) == str(want_exc)
        return
    assert got_exc is None, f"tidal raises {got_exc!r}"
    assert tuple(got.shape) == tuple(want.shape)
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    np.testing.assert_allclose(np.asarray(got.reshape(-1).tolist(), dtype=np.float64),
                               want.reshape(-1).double().numpy(), rtol=1e-6)


def test_tolist_and_item():
    for L in (torch, ttorch):
        assert isinstance(_x(L).tolist(), list)
    assert _x(ttorch).tolist() == _x(torch).tolist()
    assert _t(ttorch).tolist() == _t(torch).tolist()
    assert ttorch.zeros(ONES + (2, 0)).tolist() == torch.zeros(ONES + (2, 0)).tolist()
    assert _x(ttorch, ONES + (1, 1))[..., 0:1].item() == _x(torch, ONES + (1, 1))[..., 0:1].item()


def test_gradients():
    grads = []
    for L in (torch, ttorch):
        a = L.arange(6, dtype=L.float64).requires_grad_(True)
        x = a.reshape(ONES + (2, 3))
        ((x * x).exp() / 10 + x.transpose(-1, -2).reshape(ONES + (2, 3))).sum().backward()
        grads.append(np.asarray(a.grad.tolist()))
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-10)


def test_collapse_keeps_the_order():
    """The collapse drops extent-1 dims and merges what every layout walks as one, nothing else."""
    shape = (1, 2, 3, 1, 4)
    contiguous = (24, 12, 4, 4, 1)
    swapped = (99, 4, 8, 99, 1)  # dims 1 and 2 swapped in memory (extent-1 dims: any stride)
    assert many_dims.collapse(shape, [contiguous]) == ((24,), [(1,)])
    assert many_dims.collapse(shape, [contiguous, swapped]) == ((2, 3, 4), [(12, 4, 1), (4, 8, 1)])
    padded = (0, 40, 4, 0, 1)  # rows of 12 elements, 40 apart
    assert many_dims.collapse(shape, [padded]) == ((2, 12), [(40, 1)])
    assert many_dims.collapse((3, 0, 2), [(0, 2, 1)]) == ((0,), [(1,)])


def test_random_fills():
    """In-place samplers draw into tensors of more than 64 dims (contiguous or not) as into their flat view."""
    tidal.manual_seed(0)
    x = tidal.empty(ONES + (2, 3)).uniform_(2, 3)
    y = tidal.empty(ONES + (3, 2)).transpose(-1, -2).normal_()
    z = tidal.randint(0, 5, ONES + (4,))
    assert tuple(x.shape) == ONES + (2, 3) and tuple(z.shape) == ONES + (4,)
    values = np.asarray(x.reshape(-1).tolist())
    assert values.min() >= 2 and values.max() < 3 and len(set(values.tolist())) == 6
    assert np.isfinite(y.transpose(-1, -2).reshape(-1).tolist()).all()
    assert set(z.reshape(-1).tolist()) <= set(range(5))


# -- printing, softmax over a dim, integer pow, add/sub with alpha ------------------------------------------------

MORE = {
    "softmax last dim": lambda L: L.softmax(_x(L), -1),
    "softmax dim 0": lambda L: L.softmax(_x(L), 0),
    "softmax middle dim": lambda L: L.softmax(_x(L, ONES + (2, 3, 2)), 69),
    "softmax transposed, float64": lambda L: L.softmax(_t(L), -2, dtype=L.float64),
    "log_softmax": lambda L: L.log_softmax(_x(L), -1),
    "F.log_softmax dim 68": lambda L: L.nn.functional.log_softmax(_x(L), dim=68),
    "softmax dim out of range": lambda L: L.softmax(_x(L), 80),
    "softmax dim None": lambda L: L.softmax(_x(L), None),
    "softmax int": lambda L: L.softmax(_x(L).long(), -1),
    "int ** 2": lambda L: (_x(L) * 4).long() ** 2,
    "int.pow(int tensor)": lambda L: (_x(L) * 4).long().pow(((_x(L) * 4) % 3).long()),
    "int ** negative tensor": lambda L: (_x(L) * 4).long() ** ((_x(L) * 4).long() - 1),
    "2 ** int": lambda L: 2 ** (_x(L) * 4 + 2).long(),
    "pow_ int": lambda L: (_x(L) * 4).long().pow_(3),
    "int ** -1": lambda L: (_x(L) * 4).long() ** -1,
    "add alpha": lambda L: L.add(_x(L), _y(L), alpha=2),
    "sub alpha int": lambda L: L.sub((_x(L) * 4).long(), _y(L).long(), alpha=3),
    "add_ alpha": lambda L: _x(L).add_(_t(L), alpha=-0.5),
    "sub alpha float on int": lambda L: L.sub((_x(L) * 4).long(), 1, alpha=0.5),
    "rsub alpha": lambda L: L.rsub(_x(L), 2.0, alpha=3),
    "div trunc int": lambda L: L.div((_x(L) * 4).long(), 3, rounding_mode="trunc"),
}


@pytest.mark.parametrize("name", list(MORE))
def test_more_calls_as_torch(name):
    CALLS[name] = MORE[name]
    try:
        test_call_as_torch(name)
    finally:
        del CALLS[name]


PRINTED = {
    "float": lambda L: _x(L),
    "transposed": lambda L: _t(L),
    "int": lambda L: (_x(L) * 4).long(),
    "bool": lambda L: _x(L) > 0,
    "one element": lambda L: L.ones(ONES),
    "trailing ones": lambda L: L.arange(4.).reshape((2,) + ONES + (2, 1)),
    "empty": lambda L: L.zeros(ONES + (0, 3)),
    "float64": lambda L: _x(L).double(),
    "summarized": lambda L: L.arange(2000.).reshape(ONES + (40, 50)),
    "requires grad": lambda L: _x(L).requires_grad_(),
    "grad_fn": lambda L: _x(L).requires_grad_().reshape(ONES + (3, 2)),
}


@pytest.mark.parametrize("name", list(PRINTED))
def test_printing_as_torch(name):
    assert repr(PRINTED[name](ttorch)) == repr(PRINTED[name](torch)).replace("torch.", "tidal.")


def test_softmax_gradients():
    grads = []
    for L in (torch, ttorch):
        a = L.arange(12, dtype=L.float64).div(5).requires_grad_(True)
        x = a.reshape(ONES + (3, 4))
        w = L.arange(12, dtype=L.float64).reshape(ONES + (3, 4)).cos()
        ((L.softmax(x, -2) * w).sum() + (L.log_softmax(x, 0) * w).sum()
         + (L.softmax(x.transpose(-1, -2), -1).transpose(-1, -2) * w).sum()).backward()
        grads.append(np.asarray(a.grad.tolist()))
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-10)

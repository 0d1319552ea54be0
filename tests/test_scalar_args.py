"""Ops called with Python numbers where torch takes them: two numbers, alpha, decimals, integer powers,
addcmul/addcdiv in the promoted precision. Results (value, dtype, shape) and errors compared with torch."""
from __future__ import annotations

import numpy as np
import pytest

import tidal

torch = pytest.importorskip("torch")


def outcome(lib, fn):
    """('ok', values, dtype name, shape) or ('error', type name, message) of fn(lib)."""
    try:
        r = fn(lib)
    except Exception as exc:  # noqa: BLE001 (the error is what we compare)
        return "error", type(exc).__name__, str(exc)
    return "ok", np.asarray(r.tolist()), str(r.dtype).split(".")[-1], tuple(r.shape)


def same(fn, rtol=0.0):
    got, want = outcome(tidal, fn), outcome(torch, fn)
    assert got[0] == want[0], (got, want)
    if got[0] == "error":
        assert got[1:] == want[1:]
    else:
        assert got[2:] == want[2:]
        np.testing.assert_allclose(got[1], want[1], rtol=rtol)


T = [1.5, -2.25, 3.0]


@pytest.mark.parametrize("call", [
    lambda L: L.add(L.tensor(T), 3.5, alpha=2), lambda L: L.add(L.tensor([1, 2]), 3.5, alpha=2.5),
    lambda L: L.sub(L.tensor(T), 2, alpha=3), lambda L: L.add(L.tensor([1, 2]), 3, alpha=2),
    lambda L: L.add(L.tensor([1, 2]), L.tensor([3, 4]), alpha=1.0), lambda L: L.add(L.tensor([1, 2]), 3, alpha=True),
    lambda L: L.add(2, 3), lambda L: L.add(2, 3.5), lambda L: L.add(True, True), lambda L: L.add(2, 3, alpha=2),
    lambda L: L.sub(2, 3), lambda L: L.sub(5, 2, alpha=2), lambda L: L.mul(2, 3), lambda L: L.mul(2.5, 3),
    lambda L: L.div(2, 3), lambda L: L.true_divide(2, 3), lambda L: L.div(7, 2, rounding_mode="floor"),
    lambda L: L.floor_divide(7, 2), lambda L: L.floor_divide(7.5, 2), lambda L: L.multiply(2, 3),
    lambda L: L.maximum(2, 3), lambda L: L.sub(True, True), lambda L: L.tensor([True]) - 1,
    lambda L: L.tensor([1]) - L.tensor([True]),
], ids=lambda c: "")
def test_numbers_and_alpha(call):
    same(call)


@pytest.mark.parametrize("decimals", [0, 3, -2])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_round_decimals(decimals, dtype):
    values = np.random.default_rng(0).standard_normal(50) * 300
    same(lambda L: L.round(L.tensor(values, dtype=getattr(L, dtype)), decimals=decimals))
    same(lambda L: L.tensor(values, dtype=getattr(L, dtype)).round(decimals=decimals))
    same(lambda L: L.tensor(values, dtype=getattr(L, dtype)).round_(decimals=decimals))


def test_round_decimals_grad_and_int():
    x = tidal.tensor([1.234, 5.678], requires_grad=True)
    y = tidal.round(x, decimals=1)
    assert y.grad_fn.name() == "RoundBackward1"
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), 0.0)
    same(lambda L: L.round(L.tensor([15, 25]), decimals=-1))


@pytest.mark.parametrize("call", [
    lambda L: 2 ** L.tensor([-1.0, 2.0, 0.5]), lambda L: 2 ** L.tensor([-1, 0, 3]),
    lambda L: (-1) ** L.tensor([-1, -2, 3]),
    lambda L: 1 ** L.tensor([-5, 2]), lambda L: 0 ** L.tensor([-1, 2]), lambda L: 2.5 ** L.tensor([-1, 2]),
    lambda L: L.tensor([2, 1, -1, 0, 3]) ** L.tensor([-1, -2, -3, -1, 0]), lambda L: L.tensor([2, 3]) ** -1,
    lambda L: L.pow(L.tensor([2, 3]), -2), lambda L: L.tensor([2., 4.]) ** -1, lambda L: L.tensor([2]) ** L.tensor(-1),
    lambda L: L.tensor([2, 3], dtype=L.int8) ** L.tensor([-1, 2], dtype=L.int8), lambda L: L.tensor([2]).pow_(-1),
    lambda L: L.tensor([3, -1]).pow_(L.tensor([-2, -3])), lambda L: L.pow(2, L.tensor([-1, 2])),
], ids=lambda c: "")
def test_integer_powers(call):
    same(call)


@pytest.mark.parametrize("op", ["addcmul", "addcdiv"])
@pytest.mark.parametrize("dtypes", [("float64", "float32", "float32"), ("float32", "int64", "float16"),
                                    ("float16", "float16", "float16"), ("float32", "float64", "float64")])
def test_addcmul_addcdiv_promoted_precision(op, dtypes):
    rng = np.random.default_rng(1)
    a, b, c = rng.standard_normal(8), rng.integers(1, 9, 8), rng.standard_normal(8) + 3

    def call(L):
        x, y, z = (L.tensor(v, dtype=getattr(L, d)) for v, d in zip((a, b, c), dtypes))
        return getattr(L, op)(x, y, z, value=0.1)
    same(call, rtol=1e-14 if "float64" in dtypes else 1e-6)  # float64 results: torch's exact precision

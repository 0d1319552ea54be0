"""`out=` of another shape for torch's elementwise functions, against torch: resized to the broadcast shape (silently
when empty, with torch's deprecation warning when it held elements), laid out as a new elementwise result
(channels_last inputs give channels_last), values and dtypes as torch's; in-place methods and outs that alias an
input still refuse a shape mismatch with torch's error."""
import warnings

import numpy as np
import pytest
import torch

import tidal.compat as tc

RNG = np.random.default_rng(1218)
A, B = RNG.standard_normal((2, 3)).astype("float32"), RNG.standard_normal(3).astype("float32") + 2

CALLS = {
    "abs": lambda L, a, b, out: L.abs(a, out=out), "exp": lambda L, a, b, out: L.exp(a, out=out),
    "sigmoid": lambda L, a, b, out: L.sigmoid(a, out=out), "mul": lambda L, a, b, out: L.mul(a, b, out=out),
    "maximum": lambda L, a, b, out: L.maximum(a, b, out=out), "atan2": lambda L, a, b, out: L.atan2(a, b, out=out),
    "add_alpha": lambda L, a, b, out: L.add(a, b, alpha=2, out=out), "sub": lambda L, a, b, out: L.sub(b, a, out=out),
    "div": lambda L, a, b, out: L.div(a, b, out=out),
    "div_floor": lambda L, a, b, out: L.div(a, b, rounding_mode="floor", out=out),
    "pow": lambda L, a, b, out: L.pow(b, a, out=out), "pow_number": lambda L, a, b, out: L.pow(a, 2, out=out),
    "clamp": lambda L, a, b, out: L.clamp(a, -0.5, 0.5, out=out),
    "clamp_tensor": lambda L, a, b, out: L.clamp(a, min=b - 2.5, out=out),
}


def _run(L, name, out_shape):
    out = L.empty(out_shape)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = CALLS[name](L, L.tensor(A), L.tensor(B), out)
    resized = [str(w.message) for w in caught if "was resized" in str(w.message)]
    return result, out, resized


@pytest.mark.parametrize("out_shape", [(0,), (4,), (2, 3)], ids=["empty", "other", "same"])
@pytest.mark.parametrize("name", list(CALLS))
def test_out_resized_as_torch(name, out_shape):
    (got, o, warned), (want, t, twarned) = _run(tc, name, out_shape), _run(torch, name, out_shape)
    assert got is o and want is t
    assert tuple(o.shape) == tuple(t.shape) == (2, 3) and o.stride() == t.stride()
    assert str(o.dtype)[6:] == str(t.dtype)[6:]
    np.testing.assert_allclose(o.numpy(), t.numpy(), rtol=1e-6, atol=1e-7)
    assert len(warned) == len(twarned) == (1 if out_shape == (4,) else 0)
    if warned:
        assert twarned[0].startswith(warned[0].removesuffix("."))


def test_resized_out_of_channels_last_inputs():
    a = RNG.standard_normal((2, 3, 4, 5)).astype("float32")
    for L in (tc, torch):
        x = L.tensor(a).to(memory_format=L.channels_last)
        out = L.empty(0)
        L.mul(x, 2, out=out)
        assert out.stride() == (60, 1, 15, 3) and out.is_contiguous(memory_format=L.channels_last)
        np.testing.assert_allclose(out.numpy(), a * 2)


@pytest.mark.parametrize("call", [
    lambda L: L.ones(3).add_(L.ones(2, 3)), lambda L: L.ones(3).mul_(L.ones(2, 3)),
    lambda L: L.ones(3).clamp_(L.ones(2, 3)), lambda L: L.ones(3).pow_(L.ones(2, 3)),
    lambda L: (lambda x: L.add(x, L.ones(2, 3), out=x))(L.ones(3)),
], ids=["add_", "mul_", "clamp_", "pow_", "out_is_input"])
def test_in_place_shape_mismatch_still_refused(call):
    with pytest.raises(RuntimeError) as want:
        call(torch)
    with pytest.raises(RuntimeError) as got:
        call(tc)
    assert str(got.value) == str(want.value) == "output with shape [3] doesn't match the broadcast shape [2, 3]"


def test_out_refusals():
    """A dtype out can't hold, and an argument that requires grad (grad mode on; tidal recorded a graph into out)."""
    for L in (tc, torch):
        with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
            L.div(L.ones(3), 2, out=L.empty(0, dtype=L.int64))
        x = L.ones(3, requires_grad=True)
        for shape, call in (((0,), lambda o: L.mul(x, 2, out=o)), ((3,), lambda o: L.add(x, 1, out=o)),
                            ((3,), lambda o: L.exp(x, out=o)), ((3,), lambda o: L.clamp(x, 0, 1, out=o))):
            with pytest.raises(RuntimeError, match=r"^\w+\(\): functions with out=\.\.\. arguments don't support "
                                                   "automatic differentiation, but one of the arguments requires grad"):
                call(L.empty(shape))
        with L.no_grad():
            out = L.empty(0)
            L.mul(x, 2, out=out)
        assert out.tolist() == [2.0, 2.0, 2.0] and not out.requires_grad

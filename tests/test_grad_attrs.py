"""Tensor.grad_dtype, Tensor.is_inference / torch.is_inference and Tensor.name against torch 2.13."""
import pytest
import torch

import tidal.compat as ttorch


def _raises(fn):
    try:
        fn()
    except Exception as exc:  # noqa: BLE001 - the type and message are compared
        return type(exc), str(exc)
    return None


def _both(case):
    """Run `case(torch_module)` in torch and in tidal; the results (or errors) must be alike."""
    want = _raises(lambda: case(torch))
    got = _raises(lambda: case(ttorch))
    assert got == want
    if want is None:
        assert str(case(ttorch)).replace("tidal", "torch") == str(case(torch))


@pytest.mark.parametrize("case", [
    lambda t: t.tensor([1.0, 2.0], requires_grad=True).grad_dtype,
    lambda t: t.ones(2, dtype=t.float64).grad_dtype,
    lambda t: t.ones(2, dtype=t.int64).grad_dtype,
    lambda t: (t.tensor([1.0], requires_grad=True) * 2).grad_dtype,
], ids=["leaf", "float64", "int64", "non-leaf"])
def test_grad_dtype_get(case):
    _both(case)


def _set(t, value, grad=None, leaf=True):
    x = t.tensor([1.0, 2.0], requires_grad=True)
    if not leaf:
        x = x * 2
    if grad is not None:
        x.grad = t.ones(2, dtype=grad)
    x.grad_dtype = value(t) if callable(value) else value
    return x.grad_dtype


@pytest.mark.parametrize("case", [
    lambda t: _set(t, lambda m: m.float16),
    lambda t: _set(t, None),
    lambda t: _set(t, 3),
    lambda t: _set(t, "float64"),
    lambda t: _set(t, lambda m: m.float64, leaf=False),
    lambda t: _set(t, lambda m: m.float64, grad=t.float32),
    lambda t: _set(t, lambda m: m.float32, grad=t.float32),
    lambda t: _set(t, None, grad=t.float32),
], ids=["float16", "none", "int", "str", "non-leaf", "other-grad", "same-grad", "none-with-grad"])
def test_grad_dtype_set(case):
    _both(case)


@pytest.mark.parametrize("case", [
    lambda t: t.ones(2).is_inference(),
    lambda t: t.is_inference(t.ones(2)),
    lambda t: t.is_inference(t.ones(3)[1:]),
    lambda t: t.is_inference(3),
    lambda t: t.is_inference(t.ones(2, requires_grad=True) * 2),
], ids=["method", "function", "view", "number", "non-leaf"])
def test_is_inference_outside_inference_mode(case):
    _both(case)


def test_name():
    _both(lambda t: t.ones(2).name)
    _both(lambda t: t.nn.Parameter(t.ones(2)).name)
    x = ttorch.ones(2)
    with pytest.raises(AttributeError):
        x.name = "x"

"""The engine's side of Tensor.grad_dtype and the inference-tensor mark, against torch 2.13."""
import numpy as np
import pytest
import torch

import tidal.compat as ttorch


def _grad_after(t, grad_dtype, build):
    x = t.tensor([1.0, -2.0, 3.0], requires_grad=True)
    x.grad_dtype = grad_dtype(t) if callable(grad_dtype) else grad_dtype
    build(t, x).sum().backward()
    return x.grad


@pytest.mark.parametrize("grad_dtype", [lambda t: t.float16, lambda t: t.float64, lambda t: t.bfloat16, None])
@pytest.mark.parametrize("build", [lambda t, x: x * 3, lambda t, x: x.double() * x.double()])
def test_grad_dtype_casts_the_leaf_gradient(grad_dtype, build):
    want = _grad_after(torch, grad_dtype, build)
    got = _grad_after(ttorch, grad_dtype, build)
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    np.testing.assert_allclose(got.float().numpy(), want.float().numpy())


def test_grad_dtype_cast_seen_by_hooks_and_autograd_grad():
    for t in (torch, ttorch):
        x = t.tensor([1.0, 2.0], requires_grad=True)
        x.grad_dtype = t.float64
        seen = []
        x.register_hook(lambda g: seen.append(str(g.dtype).split(".")[-1]))
        (g,) = t.autograd.grad((x * 2).sum(), [x])
        assert seen == ["float64"] and str(g.dtype).split(".")[-1] == "float64"


def _inference_marks(t):
    x = t.ones(3)
    with t.inference_mode():
        y = t.ones(3)
        z = x * 2
        v = x[1:]
        with t.inference_mode(False):
            w = t.ones(1)
    return [t.is_inference(a) for a in (x, y, z, v, w, y + 1, y[0], y.view(3, 1), y.detach(), y.data, x.data)]


def test_inference_tensors_as_torch():
    assert _inference_marks(ttorch) == _inference_marks(torch)


def test_inference_mode_decorator_marks():
    for t in (torch, ttorch):
        @t.inference_mode()
        def make():
            return t.zeros(2)
        assert make().is_inference() and not t.zeros(2).is_inference()

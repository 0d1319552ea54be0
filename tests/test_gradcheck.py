"""torch.autograd.gradcheck / gradgradcheck on tidal: the same verdicts and errors as torch's."""
from __future__ import annotations

import warnings

import pytest
import torch

import tidal.compat as tc


def functions(L):
    class Square(L.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a ** 2

        @staticmethod
        def backward(ctx, g):
            (a,) = ctx.saved_tensors
            return 3 * a * g  # wrong: 2 a g

    class SinMul(L.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            return a * b.sin(), a + b

        @staticmethod
        def backward(ctx, g, h):
            a, b = ctx.saved_tensors
            return g * b.sin() + h, g * a * b.cos() + h

    class DetachedCube(L.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a ** 3

        @staticmethod
        def backward(ctx, g):
            (a,) = ctx.saved_tensors
            return 3 * a.detach() ** 2 * g  # right once, but its own derivative in a is lost
    return Square, SinMul, DetachedCube


def verdicts(L):
    square, sin_mul, cube = functions(L)
    x = L.tensor([0.5, -1.0, 2.0], dtype=L.float64, requires_grad=True)
    y = L.tensor([0.3, 0.2, -0.7], dtype=L.float64, requires_grad=True)
    mismatch = "Jacobian mismatch for output 0 with respect to input 0,\nnumerical:"
    with pytest.raises(RuntimeError, match=mismatch) as err:
        L.autograd.gradcheck(square.apply, (x,))
    assert type(err.value).__name__ == "GradcheckError"
    with pytest.raises(ValueError, match="gradcheck expects at least one input tensor to require gradient"):
        L.autograd.gradcheck(square.apply, (x.detach(),))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        L.autograd.gradcheck(lambda a: a * 2, (L.ones(2, requires_grad=True),), raise_exception=False)
    return [L.autograd.gradcheck(square.apply, (x,), raise_exception=False),
            L.autograd.gradcheck(sin_mul.apply, (x, y)),
            L.autograd.gradcheck(lambda a, b: (a * b).softmax(0), (x, y)),
            L.autograd.gradgradcheck(lambda a, b: (a ** 3 * b.exp()).sum(), (x, y)),
            L.autograd.gradgradcheck(sin_mul.apply, (x, y)),
            L.autograd.gradcheck(cube.apply, (x,)),
            L.autograd.gradgradcheck(cube.apply, (x,), raise_exception=False),
            any("Input #0 requires gradient and is not a double precision" in str(w.message) for w in caught)]


def test_gradcheck_and_gradgradcheck_as_torch():
    ours, theirs = verdicts(tc), verdicts(torch)
    assert ours == theirs == [False, True, True, True, True, True, False, True]

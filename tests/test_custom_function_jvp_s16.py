"""A custom autograd.Function's forward-mode support as torch: ctx.save_for_forward, whose tensors jvp reads as
ctx.saved_tensors (torch's documented example and a jvp-only Function), compared with real torch."""
import numpy as np
import pytest
import torch

import tidal
from tidal.autograd import forward_ad as fw



def _functions(lib):
    class Func(lib.autograd.Function):   # torch's save_for_forward docstring example
        @staticmethod
        def forward(ctx, x, y, z):
            ctx.save_for_backward(x, y)
            ctx.save_for_forward(x, y)
            ctx.z = z
            return x * y * z

        @staticmethod
        def jvp(ctx, x_t, y_t, _):
            x, y = ctx.saved_tensors
            return ctx.z * (y * x_t + x * y_t)

        @staticmethod
        def vjp(ctx, grad_out):
            x, y = ctx.saved_tensors
            return ctx.z * grad_out * y, ctx.z * grad_out * x, None

    class ExpJvpOnly(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_forward(x)
            return x.exp()

        @staticmethod
        def jvp(ctx, t):
            x, = ctx.saved_tensors
            return t * x.exp()
    return Func, ExpJvpOnly


def _run(lib, fwd, xs, ts):
    Func, ExpJvpOnly = _functions(lib)
    a = lib.tensor(xs[0], requires_grad=True)
    b = lib.tensor(xs[1], requires_grad=True)
    with fwd.dual_level():
        d = Func.apply(fwd.make_dual(a, lib.tensor(ts[0])), b, 4)
        t1 = fwd.unpack_dual(d).tangent
        e = ExpJvpOnly.apply(fwd.make_dual(lib.tensor(xs[0]), lib.tensor(ts[1]))).cos()
        t2 = fwd.unpack_dual(e).tangent
    d.sum().backward()
    return [t.detach().numpy() for t in (t1, t2, a.grad, b.grad)]


def test_save_for_forward_as_torch():
    rng = np.random.default_rng(0)
    xs, ts = rng.standard_normal((2, 5)), rng.standard_normal((2, 5))
    want = _run(torch, torch.autograd.forward_ad, xs, ts)
    got = _run(tidal, fw, xs, ts)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)


def test_save_for_forward_refuses_non_tensors_as_torch():
    for lib in (torch, tidal):
        class Bad(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_forward(x, 3)
                return x * 2

            @staticmethod
            def jvp(ctx, t):
                return t * 2
        with pytest.raises(AssertionError, match="save_for_forward expects all arguments to be tensors; you "
                                                 "should save non-tensors as attributes on ctx."):
            Bad.apply(lib.ones(2))

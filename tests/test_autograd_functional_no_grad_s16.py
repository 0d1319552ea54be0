"""torch.autograd.functional under a caller's no_grad, as torch: every function runs with grad mode on, so
jacobian/hessian/vjp/jvp/vhp/hvp give torch's values (tidal's jacobian indexed the outputs' rows with grad mode
off and crashed with AttributeError); and autograd.grad / backward of a view made under no_grad raise torch's
RuntimeError instead of an AttributeError from the engine."""
import numpy as np
import pytest
import torch

import tidal
from tidal.func import autograd_functional as F



def _all(lib, fn, x, v):
    f = lambda t: t.sin() * t.sum()           # noqa: E731
    s = lambda t: (t.sin() * t).sum()         # noqa: E731
    with lib.no_grad():
        out = [fn.jacobian(f, x), fn.jacobian(f, x, vectorize=True),
               fn.jacobian(f, x, vectorize=True, strategy="forward-mode"), fn.hessian(s, x),
               fn.vjp(f, x, v)[1], fn.jvp(f, x, v)[1], fn.vhp(s, x, v)[1], fn.hvp(s, x, v)[1]]
        graph = fn.jacobian(f, x, create_graph=True)
        assert graph.requires_grad and not out[0].requires_grad and not lib.is_grad_enabled()
    return [t.detach().numpy() for t in out]


def test_functional_under_no_grad_as_torch():
    data = np.random.default_rng(0).standard_normal((2, 5))
    want = _all(torch, torch.autograd.functional, torch.tensor(data[0]), torch.tensor(data[1]))
    got = _all(tidal, F, tidal.tensor(data[0]), tidal.tensor(data[1]))
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)


def test_grad_of_a_view_made_under_no_grad_raises_as_torch():
    for lib in (torch, tidal):
        x = lib.randn(4, requires_grad=True)
        y = x * 2
        with lib.no_grad():
            e = y.reshape(-1)[1]
        assert e.requires_grad and e.grad_fn is None
        with pytest.raises(RuntimeError, match="element 0 of tensors does not require grad and does not have a "
                                               "grad_fn"):
            lib.autograd.grad(e, x)
        with pytest.raises(RuntimeError, match="element 0 of tensors does not require grad"):
            e.backward()

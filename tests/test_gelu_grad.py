"""gelu as one elementwise op: first and second derivatives against torch, and what it saves."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import tidal
import tidal.nn.functional as TF


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_double_backward_matches_torch(approximate):
    x = np.random.default_rng(0).standard_normal(64) * 3
    theirs, ours = torch.tensor(x, requires_grad=True), tidal.tensor(x, requires_grad=True)
    g_t, = torch.autograd.grad(F.gelu(theirs, approximate=approximate).sum(), theirs, create_graph=True)
    g_o, = tidal.autograd.grad(TF.gelu(ours, approximate=approximate).sum(), ours, create_graph=True)
    np.testing.assert_allclose(g_o.detach().numpy(), g_t.detach().numpy(), rtol=1e-12, atol=1e-12)
    (g_t * g_t).sum().backward()
    (g_o * g_o).sum().backward()
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_is_one_node_saving_only_its_input(approximate):
    x = tidal.randn(5, requires_grad=True)
    y = TF.gelu(x, approximate=approximate)
    assert type(y.grad_fn).__name__ == "GeluBackward0"
    saved = [t for t in y.grad_fn._saved if t is not None]
    assert len(saved) == 1 and saved[0] is x


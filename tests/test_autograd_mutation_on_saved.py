"""allow_mutation_on_saved_tensors against torch's: tensors saved for backward changed in place inside the
block give the gradients of their saved values (torch's docstring example, double backward), nesting and
mutation outside the block raise as torch does."""
import numpy as np
import pytest
import torch
from torch.autograd.graph import allow_mutation_on_saved_tensors as torch_allow

import tidal
import tidal.compat as tc
from tidal.autograd.mutation_on_saved import allow_mutation_on_saved_tensors as allow


def _run(lib, allow_fn):
    out = []
    with allow_fn() as ctx:
        a = lib.ones(2, 3, requires_grad=True)
        b = a.clone()
        loss = (b ** 2).sum()
        b.sin_()  # b was saved by pow: backward must see the ones, not sin(1)
        loss.backward()
        out += [a.grad.tolist(), b.detach().tolist()]
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = x * 1
        (g,) = lib.autograd.grad((y * y * y).sum(), x, create_graph=True)
        y.mul_(3)  # (after the first backward: the graph of g still reads y's saved value)
        g.sum().backward()
        out.append(x.grad.tolist())
        with pytest.raises(RuntimeError, match="allow_mutation_on_saved_tensors contexts cannot be nested"):
            with allow_fn():
                pass
        assert ctx is not None
    c = lib.ones(2, requires_grad=True).clone()
    d = (c * c).sum()
    c.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        d.backward()
    return out


def test_matches_torch():
    want, got = _run(torch, torch_allow), _run(tc, allow)
    assert got[0] == want[0] and got[2] == want[2]
    np.testing.assert_allclose(got[1], want[1], rtol=1e-6)  # sin(1) (to the last float32 bit)
    np.testing.assert_allclose(got[0], np.full((2, 3), 2.0))


def test_torch_import_path():
    from tidal.autograd.graph import allow_mutation_on_saved_tensors
    assert allow_mutation_on_saved_tensors is allow
    assert tidal.autograd.graph.allow_mutation_on_saved_tensors is allow

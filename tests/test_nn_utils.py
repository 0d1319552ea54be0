"""tidal.nn.utils against torch.nn.utils: gradient clipping by norm and value, parameter/vector conversion."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import tidal
import tidal.nn as nn
from tidal.nn import utils
from nn_helpers import assert_close, load_from_torch


def grads_pair(rng, shapes, scale=1.0):
    """Parameters with the same random gradients in tidal and torch."""
    ours, theirs = [], []
    for shape in shapes:
        g = rng.standard_normal(shape) * scale
        p = nn.Parameter(tidal.zeros(*shape, dtype=tidal.float64))
        p.grad = tidal.tensor(g)
        q = torch.nn.Parameter(torch.zeros(*shape, dtype=torch.float64))
        q.grad = torch.from_numpy(g.copy())
        ours.append(p)
        theirs.append(q)
    return ours, theirs


@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.0, float("inf")])
@pytest.mark.parametrize("max_norm", [0.5, 100.0])
def test_clip_grad_norm(norm_type, max_norm):
    rng = np.random.default_rng(0)
    ours, theirs = grads_pair(rng, [(3, 4), (5,), (2, 2, 2)])
    total = utils.clip_grad_norm_(ours, max_norm, norm_type)
    ref_total = torch.nn.utils.clip_grad_norm_(theirs, max_norm, norm_type)
    assert_close(total, ref_total)
    for p, q in zip(ours, theirs):
        assert_close(p.grad, q.grad)


def test_clip_grad_norm_forms_and_errors():
    rng = np.random.default_rng(1)
    ours, theirs = grads_pair(rng, [(3,)])
    assert_close(utils.clip_grad_norm_(ours[0], 0.1), torch.nn.utils.clip_grad_norm_(theirs[0], 0.1))
    assert utils.clip_grad_norm_([], 1.0).item() == 0.0
    no_grad = nn.Parameter(tidal.ones(2))
    assert utils.clip_grad_norm_([no_grad], 1.0).item() == 0.0 and no_grad.grad is None
    bad = nn.Parameter(tidal.ones(2))
    bad.grad = tidal.tensor([float("inf"), 1.0])
    with pytest.raises(RuntimeError, match="The total norm of order 2.0 for gradients from `parameters` is "
                                           "non-finite, so it cannot be clipped."):
        utils.clip_grad_norm_([bad], 1.0, error_if_nonfinite=True)
    assert not np.isfinite(utils.clip_grad_norm_([bad], 1.0).item())
    with pytest.warns(FutureWarning, match="clip_grad_norm` is now deprecated"):
        utils.clip_grad_norm(ours, 1.0)
    with pytest.warns(UserWarning, match="`parameters` is an empty generator"):
        utils.clip_grad_norm_(iter([]), 1.0)


def test_total_norm_and_clip_with_norm():
    rng = np.random.default_rng(2)
    ours, theirs = grads_pair(rng, [(4, 4), (3,)], scale=5.0)
    total = utils.get_total_norm([p.grad for p in ours])
    ref_total = torch.nn.utils.get_total_norm([q.grad for q in theirs])
    assert_close(total, ref_total)
    utils.clip_grads_with_norm_(ours, 2.0, total)
    torch.nn.utils.clip_grads_with_norm_(theirs, 2.0, ref_total)
    for p, q in zip(ours, theirs):
        assert_close(p.grad, q.grad)


def test_clip_grad_value():
    rng = np.random.default_rng(3)
    ours, theirs = grads_pair(rng, [(4, 3), (6,)])
    utils.clip_grad_value_(ours, 0.4)
    torch.nn.utils.clip_grad_value_(theirs, 0.4)
    for p, q in zip(ours, theirs):
        assert_close(p.grad, q.grad)


def test_clip_grad_on_a_trained_model():
    rng = np.random.default_rng(4)
    ref = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 1)).double()
    mod = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1)).double()
    load_from_torch(mod, ref)
    x = rng.standard_normal((8, 3))
    (mod(tidal.tensor(x)) ** 2).sum().backward()
    (ref(torch.from_numpy(x)) ** 2).sum().backward()
    assert_close(utils.clip_grad_norm_(mod.parameters(), 0.3), torch.nn.utils.clip_grad_norm_(ref.parameters(), 0.3))
    for p, q in zip(mod.parameters(), ref.parameters()):
        assert_close(p.grad, q.grad)


def test_parameters_vector_round_trip():
    ref = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.Linear(2, 2, bias=False))
    mod = nn.Sequential(nn.Linear(3, 2), nn.Linear(2, 2, bias=False))
    load_from_torch(mod, ref)
    vec = utils.parameters_to_vector(mod.parameters())
    assert_close(vec, torch.nn.utils.parameters_to_vector(ref.parameters()))
    new = tidal.arange(vec.numel(), dtype=tidal.float32)
    params = list(mod.parameters())
    utils.vector_to_parameters(new, mod.parameters())
    torch.nn.utils.vector_to_parameters(torch.arange(vec.numel(), dtype=torch.float32), ref.parameters())
    for p, q, original in zip(mod.parameters(), ref.parameters(), params):
        assert p is original and isinstance(p, nn.Parameter) and p.requires_grad
        assert_close(p, q)
    with pytest.raises(TypeError, match="expected tidal.Tensor, but got: list"):
        utils.vector_to_parameters([1.0], mod.parameters())

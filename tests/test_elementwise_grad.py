"""Gradients of every differentiable elementwise op in the op database, against torch (float64).

Generated from tests/op_db.py: the same records that drive the forward tests drive these.
"""
import numpy as np
import pytest
import torch

import tidal
from op_db import OPS, sample

# torch's float64 backward of these uses a float32 constant (1/6, 1/alpha): ours is exact
GRAD_RTOL = {"hardsigmoid": 1e-7, "celu": 1e-7}

CASES = {1: {"2d": [(3, 4)], "0d": [()]},
         2: {"same": [(3, 4), (3, 4)], "broadcast": [(3, 1, 4), (5, 1)]},
         3: {"same": [(3, 4)] * 3, "broadcast": [(3, 1), (1, 4), (4,)]}}

GRAD_CASES = [(info, case) for info in OPS if "float64" in info.dtypes and info.arity in CASES
              for case in CASES[info.arity]]


def _torch_grads(info, arrays, upstream):
    leaves = [torch.tensor(a, requires_grad=True) for a in arrays]
    try:
        out = info.ref(*leaves)
    except Exception as exc:  # noqa: BLE001 - torch refuses these inputs: nothing to compare
        pytest.skip(f"torch refuses: {exc}")
    if not out.dtype.is_floating_point or not out.requires_grad:
        pytest.skip("not differentiable in torch")
    try:
        out.backward(torch.tensor(upstream))
    except RuntimeError as exc:
        pytest.skip(f"torch has no derivative: {exc}")
    return out, [None if leaf.grad is None else
                 torch.zeros_like(leaf) if leaf.grad._is_zerotensor() else leaf.grad for leaf in leaves]


@pytest.mark.parametrize("info,case", GRAD_CASES, ids=[f"{i.name}-{c}" for i, c in GRAD_CASES])
def test_gradient_matches_torch(info, case):
    rng = np.random.default_rng(7)
    reason = info.skip_reason("forward", "float64") or info.skip_reason("grad")
    if reason:
        pytest.skip(reason)
    arrays = [sample(dom, shape, "float64", rng) for dom, shape in zip(info.domains, CASES[info.arity][case])]
    shape = np.broadcast_shapes(*[a.shape for a in arrays])
    upstream = rng.standard_normal(shape)
    out_t, grads_t = _torch_grads(info, arrays, upstream)
    leaves = [tidal.tensor(a, requires_grad=True) for a in arrays]
    out = info.op(*leaves)
    assert out.requires_grad
    out.backward(tidal.tensor(upstream))
    rtol, atol = info.tolerance("float64")
    rtol = max(rtol, GRAD_RTOL.get(info.name, 0))
    for k, (ours, theirs) in enumerate(zip(leaves, grads_t)):
        if theirs is None:
            assert ours.grad is None or not np.any(ours.grad.numpy()), f"input {k} got a gradient torch has not"
            continue
        assert ours.grad is not None, f"input {k} got no gradient"
        assert ours.grad.shape == tuple(theirs.shape)
        np.testing.assert_allclose(ours.grad.numpy(), theirs.numpy(), rtol=max(rtol, 1e-9), atol=max(atol, 1e-9),
                                   equal_nan=True, err_msg=f"{info.name} input {k}")


def test_every_float_op_is_covered():
    assert len({info.name for info, _ in GRAD_CASES}) >= 80


@pytest.mark.parametrize("upstream", [[1.0, 2.0, 3.0, 4.0, 5.0], [float("nan"), 2.0, float("inf"), 4.0, 5.0]])
def test_relu_backward_is_torchs_threshold_backward_under_create_graph(upstream):
    """relu's gradient is one threshold_backward node (masked elements exactly 0, NaN upstream too), which
    itself requires grad under create_graph, with torch's node name and second derivatives."""
    x0 = np.array([-1.5, 0.0, 0.5, 2.0, -3.0])
    found = []
    for lib in (tidal, torch):
        x = lib.tensor(x0, requires_grad=True)
        g, = lib.autograd.grad((x * x).relu(), x, lib.tensor(upstream, dtype=lib.float64), create_graph=True)
        assert g.requires_grad
        mask = lib.autograd.grad(x.relu(), x, lib.tensor(upstream, dtype=lib.float64), create_graph=True)[0]
        g2, = lib.autograd.grad(g.sum(), x)
        found.append((g.detach().numpy(), mask.detach().numpy(), mask.grad_fn.name(), g2.numpy()))
    for ours, theirs in zip(*found):
        if isinstance(ours, str):
            assert ours == theirs == "ThresholdBackwardBackward0"
        else:
            np.testing.assert_array_equal(ours, theirs)

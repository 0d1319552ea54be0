"""torch.utils.checkpoint's other public names on tidal, against real torch: selective activation checkpointing
(create_selective_checkpoint_contexts with a policy or an op list: values and gradients, dropout included, and
torch's errors), the reentrant helpers (CheckpointFunction, detach_variable, check_backward_validity, device
states), and the mode context managers (set_checkpoint_debug_enabled, set_checkpoint_early_stop,
GraphExecGroup)."""
import functools

import numpy as np
import pytest
import torch
import torch.utils.checkpoint as tcp

import tidal
import tidal.compat
from tidal.utils import checkpoint_selective as sel
from tidal.utils.checkpoint import CheckpointFunction, checkpoint
from tidal.utils.checkpoint_reentrant import (DefaultDeviceType, check_backward_validity, detach_variable,
                                              get_device_states, set_device_states)



def _sac_run(lib, ckpt, make_contexts, policy_of, data):
    lib.manual_seed(7)
    w = lib.tensor(data, requires_grad=True)

    def region(t):
        return lib.nn.functional.dropout(t @ t, 0.5).sigmoid() * t

    out = ckpt(region, w, use_reentrant=False, context_fn=functools.partial(make_contexts, policy_of(lib)))
    (out * out).sum().backward()
    return out.detach().numpy(), w.grad.numpy()


@pytest.mark.parametrize("kind", ["policy", "op_list"])
def test_selective_checkpoint_values_and_gradients_as_torch(kind, monkeypatch):
    monkeypatch.setattr(sel, "_warned", True)
    data = np.random.default_rng(0).standard_normal((5, 5)).astype(np.float32)

    def policy_of(lib):
        policy = tcp.CheckpointPolicy if lib is torch else sel.CheckpointPolicy
        mm = lib.ops.aten.mm.default
        if kind == "op_list":
            return [mm]
        return lambda ctx, op, *a, **k: policy.MUST_SAVE if op == mm else policy.PREFER_RECOMPUTE
    want = _sac_run(torch, tcp.checkpoint, tcp.create_selective_checkpoint_contexts, policy_of, data)
    got = _sac_run(tidal.compat, checkpoint, sel.create_selective_checkpoint_contexts, policy_of, data)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_selective_checkpoint_errors_and_one_time_warning(monkeypatch):
    with pytest.raises(ValueError, match="Expected op in `op_list` to be an OpOverload but got: .*change it to "
                                         "`torch.ops.aten.mm.default`"):
        sel.create_selective_checkpoint_contexts([tidal.compat.ops.aten.mm])
    with pytest.raises(ValueError, match="Expected op in `op_list` to be an OpOverload"):
        sel.create_selective_checkpoint_contexts([len])
    with pytest.raises(TypeError, match="policy_fn_or_list must be either a function or a list of ops."):
        sel.create_selective_checkpoint_contexts(3)
    monkeypatch.setattr(sel, "_warned", False)
    with pytest.warns(UserWarning, match="every op of the checkpointed region is recomputed"):
        sel.create_selective_checkpoint_contexts(lambda *a: sel.CheckpointPolicy.MUST_SAVE)
    assert [p.name for p in sel.CheckpointPolicy] == [p.name for p in tcp.CheckpointPolicy]
    assert [p.value for p in sel.CheckpointPolicy] == [p.value for p in tcp.CheckpointPolicy]
    ctx = sel.SelectiveCheckpointContext(is_recompute=False, op_output=1)
    assert (ctx.is_recompute, ctx.op_output) == (False, 1)


def test_reentrant_helpers_as_torch():
    data = np.random.default_rng(1).standard_normal(4).astype(np.float32)
    grads = []
    for lib, fn in ((torch, tcp.CheckpointFunction), (tidal, CheckpointFunction)):
        x = lib.tensor(data, requires_grad=True)
        y = fn.apply(lambda t: t.sin() * t, True, x)
        y.sum().backward()
        grads.append(x.grad.numpy())
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-6)
    a, b = tidal.ones(2, requires_grad=True), tidal.ones(2)
    da, db, n = detach_variable((a, b, 3))
    assert da.requires_grad and not db.requires_grad and da.grad_fn is None and n == 3
    with pytest.raises(RuntimeError, match="Only tuple of tensors is supported. Got Unsupported input type: list"):
        detach_variable([a])
    with pytest.warns(UserWarning, match="None of the inputs have requires_grad=True. Gradients will be None"):
        check_backward_validity([b, 1])
    assert get_device_states(tidal.ones(2), [tidal.zeros(1)]) == tcp.get_device_states(torch.ones(2)) == ([], [])
    set_device_states([], [])
    assert DefaultDeviceType.get_device_type() == tcp.DefaultDeviceType.get_device_type() == "cpu"


def test_compat_names_and_modes_as_torch():
    from tidal.compat._importer import target_name
    assert target_name("torch.utils.checkpoint") == "tidal.utils.checkpoint"
    missing = [n for n in tcp.__all__ if not hasattr(tidal.utils.checkpoint, n)]
    assert missing == []
    x = tidal.randn(3, requires_grad=True)
    contexts = functools.partial(sel.create_selective_checkpoint_contexts, lambda *a: sel.CheckpointPolicy.MUST_SAVE)
    for lib, mod, arg in ((torch, tcp, torch.randn(3, requires_grad=True)), (tidal, tidal.utils.checkpoint, x)):
        with mod.set_checkpoint_debug_enabled(True):
            with pytest.raises(ValueError, match="debug=True is incompatible with non-default context_fn"):
                mod.checkpoint(lambda t: t * 2, arg, use_reentrant=False, context_fn=contexts)
        with mod.set_checkpoint_debug_enabled(False), mod.set_checkpoint_early_stop(False):
            mod.checkpoint(lambda t: t * 2, arg, use_reentrant=False, debug=True).sum().backward()
        with mod.GraphExecGroup():
            with pytest.raises(RuntimeError, match="GraphExecGroup contexts cannot be nested"):
                with mod.GraphExecGroup():
                    pass
    np.testing.assert_allclose(x.grad.numpy(), np.full(3, 2.0))


def _amp_grads(lib, ckpt, reentrant, data):
    lib.manual_seed(0)
    lin1, lin2 = lib.nn.Linear(8, 8), lib.nn.Linear(8, 4)
    x = lib.tensor(data, requires_grad=True)
    with lib.autocast("cpu", dtype=lib.bfloat16):
        h = ckpt(lambda t: lib.relu(lin1(t)), x, use_reentrant=reentrant)
        y = lin2(h)
    assert h.dtype == lib.bfloat16
    y.float().pow(2).sum().backward()
    return x.grad.numpy(), lin1.weight.grad.numpy()


@pytest.mark.parametrize("reentrant", [False, True])
def test_checkpoint_under_autocast_recomputes_in_the_forwards_dtype_as_torch(reentrant):
    data = np.random.default_rng(2).standard_normal((4, 8)).astype(np.float32)
    want = _amp_grads(torch, tcp.checkpoint, reentrant, data)
    got = _amp_grads(tidal.compat, checkpoint, reentrant, data)   # was CheckpointError: recomputed in float32
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-2, atol=1e-3)

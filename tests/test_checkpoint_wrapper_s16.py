"""torch.distributed.algorithms._checkpoint.checkpoint_wrapper on tidal (tidal.utils.checkpoint_wrapper), against
real torch: apply_activation_checkpointing's wrapping (check_fn and a functional auto_wrap_policy), state-dict keys
and parameter names without the wrapper's prefix, loading a plain model's state dict, and training values with
dropout through the non-reentrant, reentrant (keyword arguments packed) and offload wrappers."""
import functools

import numpy as np
import pytest
import torch
import torch.distributed.algorithms._checkpoint.checkpoint_wrapper as theirs

import tidal
import tidal.compat
import tidal.utils.checkpoint_wrapper as ours



def _model(lib):
    class Block(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = lib.nn.Linear(6, 6)
            self.drop = lib.nn.Dropout(0.3)

        def forward(self, x, scale=1.0):
            return self.drop(lib.tanh(self.lin(x))) * scale + x
    lib.manual_seed(0)
    return lib.nn.Sequential(lib.nn.Linear(4, 6), Block(), lib.nn.Sequential(Block(), lib.nn.ReLU()),
                             lib.nn.Linear(6, 2)), Block


def _wrapped(lib, cw, how):
    model, block = _model(lib)
    if how == "check_fn":
        cw.apply_activation_checkpointing(model, check_fn=lambda m: isinstance(m, block))
    elif how == "policy":
        def policy(module, recurse, nonwrapped_numel):
            return True if recurse else isinstance(module, lib.nn.Linear) and nonwrapped_numel > 30
        cw.apply_activation_checkpointing(model, auto_wrap_policy=policy)
    elif how == "reentrant":
        wrap = functools.partial(cw.checkpoint_wrapper, checkpoint_impl=cw.CheckpointImpl.REENTRANT)
        cw.apply_activation_checkpointing(model, checkpoint_wrapper_fn=wrap, check_fn=lambda m: isinstance(m, block))
    else:
        cw.apply_activation_checkpointing(model, checkpoint_wrapper_fn=cw.offload_wrapper,
                                          check_fn=lambda m: isinstance(m, block))
    return model


def _train(lib, cw, how, data):
    model = _wrapped(lib, cw, how)
    opt = lib.optim.SGD(model.parameters(), lr=0.1)
    losses = []
    for step in range(3):
        lib.manual_seed(10 + step)
        h = model[0](lib.tensor(data))
        h = model[1](h, scale=0.5) if how == "reentrant" else model[1](h)
        loss = model[3](model[2](h)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return model, losses


@pytest.mark.parametrize("how", ["check_fn", "policy", "reentrant", "offload"])
def test_wrapping_names_and_training_as_torch(how):
    data = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)
    want_model, want = _train(torch, theirs, how, data)
    got_model, got = _train(tidal.compat, ours, how, data)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert str(got_model) == str(want_model)
    assert list(got_model.state_dict()) == list(want_model.state_dict())
    assert [n for n, _ in got_model.named_parameters()] == [n for n, _ in want_model.named_parameters()]
    wrapper = got_model[1]
    assert [n for n, _ in wrapper.named_parameters()] == [n for n, _ in want_model[1].named_parameters()]
    if how != "policy":
        assert wrapper.lin is wrapper._checkpoint_wrapped_module.lin   # attributes reach the wrapped module


def test_state_dicts_move_between_wrapped_and_plain_models():
    plain, _ = _model(tidal.compat)
    wrapped = _wrapped(tidal.compat, ours, "check_fn")
    with tidal.no_grad():
        for p in plain.parameters():
            p.mul_(3)
    wrapped.load_state_dict(plain.state_dict())
    for (name, a), b in zip(plain.state_dict().items(), wrapped.state_dict().values()):
        assert tidal.equal(a, b), name
    again, _ = _model(tidal.compat)
    again.load_state_dict(wrapped.state_dict())
    assert tidal.equal(again[1].lin.weight, plain[1].lin.weight)
    seq = ours.checkpoint_wrapper(tidal.nn.Sequential(tidal.nn.Linear(2, 2)))
    assert isinstance(seq[0], tidal.nn.Linear)   # indexing reaches the wrapped Sequential
    with pytest.raises(ValueError, match="to be callable or be a pre-defined wrap policy"):
        ours.apply_activation_checkpointing(plain, auto_wrap_policy=3)


def test_torch_import_path():
    from tidal.compat._importer import target_name
    name = target_name("torch.distributed.algorithms._checkpoint.checkpoint_wrapper")
    assert name == "tidal.compat.distributed.algorithms._checkpoint.checkpoint_wrapper"
    import importlib
    mod = importlib.import_module(name)
    for n in ("CheckpointImpl", "CheckpointWrapper", "OffloadWrapper", "ActivationWrapper", "checkpoint_wrapper",
              "offload_wrapper", "apply_activation_checkpointing"):
        assert getattr(mod, n) is getattr(ours, n) and hasattr(theirs, n)

"""tidal.utils.checkpoint and tidal.nn.utils.{parametrize, parametrizations, weight_norm, spectral_norm, prune}
against torch: values, gradients, state-dict keys, and the memory checkpointing saves."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
import torch.nn.utils.prune  # noqa: F401 - torch does not import it with torch.nn.utils

import tidal
import tidal.nn as nn
from tidal.utils.checkpoint import checkpoint, checkpoint_sequential
from nn_helpers import assert_close, load_from_torch


def mlp(lib, width: int, depth: int, dropout: float = 0.0):
    layers = []
    for _ in range(depth):
        layers += [lib.nn.Linear(width, width), lib.nn.Tanh()]
        if dropout:
            layers.append(lib.nn.Dropout(dropout))
    return lib.nn.Sequential(*layers)


# -- checkpoint ----------------------------------------------------------------------------------
@pytest.mark.parametrize("use_reentrant", [False, True])
def test_checkpoint_gradients_match_torch(use_reentrant):
    rng = np.random.default_rng(0)
    ref = mlp(torch, 6, 2).double()
    ours = mlp(tidal, 6, 2).double()
    load_from_torch(ours, ref)
    data = rng.standard_normal((5, 6))
    x, xr = tidal.tensor(data, requires_grad=True), torch.tensor(data, requires_grad=True)
    y = checkpoint(lambda a, s: ours(a) * s, x, 2.0, use_reentrant=use_reentrant)
    yr = torch.utils.checkpoint.checkpoint(lambda a, s: ref(a) * s, xr, 2.0, use_reentrant=use_reentrant)
    assert type(y.grad_fn).__name__ == "CheckpointFunctionBackward0"
    assert_close(y, yr)
    (y ** 2).sum().backward()
    (yr ** 2).sum().backward()
    assert_close(x.grad, xr.grad)
    for (name, p), q in zip(ours.named_parameters(), ref.parameters()):
        assert_close(p.grad, q.grad)


def test_checkpoint_captured_parameters_reach_autograd_grad_and_double_backward():
    rng = np.random.default_rng(1)
    w = tidal.tensor(rng.standard_normal((3, 3)), requires_grad=True)
    x = tidal.tensor(rng.standard_normal((2, 3)), requires_grad=True)
    fn = lambda a: tidal.sin(a @ w)  # noqa: E731 - w is captured, not an argument
    gx, gw = tidal.autograd.grad(checkpoint(fn, x, use_reentrant=False).sum(), (x, w), create_graph=True)
    ex, ew = tidal.autograd.grad(fn(x).sum(), (x, w), create_graph=True)
    assert_close(gx, ex)
    assert_close(gw, ew)
    (second,) = tidal.autograd.grad(gx.sum(), w)
    (expected,) = tidal.autograd.grad(ex.sum(), w)
    assert_close(second, expected)


def test_checkpoint_captured_non_leaf_gets_its_gradient_as_torch():
    w_data, x_data = np.random.default_rng(4).standard_normal((2, 3, 3))
    grads = []
    for lib, ckpt in ((tidal, checkpoint), (torch, torch.utils.checkpoint.checkpoint)):
        w = lib.tensor(w_data, requires_grad=True)
        x = lib.tensor(x_data, requires_grad=True)
        pos = (w * 2).sin()  # computed before the segment, used inside it without being an argument
        y = ckpt(lambda a: (a @ pos).tanh(), x, use_reentrant=False)
        (y.sum() + pos.sum()).backward()
        grads.append((x.grad, w.grad))
    assert_close(grads[0][0], grads[1][0])
    assert_close(grads[0][1], grads[1][1])


def test_checkpoint_recomputes_with_the_same_dropout_mask():
    model = mlp(tidal, 8, 3, dropout=0.5)
    x = tidal.randn(4, 8, requires_grad=True)
    tidal.manual_seed(3)
    y = checkpoint(model, x, use_reentrant=False)
    y.sum().backward()
    got = [p.grad.numpy().copy() for p in model.parameters()] + [x.grad.numpy().copy()]
    model.zero_grad()
    x.grad = None
    tidal.manual_seed(3)
    y2 = model(x)
    y2.sum().backward()
    want = [p.grad.numpy() for p in model.parameters()] + [x.grad.numpy()]
    # the same mask exactly; values to the last bits (a fused group may run on NumPy the first time
    # and compiled the second, while its kernel compiles in the background)
    np.testing.assert_array_equal(y.detach().numpy() == 0, y2.detach().numpy() == 0)
    np.testing.assert_allclose(y.detach().numpy(), y2.detach().numpy(), rtol=1e-5, atol=1e-6)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_checkpoint_tuple_outputs_and_no_grad_passthrough():
    x = tidal.randn(3, requires_grad=True)
    a, b, n = checkpoint(lambda t: (t * 2, t.exp(), 7), x, use_reentrant=False)
    assert n == 7
    (a.sum() + b.sum()).backward()
    assert_close(x.grad, torch.from_numpy(2 + np.exp(x.detach().numpy())))
    with tidal.no_grad():
        out = checkpoint(lambda t: t * 2, x, use_reentrant=False)
    assert out.grad_fn is None
    with pytest.raises(ValueError, match="Unexpected keyword arguments: flag"):
        checkpoint(lambda t, flag: t, x, use_reentrant=True, flag=1)


def test_checkpoint_context_fn_determinism_check_and_warnings():
    import contextlib
    from tidal.utils.checkpoint import CheckpointError
    seen = []

    @contextlib.contextmanager
    def tag(name):
        seen.append(name)
        yield
    x = tidal.randn(3, requires_grad=True)
    y = checkpoint(lambda t: t.sin(), x, use_reentrant=False, context_fn=lambda: (tag("forward"), tag("recompute")))
    y.sum().backward()
    assert seen == ["forward", "recompute"]
    with pytest.raises(ValueError, match="only supported when use_reentrant=False"):
        checkpoint(lambda t: t, x, use_reentrant=True, context_fn=lambda: (tag("a"), tag("b")))
    calls = []

    def shape_changes(t):
        calls.append(1)
        return t[: len(calls) + 1] * 2  # a different shape when recomputed
    with pytest.raises(CheckpointError, match="different metadata than during the forward pass"):
        checkpoint(shape_changes, x, use_reentrant=False).sum().backward()
    with pytest.warns(UserWarning, match="the use_reentrant parameter should be passed explicitly"):
        checkpoint(lambda t: t * 2, x)


def test_checkpoint_sequential_matches_torch_and_lowers_peak_memory():
    rng = np.random.default_rng(2)
    ref = mlp(torch, 32, 16)  # activations (1024 x 32) dominate the weights (32 x 32)
    ours = mlp(tidal, 32, 16)
    load_from_torch(ours, ref)
    data = rng.standard_normal((1024, 32)).astype(np.float32)

    def peak(run) -> tuple:
        ours.zero_grad()
        x = tidal.tensor(data, requires_grad=True)
        tidal.sync()
        tidal.vm.reset_stats()
        run(x).sum().backward()
        tidal.sync()
        return tidal.vm.memory_stats()["peak_bytes"], x.grad, [p.grad for p in ours.parameters()]

    mode = tidal.vm.get_mode()
    tidal.vm.set_mode("sync")  # each release lands at once, so the peak is the program's, not the queue's
    try:
        plain, gx_plain, gp_plain = peak(ours)
        ckpt, gx, gp = peak(lambda x: checkpoint_sequential(ours, 4, x, use_reentrant=False))
    finally:
        tidal.vm.set_mode(mode)
    xr = torch.tensor(data, requires_grad=True)
    torch.utils.checkpoint.checkpoint_sequential(ref, 4, xr, use_reentrant=False).sum().backward()
    assert_close(gx, xr.grad, rtol=1e-4, atol=1e-5)
    for p, q, r in zip(gp, ref.parameters(), gp_plain):
        assert_close(p, q.grad, rtol=1e-4, atol=1e-5)
        assert_close(p, r, rtol=1e-5, atol=1e-6)
    activation = 1024 * 32 * 4  # plain keeps 16 of them for backward, 4 segments about 9 at the peak
    assert ckpt < plain - 4 * activation, (ckpt, plain)


# -- parametrize ----------------------------------------------------------------------------------
def symmetric(lib):
    class Symmetric(lib.nn.Module):
        def forward(self, x):
            return x.triu() + x.triu(1).transpose(-1, -2)

        def right_inverse(self, a):
            return a.triu()
    return Symmetric()


def test_register_parametrization_state_dict_values_and_grads_as_torch():
    P, PT = nn.utils.parametrize, torch.nn.utils.parametrize
    ref = torch.nn.Linear(4, 4).double()
    ours = nn.Linear(4, 4).double()
    load_from_torch(ours, ref)
    weight = ours.weight
    PT.register_parametrization(ref, "weight", symmetric(torch))
    P.register_parametrization(ours, "weight", symmetric(tidal))
    assert type(ours).__name__ == "ParametrizedLinear" and P.type_before_parametrizations(ours) is nn.Linear
    assert P.is_parametrized(ours) and P.is_parametrized(ours, "weight") and not P.is_parametrized(ours, "bias")
    assert ours.parametrizations.weight.original is weight  # the optimizer's parameter keeps its identity
    assert list(ours.state_dict()) == list(ref.state_dict()) == ["bias", "parametrizations.weight.original"]
    assert_close(ours.weight, ref.weight)
    x = rng_pair((3, 4))
    ours(x[0]).sum().backward()
    ref(x[1]).sum().backward()
    assert_close(ours.parametrizations.weight.original.grad, ref.parametrizations.weight.original.grad)
    ours.weight = tidal.ones(4, 4, dtype=tidal.float64) * 2  # assignment goes through right_inverse
    np.testing.assert_allclose(ours.parametrizations.weight.original.detach().numpy(), np.triu(np.full((4, 4), 2.)))
    with P.cached():
        assert ours.weight is ours.weight
    assert ours.weight is not ours.weight
    P.remove_parametrizations(ours, "weight")
    assert type(ours) is nn.Linear and isinstance(ours.weight, nn.Parameter) and not P.is_parametrized(ours)
    np.testing.assert_allclose(ours.weight.detach().numpy(), np.full((4, 4), 2.))
    with pytest.raises(ValueError, match="does not have a parametrization on weight"):
        P.remove_parametrizations(ours, "weight")
    with pytest.raises(ValueError, match="does not have a parameter, a buffer, or a parametrized element"):
        P.register_parametrization(ours, "nope", symmetric(tidal))


def rng_pair(shape, seed=0):
    data = np.random.default_rng(seed).standard_normal(shape)
    return tidal.tensor(data), torch.tensor(data)


def test_transfer_parametrizations_shares_the_originals():
    P = nn.utils.parametrize
    source, target = nn.Linear(3, 3), nn.Linear(3, 3)
    P.register_parametrization(source, "weight", symmetric(tidal))
    P.transfer_parametrizations_and_params(source, target)
    assert P.is_parametrized(target, "weight") and not P.is_parametrized(target, "bias")
    with tidal.no_grad():
        source.parametrizations.weight.original.mul_(2)
    np.testing.assert_array_equal(target.weight.detach().numpy(), source.weight.detach().numpy())


def test_parametrization_checks_shape_unless_unsafe():
    class Flatten(nn.Module):
        def forward(self, x):
            return x.reshape(-1)
    with pytest.raises(ValueError, match="may not change the shape"):
        nn.utils.parametrize.register_parametrization(nn.Linear(2, 3), "weight", Flatten())
    m = nn.utils.parametrize.register_parametrization(nn.Linear(2, 3), "weight", Flatten(), unsafe=True)
    assert m.weight.shape == (6,)


@pytest.mark.parametrize("dim", [0, 1, None])
def test_weight_norm_parametrization_as_torch(dim):
    ref = torch.nn.utils.parametrizations.weight_norm(torch.nn.Conv1d(3, 4, 2).double(), dim=dim)
    ours = nn.utils.parametrizations.weight_norm(nn.Conv1d(3, 4, 2).double(), dim=dim)
    assert list(ours.state_dict()) == list(ref.state_dict())
    load_from_torch(ours, ref)
    x, xr = rng_pair((2, 3, 5))
    assert_close(ours(x), ref(xr))
    ours(x).square().sum().backward()
    ref(xr).square().sum().backward()
    for name in ("original0", "original1"):
        assert_close(getattr(ours.parametrizations.weight, name).grad, getattr(ref.parametrizations.weight, name).grad)


def test_spectral_norm_parametrization_as_torch():
    ref = torch.nn.utils.parametrizations.spectral_norm(torch.nn.Linear(5, 3).double())
    ours = nn.utils.parametrizations.spectral_norm(nn.Linear(5, 3).double())
    assert list(ours.state_dict()) == list(ref.state_dict()) == [
        "bias", "parametrizations.weight.original", "parametrizations.weight.0._u", "parametrizations.weight.0._v"]
    load_from_torch(ours, ref)
    x, xr = rng_pair((2, 5))
    for _ in range(2):  # training forwards run a power iteration each
        y, yr = ours(x), ref(xr)
        assert_close(y, yr)
    y.sum().backward()
    yr.sum().backward()
    assert_close(ours.parametrizations.weight.original.grad, ref.parametrizations.weight.original.grad)
    assert_close(ours.parametrizations.weight[0]._u, ref.parametrizations.weight[0]._u)
    ours.eval(), ref.eval()
    assert_close(ours(x), ref(xr))
    # power iteration estimates the top singular value from below (by up to ~12% for close singular
    # values, so the normalized weight's is >= 1, not ~1): torch's normalized weight is the reference
    sigma = np.linalg.svd(ours.weight.detach().numpy(), compute_uv=False)[0]
    sigma_ref = np.linalg.svd(ref.weight.detach().numpy(), compute_uv=False)[0]
    assert abs(sigma - sigma_ref) < 1e-9 and sigma >= 1 - 1e-9


@pytest.mark.parametrize("orthogonal_map", ["matrix_exp", "cayley", "householder"])
@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5)])
def test_orthogonal_as_torch(orthogonal_map, shape):
    ref = torch.nn.Linear(shape[1], shape[0]).double()
    ours = nn.Linear(shape[1], shape[0]).double()
    load_from_torch(ours, ref)
    torch.nn.utils.parametrizations.orthogonal(ref, orthogonal_map=orthogonal_map)
    nn.utils.parametrizations.orthogonal(ours, orthogonal_map=orthogonal_map)
    assert list(ours.state_dict()) == list(ref.state_dict())
    load_from_torch(ours, ref)  # `base` completes non-square weights with random columns: take torch's
    w = ours.weight.detach().numpy()
    small = min(shape)
    gram = w.T @ w if shape[0] >= shape[1] else w @ w.T
    np.testing.assert_allclose(gram, np.eye(small), atol=1e-10)
    assert_close(ours.weight, ref.weight, rtol=1e-7, atol=1e-9)
    x, xr = rng_pair((2, shape[1]))
    ours(x).square().sum().backward()
    ref(xr).square().sum().backward()
    assert_close(ours.parametrizations.weight.original.grad, ref.parametrizations.weight.original.grad,
                 rtol=1e-6, atol=1e-8)


# -- the hook-based norms ---------------------------------------------------------------------------
def test_old_weight_norm_and_spectral_norm_as_torch():
    with pytest.warns(FutureWarning):
        ours = nn.utils.weight_norm(nn.Linear(4, 3).double(), dim=0)
    with warnings.catch_warnings():  # torch warns once per process: not ours to check
        warnings.simplefilter("ignore")
        ref = torch.nn.utils.weight_norm(torch.nn.Linear(4, 3).double(), dim=0)
    assert set(ours.state_dict()) == set(ref.state_dict()) == {"bias", "weight_g", "weight_v"}
    load_from_torch(ours, ref)
    x, xr = rng_pair((2, 4))
    assert_close(ours(x), ref(xr))
    ours(x).sum().backward()
    ref(xr).sum().backward()
    assert_close(ours.weight_g.grad, ref.weight_g.grad)
    nn.utils.remove_weight_norm(ours)
    torch.nn.utils.remove_weight_norm(ref)
    assert set(dict(ours.named_parameters())) == {"weight", "bias"}
    assert_close(ours.weight, ref.weight)
    with pytest.raises(ValueError, match="weight_norm of 'weight' not found in"):
        nn.utils.remove_weight_norm(ours)

    ours = nn.utils.spectral_norm(nn.Linear(4, 3).double())
    ref = torch.nn.utils.spectral_norm(torch.nn.Linear(4, 3).double())
    assert set(ours.state_dict()) == set(ref.state_dict()) == {"bias", "weight_orig", "weight_u", "weight_v"}
    load_from_torch(ours, ref)
    for _ in range(2):
        assert_close(ours(x), ref(xr))
    ours(x).sum().backward()
    ref(xr).sum().backward()
    assert_close(ours.weight_orig.grad, ref.weight_orig.grad)
    assert_close(ours.weight_u, ref.weight_u)
    with pytest.raises(RuntimeError, match="Cannot register two spectral_norm hooks"):
        nn.utils.spectral_norm(ours)
    nn.utils.remove_spectral_norm(ours)
    torch.nn.utils.remove_spectral_norm(ref)
    assert_close(ours.weight, ref.weight)


# -- prune ----------------------------------------------------------------------------------------
def pruned_pair(shape=(6, 5)):
    ref = torch.nn.Linear(shape[1], shape[0]).double()
    ours = nn.Linear(shape[1], shape[0]).double()
    load_from_torch(ours, ref)
    return ours, ref


def test_l1_and_ln_structured_iterative_pruning_as_torch():
    prune, tprune = nn.utils.prune, torch.nn.utils.prune
    ours, ref = pruned_pair()
    prune.l1_unstructured(ours, "weight", amount=0.3)
    tprune.l1_unstructured(ref, "weight", amount=0.3)
    assert list(ours.state_dict()) == list(ref.state_dict()) == ["bias", "weight_orig", "weight_mask"]
    assert_close(ours.weight_mask, ref.weight_mask)
    prune.ln_structured(ours, "weight", amount=2, n=2, dim=0)
    tprune.ln_structured(ref, "weight", amount=2, n=2, dim=0)
    prune.l1_unstructured(ours, "weight", amount=3)
    tprune.l1_unstructured(ref, "weight", amount=3)
    assert isinstance(ours._forward_pre_hooks[next(iter(ours._forward_pre_hooks))], prune.PruningContainer)
    assert_close(ours.weight_mask, ref.weight_mask)
    x, xr = rng_pair((2, 5))
    assert_close(ours(x), ref(xr))
    ours(x).sum().backward()
    ref(xr).sum().backward()
    assert_close(ours.weight_orig.grad, ref.weight_orig.grad)
    assert prune.is_pruned(ours)
    prune.remove(ours, "weight")
    tprune.remove(ref, "weight")
    assert list(ours.state_dict()) == list(ref.state_dict()) == ["bias", "weight"] and not prune.is_pruned(ours)
    assert_close(ours.weight, ref.weight)
    with pytest.raises(ValueError, match="has to be pruned before pruning can be removed"):
        prune.remove(ours, "weight")


def test_global_custom_random_identity_and_errors():
    prune, tprune = nn.utils.prune, torch.nn.utils.prune
    (a, ar), (b, br) = pruned_pair((4, 3)), pruned_pair((3, 5))
    prune.global_unstructured([(a, "weight"), (b, "weight")], prune.L1Unstructured, amount=10)
    tprune.global_unstructured([(ar, "weight"), (br, "weight")], tprune.L1Unstructured, amount=10)
    assert_close(a.weight_mask, ar.weight_mask)
    assert_close(b.weight_mask, br.weight_mask)
    prune.custom_from_mask(a, "bias", mask=tidal.tensor([1.0, 0.0, 1.0, 0.0]))
    assert a.bias.detach().numpy()[1] == 0 and "bias_mask" in a.state_dict()
    m = prune.random_unstructured(nn.Linear(10, 10), "weight", amount=0.25)
    assert int((m.weight_mask == 0).sum()) == 25
    m = prune.identity(nn.Linear(3, 3), "weight")
    assert int(m.weight_mask.sum()) == 9
    with pytest.raises(ValueError, match="should either be a float in the range"):
        prune.l1_unstructured(nn.Linear(3, 3), "weight", amount=1.5)
    with pytest.raises(ValueError, match="should be smaller than the number of parameters"):
        prune.l1_unstructured(nn.Linear(3, 3), "weight", amount=10)
    failed = nn.Linear(3, 3)
    with pytest.raises(ValueError):
        prune.l1_unstructured(failed, "weight", amount=10)
    assert set(failed.state_dict()) == {"weight", "bias"}  # a failed prune leaves the module as it was
    with pytest.raises(ValueError, match="Structured pruning can only be applied to multidimensional"):
        prune.ln_structured(nn.Linear(3, 3), "bias", amount=1, n=2, dim=0)

"""tidal.func and tidal.autograd.functional against torch.func and torch.autograd.functional: values,
nesting (per-sample gradients with vmap(grad(f)), hessian = jacfwd(jacrev)), structures and errors."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
import torch.func as TF

import tidal
from tidal import func as F
from tidal.func import autograd_functional as AF
from nn_helpers import assert_close, load_from_torch

pytestmark = pytest.mark.filterwarnings("ignore:tidal.func.vmap. per-op batching rules are missing")


def arrays(*shapes, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s) for s in shapes]


def both(*arrs):
    return tuple(tidal.tensor(a) for a in arrs), tuple(torch.tensor(a) for a in arrs)


def mse(lib):
    def f(w, b, x, y):
        return ((lib.tanh(x @ w.T + b) - y) ** 2).mean()
    return f


def close_tree(a, b, **tol):
    if isinstance(a, (tuple, list)):
        assert isinstance(b, (tuple, list)) and len(a) == len(b)
        for x, y in zip(a, b):
            close_tree(x, y, **tol)
    elif isinstance(a, dict):
        assert set(a) == set(b)
        for k in a:
            close_tree(a[k], b[k], **tol)
    else:
        assert_close(a, b, **tol)


# -- torch.func ---------------------------------------------------------------------------------
def test_per_sample_gradients_equal_a_loop_and_torch():
    (w, b, x, y), (wr, br, xr, yr) = both(*arrays((3, 4), (3,), (6, 4), (6, 3)))
    per_sample = F.vmap(F.grad(mse(tidal), argnums=(0, 1)), in_dims=(None, None, 0, 0))(w, b, x, y)
    ref = TF.vmap(TF.grad(mse(torch), argnums=(0, 1)), in_dims=(None, None, 0, 0))(wr, br, xr, yr)
    close_tree(per_sample, ref)
    assert per_sample[0].shape == (6, 3, 4) and not per_sample[0].requires_grad
    for i in range(6):
        gw, gb = F.grad(mse(tidal), argnums=(0, 1))(w, b, x[i], y[i])
        np.testing.assert_allclose(per_sample[0][i].numpy(), gw.numpy(), rtol=1e-12)
        np.testing.assert_allclose(per_sample[1][i].numpy(), gb.numpy(), rtol=1e-12)


def test_per_sample_gradients_of_a_module_with_functional_call():
    ref = torch.nn.Sequential(torch.nn.Linear(4, 5), torch.nn.Tanh(), torch.nn.Linear(5, 2)).double()
    ours = tidal.nn.Sequential(tidal.nn.Linear(4, 5), tidal.nn.Tanh(), tidal.nn.Linear(5, 2)).double()
    load_from_torch(ours, ref)
    (x,), (xr,) = both(*arrays((7, 4), seed=1))

    def loss(lib, model):
        def f(params, sample):
            return lib.func.functional_call(model, params, (sample.unsqueeze(0),)).square().sum()
        return f
    params = {k: v.detach() for k, v in ours.named_parameters()}
    params_r = {k: v.detach() for k, v in ref.named_parameters()}
    got = F.vmap(F.grad(loss(tidal, ours)), in_dims=(None, 0))(params, x)
    want = TF.vmap(TF.grad(loss(torch, ref)), in_dims=(None, 0))(params_r, xr)
    close_tree(got, want)
    assert ours[0].weight.grad is None  # the module's own parameters are untouched


def test_grad_and_value_has_aux_argnums_and_nesting():
    (x,), (xr,) = both(*arrays((4,), seed=2))
    f = lambda lib: (lambda a: ((a.sin() * a).sum(), a.cos()))  # noqa: E731
    (g, (v, aux)) = F.grad_and_value(f(tidal), has_aux=True)(x)
    (gr, (vr, auxr)) = TF.grad_and_value(f(torch), has_aux=True)(xr)
    close_tree((g, v, aux), (gr, vr, auxr))
    second = F.grad(lambda a: F.grad(lambda b: (b ** 3).sum())(a).sum())(x)
    assert_close(second, 6 * xr)
    with pytest.raises(RuntimeError, match="Expected f\\(\\*args\\) to return a scalar Tensor, got tensor with 1 dims"):
        F.grad(lambda a: a * 2)(x)
    with pytest.raises(RuntimeError, match="Got argnums=3, but only 1 positional inputs"):
        F.grad(lambda a: a.sum(), argnums=3)(x)


def test_grad_sees_through_to_the_callers_autograd():
    w = tidal.tensor([1.0, 2.0, 3.0], requires_grad=True)
    x = tidal.tensor([0.5, -1.0, 2.0])
    g = F.grad(lambda a: (a * w).sin().sum())(x)  # depends on w: stays in the caller's graph
    assert g.requires_grad
    g.sum().backward()
    wr = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    TF.grad(lambda a: (a * wr).sin().sum())(torch.tensor([0.5, -1.0, 2.0])).sum().backward()
    assert_close(w.grad, wr.grad)


def test_vjp_jvp_jacrev_jacfwd_hessian_as_torch():
    (x, y), (xr, yr) = both(*arrays((3,), (2, 3), seed=3))
    f = lambda lib: (lambda a, b: (b @ a.exp(), (a * b).sum(0)))  # noqa: E731
    out, fn = F.vjp(f(tidal), x, y)
    outr, fnr = TF.vjp(f(torch), xr, yr)
    cot = (tidal.ones(2, dtype=tidal.float64), tidal.tensor([1.0, -1.0, 2.0], dtype=tidal.float64))
    cotr = (torch.ones(2, dtype=torch.float64), torch.tensor([1.0, -1.0, 2.0], dtype=torch.float64))
    close_tree(out, outr)
    close_tree(fn(cot), fnr(cotr))
    close_tree(fn(cot), fnr(cotr))  # vjp_fn may be called again
    close_tree(F.jvp(f(tidal), (x, y), (x, y)), TF.jvp(f(torch), (xr, yr), (xr, yr)))
    for ours, theirs in ((F.jacrev, TF.jacrev), (F.jacfwd, TF.jacfwd)):
        close_tree(ours(f(tidal), argnums=(0, 1))(x, y), theirs(f(torch), argnums=(0, 1))(xr, yr))
    g = lambda lib: (lambda a, b: (b @ a.sin()).prod())  # noqa: E731
    close_tree(F.hessian(g(tidal), argnums=(0, 1))(x, y), TF.hessian(g(torch), argnums=(0, 1))(xr, yr))


def test_vmap_dims_nesting_randomness_and_errors():
    (x, y), (xr, yr) = both(*arrays((3, 4), (4, 5), seed=4))
    f = lambda a, b: (a.unsqueeze(-1) * b).sum(0)  # noqa: E731
    for in_dims, out_dims in (((1, 0), 0), ((1, 0), 1), ((0, None), -1)):
        got = F.vmap(f, in_dims=in_dims, out_dims=out_dims)(x, y if in_dims[1] is not None else y[:, :3])
        want = TF.vmap(f, in_dims=in_dims, out_dims=out_dims)(xr, yr if in_dims[1] is not None else yr[:, :3])
        assert_close(got, want)
    nested = F.vmap(F.vmap(lambda a, b: a * b, in_dims=(0, None)), in_dims=(None, 0))(x[0], y[:, 0])
    assert_close(nested, TF.vmap(TF.vmap(lambda a, b: a * b, in_dims=(0, None)), in_dims=(None, 0))(xr[0], yr[:, 0]))
    tree = F.vmap(lambda d: {"s": d["a"] + d["b"][0], "p": (d["a"] * 2,)})({"a": x, "b": (x,)})
    assert_close(tree["s"], 2 * xr) and assert_close(tree["p"][0], 2 * xr)
    with pytest.raises(ValueError, match="Expected all tensors to have the same size in the mapped dimension"):
        F.vmap(f)(x, y)
    with pytest.raises(RuntimeError, match="randomness error mode"):
        F.vmap(lambda a: a + tidal.randn(4, dtype=tidal.float64))(x)
    same = F.vmap(lambda a: a * 0 + tidal.randn(4, dtype=tidal.float64), randomness="same")(x)
    np.testing.assert_array_equal(same[0].numpy(), same[2].numpy())
    different = F.vmap(lambda a: a * 0 + tidal.randn(4, dtype=tidal.float64), randomness="different")(x)
    assert not np.array_equal(different[0].numpy(), different[1].numpy())
    with pytest.raises(ValueError, match="chunk_size should be None or greater than 0"):
        F.vmap(f, chunk_size=0)
    with pytest.raises(ValueError, match="We cannot vmap over non-Tensor arguments"):
        F.vmap(lambda a, n: a * n, in_dims=(0, 0))(x, 3)


def test_vmap_runs_batched_and_warns_once_where_it_loops(monkeypatch):
    import importlib
    vmap_module = importlib.import_module("tidal.func.vmap")  # the module (tidal.func.vmap is the function)
    monkeypatch.setattr(vmap_module, "_warned", set())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        F.vmap(lambda a: a * 2)(tidal.ones(2, 3))  # every op has a batching rule: no loop, no warning
        assert not [w for w in caught if "once per batch element" in str(w.message)]
        F.vmap(lambda a: a + tidal.randn(3), randomness="different")(tidal.ones(2, 3))
        F.vmap(lambda a: a + tidal.randn(3), randomness="different")(tidal.ones(2, 3))
    messages = [str(w.message) for w in caught if "stacking the results" in str(w.message)]
    assert len(messages) == 1


def test_functional_call_ties_weights_restores_state_and_stack_module_state():
    lin = tidal.nn.Linear(3, 2)
    w0 = lin.weight
    new = {"weight": tidal.zeros(2, 3), "bias": tidal.ones(2)}
    out = F.functional_call(lin, new, tidal.ones(4, 3))
    np.testing.assert_array_equal(out.numpy(), np.ones((4, 2)))
    assert lin.weight is w0
    with pytest.raises(RuntimeError, match="Missing key\\(s\\): 'bias'"):
        F.functional_call(lin, {"weight": tidal.zeros(2, 3)}, (tidal.ones(1, 3),), strict=True)
    models = [tidal.nn.Linear(3, 2) for _ in range(4)]
    params, buffers = F.stack_module_state(models)
    assert params["weight"].shape == (4, 2, 3) and params["weight"].requires_grad and params["weight"].grad_fn is None
    x = tidal.randn(5, 3)
    ens = F.vmap(lambda p, b: F.functional_call(models[0], (p, b), (x,)))(params, buffers)
    for k, m in enumerate(models):
        np.testing.assert_allclose(ens[k].detach().numpy(), m(x).detach().numpy(), rtol=1e-6)


# -- torch.autograd.functional -------------------------------------------------------------------
def test_autograd_functional_jacobian_hessian_and_products_as_torch():
    (a, b), (ar, br) = both(*arrays((3,), (3,), seed=5))
    f = lambda x, y: (x.exp() * y, (x * y).sum().reshape(1))  # noqa: E731
    close_tree(AF.jacobian(f, (a, b)), torch.autograd.functional.jacobian(f, (ar, br)))
    single = AF.jacobian(lambda x: x.sin() * 2, a)
    assert isinstance(single, tidal.Tensor)
    assert_close(single, torch.autograd.functional.jacobian(lambda x: x.sin() * 2, ar))
    s = lambda x, y: (x.sin() * y.exp()).sum() * (x * y).sum()  # noqa: E731
    close_tree(AF.hessian(s, (a, b)), torch.autograd.functional.hessian(s, (ar, br)))
    for name in ("vjp", "jvp"):
        ours = getattr(AF, name)(lambda x: x.exp() * x, a, b)
        theirs = getattr(torch.autograd.functional, name)(lambda x: x.exp() * x, ar, br)
        close_tree(ours, theirs)
    for name in ("hvp", "vhp"):
        close_tree(getattr(AF, name)(s, (a, b), (b, a)), getattr(torch.autograd.functional, name)(s, (ar, br), (br, ar)))
    out, g = AF.vjp(s, (a, b))
    assert not out.requires_grad and not g[0].requires_grad


def test_autograd_functional_create_graph_strict_and_errors():
    (a,), (ar,) = both(*arrays((3,), seed=6))
    a.requires_grad_(True)
    ar.requires_grad_(True)
    jac = AF.jacobian(lambda x: x ** 3, a, create_graph=True)
    jac_r = torch.autograd.functional.jacobian(lambda x: x ** 3, ar, create_graph=True)
    assert jac.requires_grad
    jac.sum().backward()
    jac_r.sum().backward()
    assert_close(a.grad, ar.grad)
    with pytest.raises(RuntimeError, match="is independent of input 1. This is not allowed in strict mode"):
        AF.jacobian(lambda x, y: x * 2, (a.detach(), a.detach()), strict=True)
    zeros = AF.jacobian(lambda x, y: x * 2, (a.detach(), a.detach()))[1]
    assert not zeros.numpy().any()
    with pytest.raises(RuntimeError, match="The vector v can only be None if the user-provided function returns"):
        AF.vjp(lambda x: x * 2, a.detach())
    with pytest.raises(TypeError, match="must be either a Tensor or a tuple of Tensors"):
        AF.jacobian(lambda x: x, [a.detach(), 3])


def test_linearize_functionalize_and_batch_norm_replacement():
    (x, t), (xr, tr) = both(*arrays((4,), (4,), seed=7))
    f = lambda a: a.sin() * a.exp()  # noqa: E731
    out, jvp_fn = F.linearize(f, x)
    out_r, jvp_fn_r = TF.linearize(f, xr)
    assert_close(out, out_r)
    assert_close(jvp_fn(t), jvp_fn_r(tr))
    assert F.functionalize(f)(x).numpy().tolist() == f(x).numpy().tolist()
    model = tidal.nn.Sequential(tidal.nn.Linear(3, 3), tidal.nn.BatchNorm1d(3))
    ref = torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.BatchNorm1d(3)).double()
    load_from_torch(model.double(), ref)
    F.replace_all_batch_norm_modules_(model)
    TF.replace_all_batch_norm_modules_(ref)
    assert list(model.state_dict()) == list(ref.state_dict())
    (batch,), (batch_r,) = both(*arrays((5, 3), seed=8))
    model.eval(), ref.eval()
    assert_close(model(batch), ref(batch_r))  # batch statistics even in eval mode


# -- forward mode (jvp, jacfwd, linearize on tidal.autograd.forward_ad) ---------------------------
def test_jvp_nests_forward_over_forward_and_forward_over_reverse():
    (x, u, v), (xr, ur, vr) = both(*arrays((4,), (4,), (4,), seed=9))
    f = lambda lib: (lambda a: a.sin() * a.exp() + a.pow(3))  # noqa: E731
    second = F.jvp(lambda a: F.jvp(f(tidal), (a,), (v,))[1], (x,), (u,))
    second_r = TF.jvp(lambda a: TF.jvp(f(torch), (a,), (vr,))[1], (xr,), (ur,))
    close_tree(second, second_r)
    s = lambda a: (a.sin() * a.exp()).sum() * a.square().sum()  # noqa: E731
    hvp = F.jvp(F.grad(s), (x,), (v,))[1]
    close_tree(hvp, TF.jvp(TF.grad(s), (xr,), (vr,))[1])
    close_tree(hvp, AF.hvp(s, x, v)[1])  # the same product through autograd.functional
    rev_over_fwd = F.grad(lambda a: F.jvp(s, (a,), (v,))[1])(x)
    close_tree(rev_over_fwd, TF.grad(lambda a: TF.jvp(s, (a,), (vr,))[1])(xr))


def test_jvp_pytrees_has_aux_closures_and_errors():
    (x, y, tx, ty), (xr, yr, txr, tyr) = both(*arrays((3,), (2, 3), (3,), (2, 3), seed=10))
    f = lambda d: ({"p": d["a"] * d["b"], "s": (d["b"] @ d["a"].exp(),)}, d["a"].sum())  # noqa: E731
    got = F.jvp(f, ({"a": x, "b": y},), ({"a": tx, "b": ty},), has_aux=True)
    want = TF.jvp(f, ({"a": xr, "b": yr},), ({"a": txr, "b": tyr},), has_aux=True)
    close_tree(got, want)
    assert not got[1]["p"].requires_grad and not got[2].requires_grad
    w = tidal.tensor([0.5, -1.0, 2.0], dtype=tidal.float64, requires_grad=True)
    wr = torch.tensor([0.5, -1.0, 2.0], dtype=torch.float64, requires_grad=True)
    tangent = F.jvp(lambda a: (a * w).sin(), (x,), (tx,))[1]  # depends on w: stays in the caller's graph
    assert tangent.requires_grad
    tangent.sum().backward()
    TF.jvp(lambda a: (a * wr).sin(), (xr,), (txr,))[1].sum().backward()
    assert_close(w.grad, wr.grad)
    const = F.jvp(lambda a: a.detach() * 2, (x,), (tx,))[1]  # no dependence: zeros, as torch
    assert_close(const, torch.zeros(3, dtype=torch.float64))
    with pytest.raises(RuntimeError, match="The output of f is independent of the inputs. This is not allowed with "
                                           "strict=True"):
        F.jvp(lambda a: a.detach() * 2, (x,), (tx,), strict=True)
    assert_close(F.jvp(lambda a: a * 2, (x,), (tx,), strict=True)[1], 2 * txr)
    with pytest.raises(RuntimeError, match="Expected primals and tangents to have the same shape"):
        F.jvp(lambda a: a, (x,), (ty,))
    with pytest.raises(RuntimeError, match="Expected primals to be a tuple"):
        F.jvp(lambda a: a, x, (tx,))
    with pytest.raises(RuntimeError, match="Expected primals to only contain Tensors, got <class 'int'>"):
        F.jvp(lambda a, n: a * n, (x, 3), (tx, 1))
    with pytest.raises(RuntimeError, match="expected f\\(\\*primals\\) to return only tensors, got unsupported type"):
        F.jvp(lambda a: 3, (x,), (tx,))
    with tidal.no_grad():  # under no_grad nothing that jvp returns requires grad, as in torch
        p, t = F.jvp(lambda a: a * w, (x,), (tx,))
    assert not p.requires_grad and not t.requires_grad


def test_jacfwd_as_torch_argnums_aux_and_caller_graph():
    (x, y), (xr, yr) = both(*arrays((3,), (2, 3), seed=11))
    f = lambda lib: (lambda a, b: ((b * a).softmax(-1), {"n": (a * a).sum()}))  # noqa: E731
    for argnums in (0, 1, (0, 1)):
        close_tree(F.jacfwd(f(tidal), argnums=argnums)(x, y), TF.jacfwd(f(torch), argnums=argnums)(xr, yr))
    g = lambda a, b: ((a.exp() * b).sum(0), a.cos())  # noqa: E731
    close_tree(F.jacfwd(g, has_aux=True)(x, y), TF.jacfwd(g, has_aux=True)(xr, yr))
    indep = F.jacfwd(lambda a, b: b * 2, argnums=0)(x, y)
    assert indep.shape == (2, 3, 3) and not indep.numpy().any()
    w = tidal.tensor([1.0, 2.0, 3.0], dtype=tidal.float64, requires_grad=True)
    wr = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64, requires_grad=True)
    F.jacfwd(lambda a: (a * w).tanh())(x).sum().backward()
    TF.jacfwd(lambda a: (a * wr).tanh())(xr).sum().backward()
    assert_close(w.grad, wr.grad)
    close_tree(F.jacfwd(F.jacfwd(lambda a: a.sin().prod()))(x), TF.jacfwd(TF.jacfwd(lambda a: a.sin().prod()))(xr))


def test_linearize_reuses_one_linearization_for_many_tangents():
    (x, y, t1, t2), (xr, yr, t1r, t2r) = both(*arrays((4,), (4,), (4,), (4,), seed=12))
    f = lambda a, b: (a.sin() * b, (a @ b).exp())  # noqa: E731
    out, jvp_fn = F.linearize(f, x, y)
    out_r, jvp_fn_r = TF.linearize(f, xr, yr)
    close_tree(out, out_r)
    close_tree(jvp_fn(t1, t2), jvp_fn_r(t1r, t2r))
    close_tree(jvp_fn(t2, t1), jvp_fn_r(t2r, t1r))
    with pytest.raises(RuntimeError, match="to have the same argspec as the primals"):
        jvp_fn(t1)
    with pytest.raises(RuntimeError, match="tangent:1 with shape .* doesn't match the shape .* of the corresponding "
                                           "primal"):
        jvp_fn(t1, t2[:3])
    with pytest.raises(RuntimeError, match="tangent:0 with dtype .* doesn't match the dtype"):
        jvp_fn(t1.float(), t2)


def test_autograd_functional_forward_mode_jacobian_as_torch():
    (a, b), (ar, br) = both(*arrays((3,), (2, 3), seed=13))
    f = lambda x, y: ((y * x.exp()).sum(0), x.sum())  # noqa: E731
    got = AF.jacobian(f, (a, b), vectorize=True, strategy="forward-mode")
    want = torch.autograd.functional.jacobian(f, (ar, br), vectorize=True, strategy="forward-mode")
    close_tree(got, want)
    assert_close(AF.jacobian(lambda x: x.sin(), a, vectorize=True, strategy="forward-mode"),
                 torch.autograd.functional.jacobian(lambda x: x.sin(), ar, vectorize=True, strategy="forward-mode"))
    with pytest.raises(RuntimeError, match="`strict=True` and `vectorized=True` are not supported together"):
        AF.jacobian(f, (a, b), vectorize=True, strict=True)
    with pytest.raises(RuntimeError, match='`strict=True` and `strategy="forward-mode"` are not supported together'):
        AF.jacobian(f, (a, b), vectorize=True, strict=True, strategy="forward-mode")

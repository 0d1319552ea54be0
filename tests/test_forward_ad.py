"""Forward-mode AD (tidal.autograd.forward_ad) against torch.autograd.forward_ad: primals and tangents of
many ops, in-place writes on dual tensors, levels and errors; forward-over-reverse and reverse-over-forward."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
import torch._decomp.decompositions_for_jvp  # noqa: F401
import torch.autograd.forward_ad as tfw

# (imported above, before tidal holds tensors: torch's first make_dual loads these by scripting torch's own
# source, and CPython 3.11's ast.parse fails with "AST constructor recursion depth mismatch" when a garbage
# collection frees tidal tensors in the middle of it)
import tidal
from tidal.autograd import forward_ad as fw
from nn_helpers import assert_close


def arrays(*shapes, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s) for s in shapes]


def run_dual(lib, fwd, fn, primals, tangents):
    """(primal, tangent) of fn(lib, *duals) unpacked inside one dual level of `fwd`."""
    with fwd.dual_level():
        duals = [fwd.make_dual(lib.tensor(p), lib.tensor(t)) for p, t in zip(primals, tangents)]
        return fwd.unpack_dual(fn(lib, *duals))


def check(fn, *shapes, seed=0, consts=()):
    """fn's primal and tangent at random dual inputs of `shapes` equal torch's (float64)."""
    primals, tangents = arrays(*shapes, seed=seed), arrays(*shapes, seed=seed + 100)
    ours = run_dual(tidal, fw, lambda L, *d: fn(L, *d, *[L.tensor(c) for c in consts]), primals, tangents)
    theirs = run_dual(torch, tfw, lambda L, *d: fn(L, *d, *[L.tensor(c) for c in consts]), primals, tangents)
    assert_close(ours.primal, theirs.primal.detach())
    assert theirs.tangent is not None and ours.tangent is not None
    assert_close(ours.tangent, theirs.tangent.detach())


OPS = {
    "elementwise": (lambda L, a, b: (a.sin() * b.exp() + a.tanh() / (b.abs() + 1)) ** 2 - a.sigmoid().log(),
                    (3, 4), (3, 4)),
    "broadcast_div_pow": (lambda L, a, b: (a / (b * b + 1)) ** 3 + L.sqrt(b * b + 2), (2, 3, 4), (4,)),
    "activations": (lambda L, a: L.nn.functional.gelu(a) + L.relu(a) * 2 + L.nn.functional.silu(a), (5, 3)),
    "matmul": (lambda L, a, b: a @ b, (3, 4), (4, 2)),
    "batched_matmul": (lambda L, a, b: L.matmul(a, b).sum(0), (2, 3, 4), (2, 4, 5)),
    "sum_mean_var": (lambda L, a: a.sum(1) + a.mean(1) * a.var(1), (4, 5)),
    "logsumexp_amax_prod": (lambda L, a: a.logsumexp(-1) + a.amax(-1) + a.prod(-1), (3, 4)),
    "norm": (lambda L, a: a.norm() * a, (3, 2)),
    "softmax": (lambda L, a: L.softmax(a, -1) * 3 + L.log_softmax(a, 0), (3, 5)),
    "conv2d": (lambda L, x, w, b: L.nn.functional.conv2d(x, w, b, padding=1, stride=(1, 2)),
               (2, 3, 6, 5), (4, 3, 3, 3), (4,)),
    "max_pool": (lambda L, x: L.nn.functional.max_pool2d(x, 2), (1, 2, 4, 4)),
    "layer_norm": (lambda L, x, w: L.nn.functional.layer_norm(x, (4,), w), (3, 4), (4,)),
    "cross_entropy": (lambda L, x, t: L.nn.functional.cross_entropy(x, t), (5, 3), (5, 3)),
    "views": (lambda L, a: a.t().reshape(2, 6).unsqueeze(0).expand(3, 2, 6).permute(2, 0, 1)[1:4, :, 0], (3, 4)),
    "slicing": (lambda L, a: a[1:, ::2] * a[:-1, 1::2], (4, 6)),
    "cat_stack_where": (lambda L, a, b: L.where(a > 0, L.cat([a, b], 0)[:3], L.stack([a, b]).sum(0)), (3, 2), (3, 2)),
}


@pytest.mark.parametrize("name", list(OPS))
def test_ops_primal_and_tangent_as_torch(name):
    fn, *shapes = OPS[name]
    check(fn, *shapes)


def test_indexing_gather_and_index_select_with_constant_indices():
    idx = np.array([[2, 0], [1, 1], [0, 3]])
    check(lambda L, a, i: a.gather(1, i) + a[i[:, 0]].sum(1, keepdim=True), (3, 4), consts=(idx,))
    check(lambda L, a, i: a.index_select(0, i) * 2, (4, 3), consts=(np.array([3, 0, 0]),))


def test_complex_tangents_follow_torchs_convention():
    rng = np.random.default_rng(7)
    x, t = (rng.standard_normal((2, 3)) + 1j * rng.standard_normal((2, 3)) for _ in range(2))
    r, rt = rng.standard_normal(3), rng.standard_normal(3)
    for fn, (p, tp) in (
            (lambda L, a: a * a.exp() + a.conj() * a.abs(), (x, t)),  # holomorphic and not
            (lambda L, a: (a * a).sum(0), (x, t)),
            (lambda L, a: (a * L.tensor(1 + 2j)).exp(), (r, rt))):  # real in, complex out
        ours = run_dual(tidal, fw, fn, [p], [tp])
        theirs = run_dual(torch, tfw, fn, [p], [tp])
        assert_close(ours.tangent, theirs.tangent.detach(), rtol=1e-12, atol=1e-12)


def test_dual_tensor_values_tangent_identity_and_unpack_of_non_duals():
    x, t = tidal.randn(3), tidal.randn(3)
    with fw.dual_level() as level:
        assert level == 0
        d = fw.make_dual(x, t)
        primal, tangent = fw.unpack_dual(d)
        assert tangent is t  # torch hands back the very tangent
        np.testing.assert_array_equal(primal.numpy(), x.numpy())
        assert fw.unpack_dual(x).tangent is None and fw.unpack_dual(x).primal is x
        assert fw.unpack_dual(d.detach()).tangent is None  # detach drops the tangent, as in torch
        assert fw.unpack_dual(d.argmax()).tangent is None  # integer results carry none
        assert_close(fw.unpack_dual(d.sign()).tangent, torch.zeros(3, dtype=torch.float32))
        unpacked = fw.unpack_dual(d)
        assert isinstance(unpacked, fw.UnpackedDualTensor) and unpacked._fields == ("primal", "tangent")
        y = d * 2
    assert fw.unpack_dual(y).tangent is None  # the level is gone
    assert fw.unpack_dual(d).tangent is None


def test_in_place_writes_on_and_into_dual_tensors_as_torch():
    (x, t, b), (tx,) = arrays((4,), (4,), (4,), seed=3), arrays((4,), seed=4)

    def program(lib, fwd):
        out = []
        with fwd.dual_level():
            d = fwd.make_dual(lib.tensor(x), lib.tensor(t))
            d.mul_(2).add_(lib.tensor(b).exp())
            out.append(fwd.unpack_dual(d).tangent.clone())
            d[1:3].mul_(d[0:2].detach() + 1)  # a write through a view of a dual
            out.append(fwd.unpack_dual(d).tangent.clone())
            z = lib.zeros(4, dtype=lib.float64)
            z.copy_(fwd.make_dual(lib.tensor(b), lib.tensor(tx)).sin())  # a plain tensor becomes dual
            out.append(fwd.unpack_dual(z).tangent.clone())
            w = lib.zeros(5, dtype=lib.float64)
            w[1:] = fwd.make_dual(lib.tensor(b), lib.tensor(tx)) ** 2
            out.append(fwd.unpack_dual(w).tangent.clone())
        return out

    for ours, theirs in zip(program(tidal, fw), program(torch, tfw)):
        assert_close(ours, theirs)


def test_levels_and_errors_as_torch():
    x, t = tidal.randn(3), tidal.randn(3)
    with pytest.raises(RuntimeError, match="no level exists, make sure to enter_dual_level\\(\\) first"):
        fw.make_dual(x, t)
    with pytest.raises(RuntimeError, match="Dual level must be a positive number"):
        fw.exit_dual_level()
    assert fw.enter_dual_level() == 0
    try:
        with pytest.raises(RuntimeError, match="Nested forward mode AD is not supported at the moment"):
            fw.enter_dual_level()
        with pytest.raises(RuntimeError, match="Nested forward mode AD is not supported at the moment"):
            with fw.dual_level():
                pass
        with pytest.raises(RuntimeError, match="Tensor is of size \\[3\\] while the given forward gradient is of size "
                                               "\\[4\\]"):
            fw.make_dual(x, tidal.randn(4))
        with pytest.raises(ValueError, match="Expected primal to be floating point or complex, but got: torch.int64"):
            fw.make_dual(tidal.arange(3), tidal.arange(3))
        with pytest.raises(ValueError, match="Expected tangent to be floating point or complex, but got: torch.int64"):
            fw.make_dual(x, tidal.arange(3))
        d = fw.make_dual(x, t)
        with pytest.raises(RuntimeError, match="already has a forward gradient at the same level 0 is not supported"):
            fw.make_dual(d * 2, t)
        with pytest.raises(RuntimeError, match="Invalid level given to _make_dual"):
            fw.make_dual(x, t, level=5)
        with pytest.raises(TypeError, match="argument 'dual' \\(position 1\\) must be Tensor, not float"):
            fw.unpack_dual(3.0)
        with pytest.raises(RuntimeError, match="not the last one that was created"):
            fw.exit_dual_level(level=3)
        wide = fw.make_dual(x, t.double())  # torch keeps a tangent of another float dtype as it is
        assert fw.unpack_dual(wide).tangent.dtype is tidal.float64
    finally:
        fw.exit_dual_level()
    with fw.dual_level():  # a fresh level after the last one exited
        assert fw.unpack_dual(fw.make_dual(x, t) * 3).tangent is not None

    @fw.dual_level()
    def decorated():
        return fw.unpack_dual(fw.make_dual(x, t).exp()).tangent
    assert_close(decorated(), torch.from_numpy(t.numpy() * np.exp(x.numpy())))


def test_reverse_over_forward_tangent_is_differentiable_in_the_primal_and_parameters():
    (x, t, w), _ = arrays((3,), (3,), (3,), seed=5), None
    results = []
    for lib, fwd in ((tidal, fw), (torch, tfw)):
        wt = lib.tensor(w, requires_grad=True)
        xt = lib.tensor(x, requires_grad=True)
        with fwd.dual_level():
            d = fwd.make_dual(xt, lib.tensor(t))
            primal, tangent = fwd.unpack_dual((d * wt).sin().sum())
            assert tangent.requires_grad and primal.requires_grad
            (tangent + primal).backward()
        results.append((wt.grad, xt.grad, primal.detach(), tangent.detach()))
    for ours, theirs in zip(*results):
        assert_close(ours, theirs)


def test_forward_over_reverse_hessian_vector_product():
    (x, v), (xr, vr) = [tidal.tensor(a) for a in arrays((4,), (4,), seed=6)], \
        [torch.tensor(a) for a in arrays((4,), (4,), seed=6)]
    f = lambda a: (a.sin() * a.exp()).sum() * a.pow(2).sum()  # noqa: E731
    results = []
    for lib, fwd, a, t in ((tidal, fw, x, v), (torch, tfw, xr, vr)):
        with fwd.dual_level():
            d = fwd.make_dual(a.clone().requires_grad_(True), t)
            (g,) = lib.autograd.grad(f(d), d, create_graph=True)
            results.append(fwd.unpack_dual(g).tangent.detach())
    assert_close(results[0], results[1])


def test_tangents_are_eager_so_later_in_place_writes_leave_them_as_torch():
    (x, t), _ = arrays((3,), (3,), seed=7), None
    results = []
    for lib, fwd in ((tidal, fw), (torch, tfw)):
        with fwd.dual_level():
            d = fwd.make_dual(lib.tensor(x), lib.tensor(t))
            kept, lost = d * 3, d.sin()  # sin saves d, which the next line overwrites
            d.mul_(2)
            results.append([fwd.unpack_dual(r).tangent for r in (kept, lost, d)])
    for ours, theirs in zip(*results):
        assert_close(ours, theirs)


def test_unpack_dual_runs_no_backward_hooks_and_leaves_grads_alone():
    calls = []
    w = tidal.randn(3, requires_grad=True)
    w.register_hook(lambda g: calls.append("w"))
    with fw.dual_level():
        h = fw.make_dual(tidal.randn(3), tidal.randn(3)) * w
        h.retain_grad()
        h.register_hook(lambda g: calls.append("h"))
        h.grad_fn.register_hook(lambda gi, go: calls.append("node"))
        y = h.sin().sum()
        assert fw.unpack_dual(y).tangent is not None
        assert calls == [] and h.grad is None and w.grad is None  # torch's forward mode runs no hooks
        y.backward()  # the hooks are all still there for a real backward
    assert sorted(calls) == ["h", "node", "w"] and h.grad is not None and w.grad is not None


def test_a_jvp_costs_the_products_of_torchs_forward_mode():
    """Eager tangents: one product per layer for the primal and one for its tangent (t @ w), whether or not the
    weights require grad, as torch's forward mode."""
    x, t = tidal.randn(8, 16), tidal.randn(8, 16)
    for requires_grad in (False, True):
        ws = [tidal.randn(16, 16).requires_grad_(requires_grad) for _ in range(3)]
        with tidal.profiler.profile() as prof, fw.dual_level():
            y = fw.make_dual(x, t)
            for w in ws:
                y = (y @ w).tanh()
            fw.unpack_dual(y.softmax(-1)).tangent.sum().item()
        assert prof.key_averages()["matmul"]["kernels"] == 6


def test_custom_function_needs_jvp_as_torch():
    class Twice(tidal.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    class TwiceJvp(Twice):
        @staticmethod
        def jvp(ctx, t):
            return t * 2

    x, t = tidal.randn(3), tidal.randn(3)
    with fw.dual_level():
        d = fw.make_dual(x, t)
        assert_close(fw.unpack_dual(TwiceJvp.apply(d).sin()).tangent,
                     torch.from_numpy(2 * t.numpy() * np.cos(2 * x.numpy())), rtol=1e-5, atol=1e-6)
        with pytest.raises(NotImplementedError, match="You must implement the jvp function for custom "
                                                      "autograd.Function to use it with forward mode AD."):
            fw.unpack_dual(Twice.apply(d) + 1)
        other = Twice.apply(tidal.randn(3, requires_grad=True))  # not between a dual and the result: fine
        assert fw.unpack_dual(other * d).tangent is not None


def _no_grad_tangents(lib, fwd, x, t, w):
    """Tangents of ops run under no_grad inside a dual level (a dual made under no_grad too)."""
    with fwd.dual_level():
        d = fwd.make_dual(lib.tensor(x), lib.tensor(t))
        with lib.no_grad():
            y = lib.mul(d.exp(), 2)
            z = lib.matmul(y.reshape(2, 3), w)
            e = fwd.make_dual(lib.tensor(x), lib.tensor(t))
            u = e.sin()
        v = lib.tanh(z)  # grad mode back on: still carries the tangent
        return [fwd.unpack_dual(r).tangent for r in (y, z, u, v)], z.grad_fn


def test_no_grad_keeps_tangents_as_torch():
    x, t, w = arrays((6,), (6,), (3, 4), seed=3)
    ours, node = _no_grad_tangents(tidal, fw, x, t, tidal.tensor(w, requires_grad=True))
    theirs, _ = _no_grad_tangents(torch, tfw, x, t, torch.tensor(w, requires_grad=True))
    for a, b in zip(ours, theirs):
        assert a is not None and not a.requires_grad
        assert_close(a, b.detach())
    # no gradient path through the no_grad op towards the weight (the graph serves the tangent only)
    assert all(nxt is None or type(nxt).__name__ != "AccumulateGrad" for nxt, _ in node.next_functions)


def test_inference_mode_drops_tangents_as_torch():
    x, t = tidal.randn(3), tidal.randn(3)
    with fw.dual_level():
        d = fw.make_dual(x, t)
        with tidal.inference_mode():
            y = tidal.mul(d, 2)
        assert fw.unpack_dual(y).tangent is None
        assert_close(fw.unpack_dual(tidal.mul(d, 2)).tangent, torch.from_numpy(2 * t.numpy()))


def test_no_grad_outside_levels_records_nothing():
    x = tidal.randn(3, requires_grad=True)
    with fw.dual_level():
        d = fw.make_dual(tidal.randn(3), tidal.randn(3))
        with tidal.no_grad():
            y = tidal.mul(x, 2)  # no tangent among the inputs: nothing recorded, as without a level
    assert not y.requires_grad and y.grad_fn is None
    del d


def test_no_grad_keeps_tangents_through_operator_fast_path():
    x, t = tidal.randn(3), tidal.randn(3)
    with fw.dual_level():
        d = fw.make_dual(x, t)
        with tidal.no_grad():
            d * 2  # caches the plan: the next one takes the fast path
            y = d * 2
        assert fw.unpack_dual(y).tangent is not None


def test_compat_names():
    import tidal.compat as ctorch
    import importlib
    mod = importlib.import_module("tidal.compat.autograd").forward_ad
    assert tidal.autograd.forward_ad is fw
    assert mod.make_dual is fw.make_dual and ctorch.autograd.forward_ad.dual_level is fw.dual_level
    for name in ("CUDAGraph", "graph", "make_graphed_callables", "graph_pool_handle"):
        assert hasattr(ctorch.cuda, name) and hasattr(ctorch.cuda.graphs, name)
    with pytest.raises(NotImplementedError, match="CUDA graph capture"):
        ctorch.cuda.CUDAGraph()
    with pytest.raises(NotImplementedError, match="CUDA graph capture"):
        ctorch.cuda.graph(None)
    with pytest.raises(NotImplementedError, match="CUDA graph capture"):
        ctorch.cuda.make_graphed_callables(lambda a: a, (tidal.ones(1),))
    with pytest.raises(NotImplementedError, match="CUDA graph capture"):
        ctorch.cuda.graph_pool_handle()


# -- requires_grad of dual tensors and of what is computed from them, as torch reports it ----------------
def _flags(lib, fwd):
    """{name: (requires_grad, has a tangent)} of dual tensors and results in many grad modes, in `lib`."""
    (x, t, w, b), _ = arrays((3,), (3,), (3,), (3,), seed=21), None
    flags = {}

    def note(name, tensor):
        flags[name] = (tensor.requires_grad, fwd.unpack_dual(tensor).tangent is not None)

    with fwd.dual_level():
        wt = lib.tensor(w, requires_grad=True)
        d = fwd.make_dual(lib.tensor(x), lib.tensor(t))
        note("dual", d)
        note("dual*2", d * 2)
        note("chain", (d.sin() + d).exp().sum())
        note("dual*w", d * wt)
        note("view", d[1:])
        note("view of view", d[1:].unsqueeze(0).t())
        note("detach", d.detach())
        c = lib.tensor(b)
        c.mul_(d)
        note("in-place into plain", c)
        c.add_(wt)
        note("then in-place of a real input", c)
        v = lib.tensor(b).clone()
        v[1:].copy_(d[:2])
        note("write through a view", v)
        note("dual of a real primal", fwd.make_dual(wt, lib.tensor(t)))
        note("its result", fwd.make_dual(wt, lib.tensor(t)).cos())
        note("tangent requires grad", fwd.make_dual(lib.tensor(x), lib.tensor(t, requires_grad=True)))
        with lib.no_grad():
            note("no_grad: dual*w", d * wt)
            note("no_grad: dual of real primal", fwd.make_dual(wt, lib.tensor(t)))
            with lib.enable_grad():
                r = wt * 2
            r.add_(d)
            note("no_grad: in-place of a dual into a real result", r)
            with lib.enable_grad():
                note("enable_grad: dual*2", d * 2)
                note("enable_grad: dual*w", d * wt)
        lin = lib.nn.Linear(3, 2).double()
        note("linear(dual)", lin(d))
        with lib.no_grad():
            note("no_grad: linear(dual)", lin(d))
        primal, tangent = fwd.unpack_dual(d * wt)
        note("unpacked primal", primal)
        flags["unpacked tangent"] = tangent.requires_grad
    return flags


def test_requires_grad_of_duals_and_results_as_torch():
    ours, theirs = _flags(tidal, fw), _flags(torch, tfw)
    assert ours == theirs
    assert theirs["dual"] == (False, True) and theirs["dual*w"] == (True, True)  # (the cases mean something)


def _errors(lib, fwd):
    """torch's refusals of dual-only results: (type name, message) per call."""
    (x, t), _ = arrays((3,), (3,), seed=22), None
    found = []

    def attempt(fn):
        try:
            fn()
            found.append(None)
        except Exception as err:  # noqa: BLE001  (the type is compared too)
            found.append((type(err).__name__, str(err)))

    with fwd.dual_level():
        d = fwd.make_dual(lib.tensor(x), lib.tensor(t))
        y = (d * 2).sin().sum()
        attempt(lambda: y.backward())
        attempt(lambda: lib.autograd.grad(y, [d]))
        attempt(lambda: lib.autograd.grad(y, [d], allow_unused=True))
        attempt(lambda: lib.autograd.backward([y]))
        attempt(lambda: y.retain_grad())
        attempt(lambda: y.register_hook(lambda g: g))
        attempt(lambda: d.numpy())
    return found


def test_backward_on_dual_only_results_raises_as_torch():
    ours, theirs = _errors(tidal, fw), _errors(torch, tfw)
    assert ours == theirs
    assert theirs[0] == ("RuntimeError", "element 0 of tensors does not require grad and does not have a grad_fn")


def test_requires_grad_setters_on_dual_tensors_as_torch():
    (x, t), _ = arrays((3,), (3,), seed=23), None
    results = []
    for lib, fwd in ((tidal, fw), (torch, tfw)):
        with fwd.dual_level():
            d = fwd.make_dual(lib.tensor(x), lib.tensor(t))
            d.requires_grad = False  # (already False: torch lets a leaf say so)
            y = d * 3
            y.requires_grad_(False)
            assert not d.requires_grad and not y.requires_grad
            d.requires_grad_()  # now its gradient is wanted, and its tangent stays
            out = (d * d).sum()
            primal, tangent = fwd.unpack_dual(out)
            assert d.requires_grad and out.requires_grad and tangent is not None
            out.backward()
            results.append((d.grad, tangent.detach(), primal.detach()))
    for ours, theirs in zip(*results):
        assert_close(ours, theirs)


def test_reverse_over_forward_with_a_plain_primal_and_parameters():
    (x, t, w), _ = arrays((3,), (3,), (3, 3), seed=24), None
    results = []
    for lib, fwd in ((tidal, fw), (torch, tfw)):
        wt = lib.tensor(w, requires_grad=True)
        with fwd.dual_level():
            d = fwd.make_dual(lib.tensor(x), lib.tensor(t))  # the primal wants no gradient
            h = (wt @ d).tanh()
            primal, tangent = fwd.unpack_dual(h)
            assert h.requires_grad and tangent.requires_grad and not d.requires_grad
            (g,) = lib.autograd.grad(tangent.pow(2).sum(), wt)
        results.append((g, tangent.detach(), primal.detach()))
    for ours, theirs in zip(*results):
        assert_close(ours, theirs)


def test_transforms_results_and_requires_grad_as_torch():
    (x, t), _ = arrays((4,), (4,), seed=25), None
    f = lambda a: (a.sin() * a.exp()).sum() * a.pow(2).sum()  # noqa: E731
    results = []
    for lib in (tidal, torch):
        a, v = lib.tensor(x), lib.tensor(t)
        out, jv = lib.func.jvp(f, (a,), (v,))
        jac, hess = lib.func.jacfwd(f)(a), lib.func.hessian(f)(a)
        results.append((out, jv, jac, hess, [r.requires_grad for r in (out, jv, jac, hess)]))
    for ours, theirs in zip(results[0], results[1]):
        if isinstance(theirs, list):
            assert ours == theirs
        else:
            assert_close(ours, theirs.detach())


def test_dual_only_tensors_are_leaves_as_torch():
    (x, t), _ = arrays((3,), (3,), seed=26), None
    for lib, fwd in ((tidal, fw), (torch, tfw)):
        with fwd.dual_level():
            d = fwd.make_dual(lib.tensor(x), lib.tensor(t))
            assert d.is_leaf and (d * 2).is_leaf and not (d * lib.ones(3, requires_grad=True)).is_leaf
            assert "grad_fn" not in repr(d) and "grad_fn" not in repr(d.exp())
            lib.optim.SGD([d], lr=0.1)  # (an optimizer takes leaves only)


def _after_exit(lib, fwd):
    """requires_grad and grad_fn presence of dual-only tensors once the level exits, and of later ops on them."""
    (x, t), _ = arrays((3,), (3,), seed=27), None
    with fwd.dual_level():
        d = fwd.make_dual(lib.tensor(x), lib.tensor(t))
        y, v = d * 2, d[1:]
        c = lib.zeros(3, dtype=lib.float64)
        c.add_(d)
    z = y * 3
    c.mul_(2)
    found = [(r.requires_grad, r.grad_fn is None) for r in (d, y, v, c, z)]
    y.requires_grad_()
    (y * y).sum().backward()
    return found, y.grad


def test_dual_only_tensors_are_plain_after_the_level_exits_as_torch():
    (ours, ours_grad), (theirs, theirs_grad) = _after_exit(tidal, fw), _after_exit(torch, tfw)
    assert ours == theirs
    assert_close(ours_grad, theirs_grad)


def _custom_flags(lib, fwd):
    """requires_grad of a custom Function's output on a dual, with and without an input that requires grad."""
    class Scale(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, w):
            ctx.save_for_backward(x, w)
            ctx.save_for_forward(x, w)
            return x * w

        @staticmethod
        def backward(ctx, g):
            x, w = ctx.saved_tensors
            return g * w, g * x

        @staticmethod
        def jvp(ctx, x_t, w_t):
            x, w = ctx.saved_tensors
            return x_t * w + (0 if w_t is None else x * w_t)

    (x, t, w), _ = arrays((3,), (3,), (3,), seed=28), None
    with fwd.dual_level():
        d = fwd.make_dual(lib.tensor(x), lib.tensor(t))
        plain = Scale.apply(d, lib.tensor(w))
        real = Scale.apply(d, lib.tensor(w, requires_grad=True))
        found = [(r.requires_grad, fwd.unpack_dual(r).tangent) for r in (plain, real)]
    return found


def test_custom_function_outputs_report_requires_grad_as_torch():
    ours, theirs = _custom_flags(tidal, fw), _custom_flags(torch, tfw)
    assert [f for f, _ in ours] == [f for f, _ in theirs] == [False, True]
    for (_, a), (_, b) in zip(ours, theirs):
        assert_close(a, b.detach())


def test_grad_of_dual_only_tensors_reads_as_a_leafs():
    (x, t), _ = arrays((3,), (3,), seed=29), None
    for lib, fwd in ((tidal, fw), (torch, tfw)):
        with fwd.dual_level(), warnings.catch_warnings():
            warnings.simplefilter("error")  # torch warns on .grad of a non-leaf only
            d = fwd.make_dual(lib.tensor(x), lib.tensor(t))
            assert d.grad is None and (d * 2).grad is None
        with fwd.dual_level(), pytest.warns(UserWarning, match="not a leaf Tensor is being accessed"):
            d = fwd.make_dual(lib.tensor(x), lib.tensor(t))
            assert (d * lib.tensor(x, requires_grad=True)).grad is None

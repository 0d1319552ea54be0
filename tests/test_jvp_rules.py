"""Forward-mode AD of PyTorch's op database: for every op torch differentiates in forward mode
(`op.supports_forward_ad`), tidal's eager tangents (forward_ad dual tensors, autograd/jvp_rules.py) against
torch.func.jvp on the op's float64 samples and its first complex128 one (all for the ops about complex
numbers); plus the rule kinds one by one (elementwise, declared, view, transposed) and their reverse-over-forward."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch._decomp.decompositions_for_jvp  # noqa: F401  (see tests/test_forward_ad.py)

import tidal
import torch_op_db as db
from tidal.autograd import forward_ad as fw
from nn_helpers import assert_close

# Known failures: op id -> reason (strict xfail: an op that passes must leave the list).
_OUTSIDE = ("torch's jvp formula differs from the transpose of its own vjp for tangents outside the op's domain "
            "({}); tidal transposes its backward, which agrees with torch on that domain "
            "(test_transposed_rule_agrees_with_torch_on_the_domain)")
KNOWN: dict[str, str] = {
    "linalg.cholesky": _OUTSIDE.format("non-symmetric or non-Hermitian"),
    "linalg.cholesky_ex": _OUTSIDE.format("non-symmetric or non-Hermitian"),
    "linalg.eigh": _OUTSIDE.format("non-symmetric or non-Hermitian"),
    "triangular_solve": _OUTSIDE.format("A's tangent outside its triangle"),
    "native_batch_norm": "the saved mean and inverse std outputs get no node in tidal, so no tangent",
    "_native_batch_norm_legit": "the saved mean and inverse std outputs get no node in tidal, so no tangent",
    "nn.functional.max_unpool1d": "indices that repeat: torch's jvp keeps one write (the op on the tangent), the "
                                  "transposed backward sums them",
    "nn.functional.max_unpool2d": "as max_unpool1d",
    "nn.functional.max_unpool3d": "as max_unpool1d",
}
LOOSE: dict[str, str] = {}  # non-strict expected failures (none left)


def forward_differentiable(op) -> bool:
    """Whether torch computes the op's jvp in float64 on the CPU (and its OpInfo trusts it)."""
    return (bool(op.supports_forward_ad) and torch.float64 in op.supported_backward_dtypes("cpu")
            and not db.torch_expects_failure(op, "TestFwdGradients", "test_forward_mode_AD"))


def _float_outputs(out) -> list:
    """The floating (or complex) tensors of an output, flattened, None in other places."""
    if isinstance(out, (torch.Tensor, tidal.Tensor)):
        return [out if out.dtype.is_floating_point or out.is_complex() else None]
    if isinstance(out, (list, tuple)):
        return [t for o in out for t in _float_outputs(o)]
    return []


def _substituted(obj, values: dict):
    """A sample's (nested) arguments with the tensors whose ids `values` holds replaced."""
    if isinstance(obj, torch.Tensor):
        return values.get(id(obj), obj)
    if isinstance(obj, (list, tuple)) and not hasattr(obj, "_fields"):
        return type(obj)(_substituted(o, values) for o in obj)
    if isinstance(obj, dict):
        return {k: _substituted(v, values) for k, v in obj.items()}
    return obj


def _torch_jvp(op, sample, leaves: list, tangents: list) -> list:
    """torch.func.jvp of the op at the sample, along `tangents` of its floating tensors `leaves`."""
    def f(*primals):
        values = {id(x): p for x, p in zip(leaves, primals)}
        args = _substituted([sample.input, list(sample.args), dict(sample.kwargs)], values)
        torch.manual_seed(0)
        out = sample.output_process_fn_grad(op.op(args[0], *args[1], **args[2]))
        return tuple(o for o in _float_outputs(out) if o is not None)
    primals = tuple(x.detach() for x in leaves)
    found = torch.func.jvp(f, primals, tuple(tangents))[1]
    # (slogdet's sign: a ZeroTensor; values compared, not torch's lazy conjugate or negative bits)
    return [torch.zeros_like(t) if t._is_zerotensor() else t.resolve_conj().resolve_neg() for t in found]


def _tidal_jvp(op, fn, sample, leaves: list, tangents: list) -> list:
    """tidal's tangents of the op's outputs at the sample: its leaves made dual with `tangents`."""
    memo: dict = {"storage": op.name in db.STORAGE}
    with fw.dual_level():
        for x, t in zip(leaves, tangents):
            memo[id(x)] = fw.make_dual(db.tidal_tensor(x.detach()), db.tidal_tensor(t))
        torch.manual_seed(0)
        out = sample.output_process_fn_grad(db.call(fn, sample, memo))
        outs = [o for o in _float_outputs(out) if o is not None]
        return [fw.unpack_dual(o).tangent for o in outs]


def _samples(op):
    yield from db._samples(op, torch.float64, db.GRAD_SAMPLES, requires_grad=True)
    if torch.complex128 in op.supported_backward_dtypes("cpu"):  # (the first one, all for complex numbers' ops)
        yield from db._samples(op, torch.complex128, db.GRAD_SAMPLES if db.is_complex_op(op) else 1,
                               requires_grad=True)


def check_jvp(op, fn) -> None:
    """tidal's jvp of `op` against torch.func.jvp on its samples (tangents drawn per floating input)."""
    failures = []
    compared = 0
    for sample in _samples(op):
        leaves = [t for t in db._torch_tensors([sample.input, sample.args, sample.kwargs])
                  if t.requires_grad and (t.dtype.is_floating_point or t.is_complex())]
        if not leaves or db._is_random(op, sample):
            continue
        gen = torch.Generator().manual_seed(2)
        tangents = [torch.randn(x.shape, dtype=x.dtype, generator=gen) for x in leaves]
        try:
            want = _torch_jvp(op, sample, leaves, tangents)
        except Exception:  # noqa: BLE001 - a sample torch.func.jvp itself refuses is no test of tidal
            continue
        compared += 1
        try:
            got = _tidal_jvp(op, fn, sample, leaves, tangents)
            assert len(got) == len(want), f"{len(got)} floating outputs, torch {len(want)}"
            for k, (g, w) in enumerate(zip(got, want)):
                assert g is not None, f"tangent[{k}]: None where torch gives one"
                db.compare(g.resolve_conj().resolve_neg(), w, True, f"tangent[{k}]")
        except db.Unconvertible:
            continue
        except Exception as exc:  # noqa: BLE001 - any failure is a finding
            failures.append(f"{db._describe(sample)}: {type(exc).__name__}: {exc}"[:600])
    if not compared:
        pytest.skip("no sample to compare (random results, or torch.func.jvp refuses them all)")
    db._record("jvp", db.op_id(op), failures)


db.RESULTS.setdefault("jvp", {})


def _params():
    out = []
    for op, fn in db.PRESENT:
        if not forward_differentiable(op):
            continue
        name = db.op_id(op)
        marks = [pytest.mark.xfail(strict=True, reason=KNOWN[name])] if name in KNOWN else \
            [pytest.mark.xfail(strict=False, reason=LOOSE[name])] if name in LOOSE else []
        out.append(pytest.param(op, fn, id=name, marks=marks))
    return out


@pytest.mark.parametrize("op, fn", _params())
def test_jvp_matches_torch_func_jvp(op, fn):
    check_jvp(op, fn)


# -- the rule kinds, one by one ---------------------------------------------------------------------------------
def _both(program, *arrays_):
    """program(lib, fwd, *tensors) run in tidal and in torch on the same float64 values."""
    ours = program(tidal, fw, *[tidal.tensor(a) for a in arrays_])
    theirs = program(torch, torch.autograd.forward_ad, *[torch.tensor(a) for a in arrays_])
    return ours, theirs


def _rand(*shapes, seed=0, complex_=False):
    rng = np.random.default_rng(seed)
    if complex_:
        return [rng.standard_normal(s) + 1j * rng.standard_normal(s) for s in shapes]
    return [rng.standard_normal(s) for s in shapes]


PROGRAMS = {
    # elementwise (one rule from the backward formulas), broadcasting both ways, a number operand, in place
    "elementwise": lambda L, d, e: (d.reshape(3, 1) * e[:4] + 2.0).sin().pow(3) / (e[:4].exp() + 1),
    "in place": lambda L, d, e: d.clone().mul_(e[:3]).tanh_(),
    "where and clamp": lambda L, d, e: L.where(d > 0, d, e[:3]).clamp(-0.5, 0.5),
    # declared: products, reductions, joins, copies
    "matmul": lambda L, d, e: d.reshape(1, 3) @ e.reshape(3, 2) + L.mv(e.reshape(2, 3), d).sum(),
    "sum and mean": lambda L, d, e: d.reshape(3, 1).expand(3, 2).sum(0) * e.reshape(3, 2).mean(1, keepdim=True),
    "cat and stack": lambda L, d, e: L.cat([d, e, d]) + L.stack([e, e]).sum(0).repeat(2),
    "copies": lambda L, d, e: d.to(L.float32).double().clone() * e[:3],
    # views: transpose, slice, select, expand, unsqueeze, diagonal
    "views": lambda L, d, e: (e.reshape(2, 3).t()[1:, :] * d[1:].unsqueeze(1)).diagonal() + d.expand(2, 3)[1, 2],
    "rows": lambda L, d, e: L.softmax(d * e[:3], 0) + L.log_softmax(e.reshape(2, 3), 1)[1] +
    L.logsumexp(e.reshape(2, 3), 0) + L.logsumexp(e.reshape(2, 3), 1, keepdim=True).sum(0),
    "picks": lambda L, d, e: e.reshape(2, 3).gather(1, L.tensor([[2, 0, 0], [1, 1, 2]])).sum(0) +
    e.index_select(0, L.tensor([5, 0, 5])) * d,
    # transposed backward: everything else
    "transposed": lambda L, d, e: L.cumprod(d, 0) + L.sort(e[:3] - d)[0] + L.nn.functional.normalize(d * e[3:], dim=0) +
    (d * e[3:]).prod(0) + L.nn.functional.gelu(d).flip(0),
    "logcumsumexp": lambda L, d, e: L.logcumsumexp(e.reshape(2, 3) * 3, 1) + L.logcumsumexp(d, 0),
}


def _dual_program(body):
    def program(L, fwd, x, tx, y, ty):
        with fwd.dual_level():
            d, e = fwd.make_dual(x, tx), fwd.make_dual(y, ty)
            return fwd.unpack_dual(body(L, d, e))
    return program


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_rule_kinds_give_torchs_primal_and_tangent(name):
    ours, theirs = _both(_dual_program(PROGRAMS[name]), *_rand((3,), (3,), (6,), (6,), seed=4))
    assert_close(ours.primal, theirs.primal.detach())
    assert_close(ours.tangent, theirs.tangent.detach())
    assert not ours.tangent.requires_grad and not theirs.tangent.requires_grad


# (the rows of softmax, log_softmax, logsumexp and logcumsumexp left out: torch's own reverse pass over their jvp
# refuses, an Exp output written in place; an in-place op that saves its original self left out too: tidal saves
# that copy detached, so neither its second derivative nor this one flows through it)
REVERSE_PROGRAMS = dict(PROGRAMS, **{"in place": lambda L, d, e: d.clone().mul_(2).tanh_() + (d * e[:3]).exp_()})
del REVERSE_PROGRAMS["logcumsumexp"], REVERSE_PROGRAMS["rows"]


@pytest.mark.parametrize("name", list(REVERSE_PROGRAMS))
def test_reverse_over_forward_through_each_rule_kind(name):
    """Where the primals require grad, the tangent requires grad as torch's does, and its gradient is torch's."""
    x, tx, y, ty = _rand((3,), (3,), (6,), (6,), seed=5)
    results = []
    for lib, fwd in ((tidal, fw), (torch, torch.autograd.forward_ad)):
        xs, ys = lib.tensor(x, requires_grad=True), lib.tensor(y, requires_grad=True)
        with fwd.dual_level():
            out = REVERSE_PROGRAMS[name](lib, fwd.make_dual(xs, lib.tensor(tx)), fwd.make_dual(ys, lib.tensor(ty)))
            tangent = fwd.unpack_dual(out).tangent
        results.append((tangent.requires_grad, lib.autograd.grad((tangent * tangent).sum(), (xs, ys),
                                                                 allow_unused=True) if tangent.requires_grad else ()))
    (ours_rg, ours), (theirs_rg, theirs) = results
    assert ours_rg == theirs_rg
    for g, w in zip(ours, theirs):
        if w is not None:
            assert_close(g if g is not None else tidal.zeros(tuple(w.shape), dtype=tidal.float64), w)


def test_complex_elementwise_ops_take_torchs_conjugation_convention():
    body = lambda L, d, e: d.abs() * d.exp() + (d * e[:3].conj()).angle() + L.sgn(e[:3]) * d.reciprocal()  # noqa
    ours, theirs = _both(_dual_program(body), *_rand((3,), (3,), (6,), (6,), seed=6, complex_=True))
    assert_close(ours.tangent, theirs.tangent.detach(), rtol=1e-12, atol=1e-12)


def test_views_of_a_tangent_laid_out_otherwise_than_its_primal():
    x, tx = _rand((4, 3), (3, 4), seed=7)

    def program(L, fwd, x, tx):
        with fwd.dual_level():
            d = fwd.make_dual(x.t(), tx)  # primal strides (1, 3), tangent (4, 1)
            return [fwd.unpack_dual(v).tangent for v in (d[1:, ::2], d.unsqueeze(0).expand(2, 3, 4), d.t())]
    for ours, theirs in zip(*_both(program, x, tx)):
        assert_close(ours, theirs)


def test_transposed_rule_agrees_with_torch_on_the_domain():
    """cholesky and eigh read a symmetric matrix, triangular_solve one triangle: for tangents in those domains the
    transpose of tidal's backward gives torch's jvp (off them, torch's formula picks one extension of its own)."""
    a, t, b = _rand((4, 4), (4, 4), (4, 2), seed=8)
    spd, sym = a @ a.T + 4 * np.eye(4), (t + t.T) / 2

    def program(L, fwd, spd, sym, b):
        with fwd.dual_level():
            chol = L.linalg.cholesky(fwd.make_dual(spd, sym))
            vals = L.linalg.eigh(fwd.make_dual(spd, sym), UPLO="U")[0]
            tri = L.triangular_solve(b, fwd.make_dual(spd.triu(), sym.triu()))[0]
            return [fwd.unpack_dual(r).tangent for r in (chol, vals, tri)]
    for ours, theirs in zip(*_both(program, spd, sym, b)):
        assert_close(ours, theirs)


def test_custom_function_outputs_mix_with_eager_tangents():
    class Cube(tidal.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_forward(x)
            return x ** 3

        @staticmethod
        def jvp(ctx, t):
            (x,) = ctx.saved_tensors
            return 3 * x * x * t

    x, t = _rand((3,), (3,), seed=9)
    with fw.dual_level():
        d = fw.make_dual(tidal.tensor(x), tidal.tensor(t))
        mixed = (Cube.apply(d).sin() * d).sum()  # a custom output, an op on it, then an op with the dual itself
        tangent = fw.unpack_dual(mixed).tangent
    want = np.sum(np.cos(x ** 3) * 3 * x ** 2 * t * x + np.sin(x ** 3) * t)
    assert_close(tangent, torch.tensor(want))


def test_no_grad_tangents_record_nothing_and_levels_free_them():
    x, t, w = _rand((2, 3), (2, 3), (3, 3), seed=10)
    with fw.dual_level():
        d = fw.make_dual(tidal.tensor(x), tidal.tensor(t))
        with tidal.no_grad():
            y = (d @ tidal.tensor(w, requires_grad=True)).relu()
        tangent = fw.unpack_dual(y).tangent
        assert not tangent.requires_grad and tangent.grad_fn is None
        node = y.grad_fn
        assert "_fw_out" in node.__dict__
    assert "_fw_out" not in node.__dict__  # the level's tangents go with it
    assert_close(tangent, torch.tensor(np.where(x @ w > 0, t @ w, 0.0)))


def test_recording_outside_a_level_never_reaches_forward_ad(monkeypatch):
    """Zero cost without forward AD: graph.record asks for tangents only while a level is live."""
    from tidal.autograd import graph

    def refuse(*args):
        raise AssertionError("forward AD work outside a dual level")
    monkeypatch.setattr(graph, "_carry_duals", refuse)
    x = tidal.randn(3, 3, requires_grad=True)
    ((x @ x).relu().sum() + x.t()[0].exp().sum()).backward()
    assert x.grad is not None


def test_func_jvp_outermost_is_eager_nested_stays_torchs():
    """tidal.func.jvp takes the eager tangents when no other transform is live (torch's product count: two per
    layer), the lazy level when nested; results require grad as torch's do."""
    x, t = tidal.randn(8, 16, dtype=tidal.float64), tidal.randn(8, 16, dtype=tidal.float64)
    ws = [tidal.randn(16, 16, dtype=tidal.float64) for _ in range(3)]

    def mlp(h):
        for w in ws:
            h = (h @ w).tanh()
        return h
    with tidal.profiler.profile() as prof:
        out, tangent = tidal.func.jvp(mlp, (x,), (t,))
        tangent.sum().item()
    assert prof.key_averages()["matmul"]["kernels"] == 6
    xr, tr, wsr = torch.tensor(x.numpy()), torch.tensor(t.numpy()), [torch.tensor(w.numpy()) for w in ws]

    def mlp_r(h):
        for w in wsr:
            h = (h @ w).tanh()
        return h
    assert_close(tangent, torch.func.jvp(mlp_r, (xr,), (tr,))[1])
    f = lambda lib: (lambda a: (a.sin() * a.exp()).sum(-1))  # noqa: E731
    nested = tidal.func.jvp(lambda a: tidal.func.jvp(f(tidal), (a,), (t,))[1], (x,), (t,))[1]
    nested_r = torch.func.jvp(lambda a: torch.func.jvp(f(torch), (a,), (tr,))[1], (xr,), (tr,))[1]
    assert nested.requires_grad == nested_r.requires_grad
    assert_close(nested, nested_r)


@pytest.mark.parametrize("name", ["softmax", "log_softmax", "logsumexp", "logcumsumexp", "gather"])
def test_grad_of_func_jvp_through_row_rules_as_torch_func(name):
    """Reverse over forward through the declared row rules, as torch.func computes it (torch.autograd's own
    forward_ad refuses a reverse pass over these jvps)."""
    x, v = _rand((2, 3), (2, 3), seed=11)
    ops = {"softmax": lambda L, z: z.softmax(1), "log_softmax": lambda L, z: z.log_softmax(0),
           "logsumexp": lambda L, z: z.logsumexp(1), "logcumsumexp": lambda L, z: z.logcumsumexp(1),
           "gather": lambda L, z: z.gather(1, L.tensor([[2, 2], [0, 1]]))}
    results = []
    for L in (tidal, torch):
        vt = L.tensor(v)
        f = lambda z: ops[name](L, z)  # noqa: E731
        results.append(L.func.grad(lambda a: (L.func.jvp(f, (a,), (vt,))[1] ** 2).sum() * a.cos().sum())(L.tensor(x)))
    assert_close(results[0], results[1])


def test_views_of_a_differentiable_tangent_laid_out_otherwise():
    """A tangent that requires grad, laid out otherwise than its (non-dense) primal: views of it stay
    differentiable in it, as torch's."""
    x, tx = _rand((4, 6), (3, 4), seed=12)
    results = []
    for L, fwd in ((tidal, fw), (torch, torch.autograd.forward_ad)):
        v = L.tensor(tx, requires_grad=True)
        with fwd.dual_level():
            d = fwd.make_dual(L.tensor(x)[:, ::2].t(), v)  # primal strides (2, 6): not dense
            tangent = fwd.unpack_dual(d[1:, ::2].unsqueeze(0).expand(2, 2, 2)).tangent
        results.append((tangent.detach(), L.autograd.grad((tangent * tangent).sum(), v)[0]))
    for ours, theirs in zip(*results):
        assert_close(ours, theirs)

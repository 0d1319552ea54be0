"""Gradients of the products (matmul family, einsum, tensordot, trace, kron, cross) and of sort/topk/kthvalue.

Each op runs on the same float64 leaves (contiguous or transposed) in tidal and torch, backward takes the
same random upstream gradient, and `.grad` is compared. Then: double backward against
torch.autograd.grad(create_graph=True), finite differences, grad_fn names, outputs that take no gradient,
out=/in-place rules, and the named-tuple return types.
"""
from __future__ import annotations

import pickle

import numpy as np
import pytest

import tidal
from tidal.ops.dispatch import return_types

torch = pytest.importorskip("torch")

TOL = {"float32": (2e-4, 1e-5), "float64": (1e-9, 1e-12)}


# -- helpers ----------------------------------------------------------------------------------
def make_array(rng, shape, dtype: str = "float64", transposed: bool = False) -> np.ndarray:
    """Random data; `transposed` gives a non-contiguous array (the transpose of a contiguous one)."""
    if transposed and len(shape) >= 2:
        return rng.normal(0, 1, shape[::-1]).astype(dtype).T
    return rng.normal(0, 1, shape).astype(dtype)


def leaves(arrays, grads=None) -> tuple:
    """The same leaves in tidal (keeping the arrays' strides) and torch; `grads` says which require grad."""
    grads = grads or [True] * len(arrays)
    ours = [tidal.from_numpy(a).requires_grad_(g) for a, g in zip(arrays, grads)]
    theirs = [torch.from_numpy(a.copy()).requires_grad_(g) for a, g in zip(arrays, grads)]
    return ours, theirs


def compare(fn, arrays, rng, dtype: str = "float64", grads=None, name: str = "") -> tuple:
    """Run `fn(lib, *leaves)` in both libraries, backward one random upstream gradient, compare grads."""
    ours, theirs = leaves(arrays, grads)
    out, tout = fn(tidal, *ours), fn(torch, *theirs)
    assert tuple(out.shape) == tuple(tout.shape), name
    upstream = rng.normal(0, 1, tuple(tout.shape)).astype(dtype)
    out.backward(tidal.tensor(upstream))
    tout.backward(torch.from_numpy(upstream))
    rtol, atol = TOL[dtype]
    for k, (x, tx) in enumerate(zip(ours, theirs)):
        if not tx.requires_grad:
            assert x.grad is None, name
            continue
        assert x.grad is not None and tuple(x.grad.shape) == tuple(tx.shape), f"{name} input {k}"
        assert x.grad.dtype is x.dtype, name
        np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=rtol, atol=atol, err_msg=f"{name} {k}")
    return out, tout


def compare_double(fn, arrays, rng, name: str = "") -> None:
    """Second derivatives: grad of sum(w * grads) w.r.t. inputs and the upstream gradient, vs torch."""
    ours, theirs = leaves(arrays)
    out, tout = fn(tidal, *ours), fn(torch, *theirs)
    upstream = rng.normal(0, 1, tuple(tout.shape))
    g, tg = tidal.tensor(upstream, requires_grad=True), torch.tensor(upstream, requires_grad=True)
    firsts = tidal.autograd.grad([out], ours, [g], create_graph=True)
    tfirsts = torch.autograd.grad([tout], theirs, [tg], create_graph=True)
    weights = [rng.normal(0, 1, tuple(t.shape)) for t in tfirsts]
    total = sum((f * tidal.tensor(w)).sum() for f, w in zip(firsts, weights))
    ttotal = sum((f * torch.tensor(w)).sum() for f, w in zip(tfirsts, weights))
    seconds = tidal.autograd.grad([total], ours + [g], allow_unused=True)
    tseconds = torch.autograd.grad([ttotal], theirs + [tg], allow_unused=True)
    for k, (s, ts) in enumerate(zip(seconds, tseconds)):
        if ts is None:  # torch: this input does not reach the first gradients (linear in it)
            assert s is None or not s.numpy().any(), f"{name} {k}"
            continue
        assert s is not None, f"{name} {k}"
        np.testing.assert_allclose(s.numpy(), ts.numpy(), rtol=1e-9, atol=1e-12, err_msg=f"{name} {k}")


def finite_differences(fn, arrays, rng, eps: float = 1e-6) -> None:
    """d sum(w * fn(x)) / dx by central differences in float64, vs the analytic gradient."""
    ours = [tidal.tensor(a, requires_grad=True) for a in arrays]
    out = fn(tidal, *ours)
    weights = rng.normal(0, 1, tuple(out.shape))
    (out * tidal.tensor(weights)).sum().backward()

    def value(xs) -> float:
        return float((fn(tidal, *[tidal.tensor(x) for x in xs]).numpy() * weights).sum())
    for k, a in enumerate(arrays):
        numeric = np.zeros(a.shape)
        for idx in np.ndindex(a.shape):
            up = [x.copy() for x in arrays]
            down = [x.copy() for x in arrays]
            up[k][idx] += eps
            down[k][idx] -= eps
            numeric[idx] = (value(up) - value(down)) / (2 * eps)
        np.testing.assert_allclose(ours[k].grad.numpy(), numeric, rtol=1e-5, atol=1e-6)


# -- the matmul family ------------------------------------------------------------------------
MATMUL_SHAPES = [
    ((4,), (4,)), ((3, 4), (4,)), ((4,), (4, 2)), ((3, 4), (4, 2)),
    ((5, 3, 4), (4, 2)), ((3, 4), (5, 4, 2)), ((5, 3, 4), (5, 4, 2)), ((5, 3, 4), (4,)), ((4,), (5, 4, 2)),
    ((1, 5, 3, 4), (6, 1, 4, 2)), ((2, 1, 3, 4), (5, 4, 2)), ((6, 1, 3, 4), (4,)), ((1,), (2, 1, 3)),
    ((0, 3, 4), (4, 2)), ((3, 0), (0, 2)), ((2, 3, 0), (0,)),
]


@pytest.mark.parametrize("shapes", MATMUL_SHAPES, ids=str)
@pytest.mark.parametrize("transposed", [False, True])
def test_matmul(rng, shapes, transposed):
    arrays = [make_array(rng, s, transposed=transposed) for s in shapes]
    compare(lambda m, a, b: m.matmul(a, b), arrays, rng, name=str(shapes))
    compare(lambda m, a, b: a @ b, arrays, rng, grads=[True, False])
    compare(lambda m, a, b: a @ b, arrays, rng, grads=[False, True])


@pytest.mark.parametrize("shapes", [((3, 4), (4, 2)), ((5, 3, 4), (4,)), ((4,), (5, 4, 2))], ids=str)
def test_matmul_float32(rng, shapes):
    arrays = [make_array(rng, s, "float32") for s in shapes]
    compare(lambda m, a, b: m.matmul(a, b), arrays, rng, dtype="float32")


@pytest.mark.parametrize("transposed", [False, True])
def test_mm_bmm_mv_dot(rng, transposed):
    mat = lambda *s: make_array(rng, s, transposed=transposed)  # noqa: E731
    compare(lambda m, a, b: m.mm(a, b), [mat(3, 4), mat(4, 5)], rng)
    compare(lambda m, a, b: a.mm(b), [mat(3, 4), mat(4, 5)], rng, grads=[False, True])
    compare(lambda m, a, b: m.bmm(a, b), [mat(2, 3, 4), mat(2, 4, 5)], rng)
    compare(lambda m, a, b: m.mv(a, b), [mat(3, 4), mat(4)], rng)
    compare(lambda m, a, b: m.dot(a, b), [mat(4), mat(4)], rng)
    compare(lambda m, a, b: m.vdot(a, b), [mat(4), mat(4)], rng, grads=[True, False])


ADD_CASES = [  # (op, input shape, first operand, second operand)
    ("addmm", (3, 5), (3, 4), (4, 5)), ("addmm", (5,), (3, 4), (4, 5)), ("addmm", (), (3, 4), (4, 5)),
    ("addmv", (3,), (3, 4), (4,)), ("addmv", (1,), (3, 4), (4,)),
    ("addbmm", (3, 5), (2, 3, 4), (2, 4, 5)), ("addbmm", (3, 1), (2, 3, 4), (2, 4, 5)),
    ("baddbmm", (2, 3, 5), (2, 3, 4), (2, 4, 5)), ("baddbmm", (3, 5), (2, 3, 4), (2, 4, 5)),
]


@pytest.mark.parametrize("case", ADD_CASES, ids=str)
@pytest.mark.parametrize("coefs", [(1, 1), (0.5, -2.0), (0, 3.0)], ids=str)
def test_add_products(rng, case, coefs):
    op, *shapes = case
    beta, alpha = coefs
    arrays = [make_array(rng, s) for s in shapes]
    out, tout = compare(lambda m, i, a, b: getattr(m, op)(i, a, b, beta=beta, alpha=alpha), arrays, rng, name=op)
    assert type(out.grad_fn).__name__ == type(tout.grad_fn).__name__


@pytest.mark.parametrize("op", ["addmm", "addmv", "addbmm", "baddbmm"])
def test_add_products_in_place(rng, op):
    shapes = next(c[1:] for c in ADD_CASES if c[0] == op)
    arrays = [make_array(rng, s) for s in shapes]

    def fn(m, i, a, b):
        target = i * 1  # a non-leaf to write into
        getattr(target, op + "_")(a, b, beta=0.5, alpha=2.0)
        return target
    out, tout = compare(fn, arrays, rng, name=op)
    assert type(out.grad_fn).__name__ == type(tout.grad_fn).__name__


def test_in_place_product_errors(rng):
    a, b = (tidal.tensor(make_array(rng, (3, 3)), requires_grad=True) for _ in range(2))
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
        a.addmm_(b, b)
    c = a * 1
    c.addmm_(c, b)  # c is saved for b's gradient, then overwritten
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        c.sum().backward()


def test_inner_outer_tensordot(rng):
    compare(lambda m, a, b: m.inner(a, b), [make_array(rng, (2, 4)), make_array(rng, (3, 4), transposed=True)], rng)
    compare(lambda m, a, b: m.inner(a, b), [make_array(rng, (4,)), make_array(rng, (4,))], rng)
    compare(lambda m, a, b: m.inner(a, b), [make_array(rng, ()), make_array(rng, (2, 3))], rng)
    compare(lambda m, a, b: m.outer(a, b), [make_array(rng, (3,)), make_array(rng, (4,))], rng)
    compare(lambda m, a, b: m.ger(a, b), [make_array(rng, (3,)), make_array(rng, (4,))], rng)
    x = make_array(rng, (6,))[::2]  # a strided vector
    compare(lambda m, a, b: m.outer(a, b), [x, make_array(rng, (2,))], rng)
    compare(lambda m, a, b: m.tensordot(a, b), [make_array(rng, (2, 3, 4)), make_array(rng, (3, 4, 5))], rng)
    compare(lambda m, a, b: m.tensordot(a, b, dims=0), [make_array(rng, (2, 3)), make_array(rng, (4,))], rng)
    compare(lambda m, a, b: m.tensordot(a, b, dims=([1, 0], [0, 2])),
            [make_array(rng, (3, 4, 5)), make_array(rng, (4, 2, 3))], rng)


@pytest.mark.parametrize("shape", [(3, 3), (2, 4), (4, 2), (0, 3), (1, 1)])
def test_trace(rng, shape):
    out, tout = compare(lambda m, a: m.trace(a), [make_array(rng, shape, transposed=True)], rng)
    assert type(out.grad_fn).__name__ == "TraceBackward0"


@pytest.mark.parametrize("shapes", [((2, 3), (3, 4)), ((2,), (3, 2, 2)), ((), (3,)), ((2, 1, 2), (2, 3)),
                                    ((0, 2), (2, 2))], ids=str)
def test_kron(rng, shapes):
    compare(lambda m, a, b: m.kron(a, b), [make_array(rng, s, transposed=True) for s in shapes], rng)


@pytest.mark.parametrize("shapes,dim", [(((4, 3), (4, 3)), 1), (((3, 5), (3, 1)), 0), (((2, 3, 4), (1, 3, 4)), 1)],
                         ids=str)
def test_cross(rng, shapes, dim):
    arrays = [make_array(rng, s) for s in shapes]
    out, tout = compare(lambda m, a, b: m.cross(a, b, dim=dim), arrays, rng)
    assert type(out.grad_fn).__name__ == type(tout.grad_fn).__name__ == "LinalgCrossBackward0"
    compare(lambda m, a, b: m.cross(a, b, dim=dim), arrays, rng, grads=[False, True])


# -- einsum -----------------------------------------------------------------------------------
EINSUM_CASES = [
    ("ij,jk->ik", [(3, 4), (4, 5)]),            # matrix product
    ("ij,jk", [(3, 4), (4, 5)]),                # implicit output
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),   # batch
    ("ii->", [(4, 4)]),                         # trace
    ("ii->i", [(4, 4)]),                        # diagonal
    ("iij->j", [(3, 3, 2)]),                    # diagonal summed
    ("iii->i", [(3, 3, 3)]),                    # a label three times
    ("i,j->ij", [(3,), (4,)]),                  # outer
    ("ij->", [(3, 4)]),                         # sum
    ("ij->ji", [(3, 4)]),                       # transpose
    ("ij,ij->", [(3, 4), (1, 4)]),              # broadcast size-1 dim
    ("ij,ij->ij", [(1, 4), (3, 1)]),
    ("ii,i->i", [(1, 1), (3,)]),                # broadcast diagonal
    ("...ij,...jk->...ik", [(2, 1, 3, 4), (5, 4, 2)]),  # ellipsis with broadcasting
    ("b...,b...->b", [(2, 3, 4), (2, 3, 4)]),
    ("...i->...", [(2, 3)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),  # three operands
    ("ijk,jil->kl", [(2, 3, 4), (3, 2, 5)]),
    ("abc,cd->abd", [(0, 2, 3), (3, 4)]),       # empty
]


@pytest.mark.parametrize("equation,shapes", EINSUM_CASES, ids=[c[0] for c in EINSUM_CASES])
def test_einsum(rng, equation, shapes):
    arrays = [make_array(rng, s, transposed=True) for s in shapes]
    out, _ = compare(lambda m, *ops: m.einsum(equation, *ops), arrays, rng, name=equation)
    assert type(out.grad_fn).__name__ == "EinsumBackward0"
    if len(shapes) > 1:  # only some operands require grad
        compare(lambda m, *ops: m.einsum(equation, *ops), arrays, rng, grads=[False] + [True] * (len(shapes) - 1))


def test_einsum_sublist_and_float32(rng):
    arrays = [make_array(rng, s, "float32") for s in ((3, 4), (4, 5))]
    compare(lambda m, a, b: m.einsum(a, [0, 1], b, [1, 2], [0, 2]), arrays, rng, dtype="float32")


# -- double backward and finite differences ----------------------------------------------------
@pytest.mark.parametrize("shapes", [((4,), (4,)), ((3, 4), (4,)), ((4,), (4, 2)), ((3, 4), (4, 2)),
                                    ((5, 3, 4), (4, 2)), ((1, 5, 3, 4), (6, 1, 4, 2)), ((3, 4), (2, 4, 5))], ids=str)
def test_matmul_double_backward(rng, shapes):
    compare_double(lambda m, a, b: m.matmul(a, b), [make_array(rng, s) for s in shapes], rng, str(shapes))


@pytest.mark.parametrize("equation,shapes", [c for c in EINSUM_CASES if 0 not in c[1][0]],
                         ids=[c[0] for c in EINSUM_CASES if 0 not in c[1][0]])
def test_einsum_double_backward(rng, equation, shapes):
    compare_double(lambda m, *ops: m.einsum(equation, *ops), [make_array(rng, s) for s in shapes], rng, equation)


@pytest.mark.parametrize("name,fn,shapes", [
    ("addmm", lambda m, i, a, b: m.addmm(i, a, b, beta=0.5, alpha=2.0), [(3,), (2, 4), (4, 3)]),
    ("baddbmm", lambda m, i, a, b: m.baddbmm(i, a, b, alpha=-1.5), [(2, 1, 3), (2, 2, 4), (2, 4, 3)]),
    ("cross", lambda m, a, b: m.cross(a * b, b, dim=1), [(2, 3), (2, 3)]),
    ("kron", lambda m, a, b: m.kron(a * b, b), [(2, 2), (2, 2)]),
    ("trace", lambda m, a: m.trace(a * a), [(3, 3)]),
    ("sort", lambda m, a: m.sort(a * a, dim=0).values, [(3, 4)]),
    ("topk", lambda m, a: m.topk(a * a, 2).values, [(3, 4)]),
])
def test_other_double_backward(rng, name, fn, shapes):
    compare_double(fn, [make_array(rng, s) for s in shapes], rng, name)


@pytest.mark.parametrize("fn,shapes", [
    (lambda m, a, b: m.matmul(a, b), [(2, 3), (4, 3, 2)]),
    (lambda m, a, b: m.einsum("ij,jk->ik", a, b), [(2, 3), (3, 2)]),
    (lambda m, a, b: m.einsum("ii,i->i", a, b), [(3, 3), (3,)]),
    (lambda m, i, a, b: m.addbmm(i, a, b, beta=0.5, alpha=2.0), [(2, 2), (2, 2, 3), (2, 3, 2)]),
    (lambda m, a: m.sort(a, dim=0, descending=True).values, [(3, 2)]),
    (lambda m, a: m.kthvalue(a, 2, dim=1).values, [(2, 3)]),
])
def test_finite_differences(rng, fn, shapes):
    finite_differences(fn, [make_array(rng, s) for s in shapes], rng)


# -- sorting ----------------------------------------------------------------------------------
SORT_CASES = [
    ("sort", lambda m, x: m.sort(x), [(5,), (3, 4)]),
    ("sort dim 0 descending", lambda m, x: m.sort(x, dim=0, descending=True), [(3, 4), (2, 3, 4)]),
    ("sort 0-d", lambda m, x: m.sort(x), [()]),
    ("msort", lambda m, x: m.msort(x), [(4, 3)]),
    ("topk", lambda m, x: m.topk(x, 2), [(5,), (3, 4)]),
    ("topk smallest dim 0", lambda m, x: m.topk(x, 2, dim=0, largest=False), [(3, 4), (4, 2, 3)]),
    ("topk 0", lambda m, x: m.topk(x, 0), [(3, 4)]),
    ("kthvalue", lambda m, x: m.kthvalue(x, 2), [(5,), (3, 4)]),
    ("kthvalue keepdim", lambda m, x: m.kthvalue(x, 1, dim=0, keepdim=True), [(3, 4), (2, 3, 4)]),
    ("kthvalue 0-d", lambda m, x: m.kthvalue(x, 1), [()]),
    ("sort empty", lambda m, x: m.sort(x, dim=1), [(0, 3)]),
]


@pytest.mark.parametrize("name,fn,shapes", SORT_CASES, ids=[c[0] for c in SORT_CASES])
@pytest.mark.parametrize("transposed", [False, True])
def test_sorting(rng, name, fn, shapes, transposed):
    for shape in shapes:
        def values(m, x):
            result = fn(m, x)
            return result if isinstance(result, (tidal.Tensor, torch.Tensor)) else result.values
        out, tout = compare(values, [make_array(rng, shape, transposed=transposed)], rng, name=name)
        assert type(out.grad_fn).__name__ == type(tout.grad_fn).__name__


def test_sorting_float32_ties(rng):
    data = rng.integers(-2, 3, (4, 5)).astype("float32")  # ties: stable sorts pick the same elements
    compare(lambda m, x: m.sort(x, dim=1, descending=True, stable=True).values, [data], rng, dtype="float32")
    # torch's topk breaks ties its own way: the gradient must follow the indices tidal picked
    x = tidal.tensor(data, requires_grad=True)
    values, indices = x.topk(3, dim=0)
    upstream = rng.normal(0, 1, (3, 5)).astype("float32")
    values.backward(tidal.tensor(upstream))
    expected = np.zeros((4, 5), "float32")
    np.put_along_axis(expected, indices.numpy(), upstream, axis=0)
    np.testing.assert_array_equal(x.grad.numpy(), expected)


def test_no_gradient_outputs(rng):
    x = tidal.tensor(make_array(rng, (3, 4)), requires_grad=True)
    for result in (x.sort(), x.topk(2), x.kthvalue(2)):
        assert result.values.requires_grad and result.values.grad_fn is not None
        assert not result.indices.requires_grad and result.indices.grad_fn is None
    plain = [x.argsort(), tidal.unique(x), tidal.unique_consecutive(x), tidal.searchsorted(x.detach(), x),
             tidal.bucketize(x, tidal.tensor([0.0, 1.0]))]
    plain += list(tidal.unique(x, return_inverse=True, return_counts=True))
    for t in plain:
        assert not t.requires_grad and t.grad_fn is None
    # the values' node gets a gradient only from the values
    values, indices = x.sort(dim=0)
    (values * 2).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full((3, 4), 2.0))


# -- recording rules --------------------------------------------------------------------------
@pytest.mark.parametrize("name,call", [
    ("matmul", lambda a, b, out: tidal.matmul(a, b, out=out)),
    ("mm", lambda a, b, out: tidal.mm(a, b, out=out)),
    ("dot", lambda a, b, out: tidal.dot(a[0], b[0], out=out)),
    ("addmm", lambda a, b, out: tidal.addmm(b, a, b, out=out)),
    ("mul", lambda a, b, out: tidal.outer(a[0], b[0], out=out)),
    ("mul", lambda a, b, out: tidal.kron(a, b, out=out)),
    ("linalg_cross", lambda a, b, out: tidal.cross(a, b, dim=0, out=out)),
])
def test_out_with_grad(rng, name, call):
    a = tidal.tensor(make_array(rng, (3, 3)), requires_grad=True)
    b = tidal.tensor(make_array(rng, (3, 3)))
    with tidal.no_grad():
        shape = call(a, b, None).shape
        out = tidal.empty(shape, dtype=tidal.float64)
        assert call(a, b, out) is out and out.grad_fn is None
    with pytest.raises(RuntimeError, match=rf"^{name}\(\): functions with out=\.\.\. arguments don't support "
                                           "automatic differentiation"):
        call(a, b, tidal.empty(shape, dtype=tidal.float64))


def test_no_grad_mode_and_names(rng):
    a, b = (tidal.tensor(make_array(rng, (3, 3)), requires_grad=True) for _ in range(2))
    with tidal.no_grad():
        for out in (a @ b, tidal.einsum("ij,jk", a, b), a.sort().values, tidal.trace(a), tidal.cross(a, b, dim=0)):
            assert out.grad_fn is None and not out.requires_grad
    v = a[0]
    names = {"MmBackward0": a @ b, "MvBackward0": a @ v, "DotBackward0": v @ v, "SqueezeBackward4": v @ a,  # torch's
             "BmmBackward0": tidal.bmm(a[None], b[None]), "VdotBackward0": tidal.vdot(v, v)}
    for name, out in names.items():
        assert type(out.grad_fn).__name__ == name


def test_integer_products_take_no_grad():
    a = tidal.tensor([[1, 2], [3, 4]])
    assert (a @ a).grad_fn is None and tidal.einsum("ij,jk", a, a).grad_fn is None


# -- return types ------------------------------------------------------------------------------
def test_return_types(rng):
    x = tidal.tensor([[3.0, 1.0], [2.0, 5.0]])
    sort_type = return_types.return_type("sort")
    result = x.sort()
    assert type(result) is sort_type is return_types.sort and isinstance(result, tuple)
    assert repr(result).startswith("tidal.return_types.sort(\nvalues=tensor([[1., 3.],")
    assert repr(x.max(dim=1)).startswith("tidal.return_types.max(\nvalues=tensor([3., 5.]),\nindices=")
    assert repr(tidal.aminmax(x)).startswith("tidal.return_types.aminmax(\nmin=tensor(1.),\nmax=tensor(5.))")
    for r in (result, x.topk(1), x.kthvalue(1), x.median(dim=0), x.cummax(0)):
        assert type(r).__module__ == "tidal.ops.dispatch.return_types"
        assert type(r).__name__ in repr(r)
    again = pickle.loads(pickle.dumps(x.topk(1)))
    assert type(again) is type(x.topk(1))
    np.testing.assert_array_equal(again.values.numpy(), [[3.0], [5.0]])
    with pytest.raises(ValueError, match="already has fields"):
        return_types.return_type("sort", ("a", "b"))
    with pytest.raises(AttributeError):
        return_types.no_such_op


# -- decompositions (tidal.linalg) -------------------------------------------------------------
def spd(a: np.ndarray) -> np.ndarray:
    """A symmetric positive-definite matrix (stack) made from `a`."""
    return a @ np.swapaxes(a, -1, -2) + a.shape[-1] * np.eye(a.shape[-1])


def sym(a: np.ndarray) -> np.ndarray:
    return a + np.swapaxes(a, -1, -2)


def _usv(m, r, power: int = 2):
    """U diag(S^power) Vh: independent of the signs of the singular vectors (PyTorch's gauge rule)."""
    return m.matmul(r.U[..., :r.S.shape[-1]] * r.S.unsqueeze(-2) ** power, r.Vh[..., :r.S.shape[-1], :])


def _projectors(m, r):
    """Row sums of U U^T and V V^T (gauge-invariant; they exercise the gradients of U and Vh alone)."""
    return m.matmul(r.U, r.U.mT).sum(-1) + m.matmul(r.Vh.mT, r.Vh).sum(-2)[..., :1]


def _vlv(m, r):
    return m.matmul(r.eigenvectors * r.eigenvalues.unsqueeze(-2) ** 2, r.eigenvectors.mT)


DECOMPOSITIONS = [
    ("svdvals", lambda m, a: m.linalg.svdvals(a), None),
    ("svd reduced", lambda m, a: _usv(m, m.linalg.svd(a, full_matrices=False)), None),
    ("svd full", lambda m, a: _usv(m, m.linalg.svd(a), 3), None),
    ("svd projectors", lambda m, a: _projectors(m, m.linalg.svd(a, full_matrices=False)), None),
    ("nuc", lambda m, a: m.linalg.matrix_norm(a, "nuc"), None),
    ("ord 2", lambda m, a: m.linalg.matrix_norm(a, 2), None),
    ("ord -2", lambda m, a: m.linalg.matrix_norm(a, -2, keepdim=True), None),
    ("norm nuc", lambda m, a: m.linalg.norm(a, "nuc", dim=(-1, -2)), None),
    ("qr Q", lambda m, a: m.linalg.qr(a).Q, None),
    ("qr R", lambda m, a: m.linalg.qr(a).R, None),
    ("qr both", lambda m, a: (lambda r: r.Q.sum(-2) * r.R.sum(-1)[..., :1])(m.linalg.qr(a)), None),
    ("pinv", lambda m, a: m.linalg.pinv(a), None),
]
SQUARE_DECOMPOSITIONS = [
    ("eigvalsh", lambda m, a: m.linalg.eigvalsh(a), sym),
    ("eigvalsh U of any", lambda m, a: m.linalg.eigvalsh(a, UPLO="U"), None),
    ("eigh", lambda m, a: _vlv(m, m.linalg.eigh(a)), sym),
    ("eigh of any", lambda m, a: _vlv(m, m.linalg.eigh(a)), None),
    ("cholesky", lambda m, a: m.linalg.cholesky(a), spd),
    ("cholesky upper", lambda m, a: m.linalg.cholesky(a, upper=True), spd),
    ("pinv hermitian", lambda m, a: m.linalg.pinv(a, hermitian=True), sym),
    ("slogdet", lambda m, a: m.linalg.slogdet(a).logabsdet, None),
    ("det", lambda m, a: m.linalg.det(a), None),
    ("inv", lambda m, a: m.linalg.inv(a), None),
]


@pytest.mark.parametrize("name,fn,prep", DECOMPOSITIONS, ids=[c[0] for c in DECOMPOSITIONS])
@pytest.mark.parametrize("shape", [(4, 3), (3, 4), (2, 3, 3)], ids=str)
def test_decomposition_grads(rng, name, fn, prep, shape):
    compare(fn, [make_array(rng, shape)], rng, name=name)


@pytest.mark.parametrize("name,fn,prep", SQUARE_DECOMPOSITIONS, ids=[c[0] for c in SQUARE_DECOMPOSITIONS])
@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4)], ids=str)
def test_square_decomposition_grads(rng, name, fn, prep, shape):
    a = make_array(rng, shape)
    compare(fn, [prep(a) if prep else a], rng, name=name)


DOUBLE = ["svdvals", "svd reduced", "nuc", "qr both", "pinv", "eigvalsh", "eigh", "cholesky", "slogdet"]


@pytest.mark.parametrize("name", DOUBLE)
@pytest.mark.parametrize("shape", [(4, 3), (3, 4)], ids=str)
def test_decomposition_double_backward(rng, name, shape):
    cases = {c[0]: c for c in DECOMPOSITIONS + SQUARE_DECOMPOSITIONS}
    _, fn, prep = cases[name]
    if any(name == c[0] for c in SQUARE_DECOMPOSITIONS):
        shape = (shape[0], shape[0])
    a = make_array(rng, shape)
    compare_double(fn, [prep(a) if prep else a], rng, name)


@pytest.mark.parametrize("fn,shape", [
    (lambda m, a: m.linalg.svdvals(a), (3, 2)),
    (lambda m, a: _usv(m, m.linalg.svd(a, full_matrices=False), 1), (2, 3)),
    (lambda m, a: _vlv(m, m.linalg.eigh(a + a.mT)), (3, 3)),
    (lambda m, a: m.linalg.qr(a).Q * 2 + m.linalg.qr(a).R.sum(), (3, 2)),
    (lambda m, a: m.linalg.qr(a).R, (2, 3)),
    (lambda m, a: m.linalg.cholesky(m.matmul(a, a.mT) + 3 * m.eye(3, dtype=a.dtype)), (3, 3)),
    (lambda m, a: m.linalg.pinv(a), (3, 2)),
], ids=["svdvals", "svd", "eigh", "qr tall", "qr wide", "cholesky", "pinv"])
def test_decomposition_finite_differences(rng, fn, shape):
    finite_differences(fn, [make_array(rng, shape)], rng)


@pytest.mark.parametrize("mode,shape,message", [
    ("r", (3, 3), "which is not computed when mode='r'"),
    ("complete", (4, 3), "not differentiable when mode='complete' and nrows > ncols"),
])
def test_qr_backward_errors(rng, mode, shape, message):
    a = make_array(rng, shape)
    for lib in (torch, tidal):
        x = lib.tensor(a, requires_grad=True)
        with pytest.raises(RuntimeError, match=message):
            lib.linalg.qr(x, mode=mode)[1].sum().backward()


def test_qr_complete_wide_and_grad_fn_names(rng):
    compare(lambda m, a: m.linalg.qr(a, mode="complete").Q.sum(0) + m.linalg.qr(a, mode="complete").R.sum(0)[:3],
            [make_array(rng, (3, 5))], rng)
    ours, theirs = leaves([spd(make_array(rng, (3, 3)))])
    for fn in (lambda m, a: m.linalg.svd(a).U, lambda m, a: m.linalg.svdvals(a), lambda m, a: m.linalg.eigvalsh(a),
               lambda m, a: m.linalg.qr(a).R, lambda m, a: m.linalg.cholesky(a, upper=True),
               lambda m, a: m.linalg.pinv(a, hermitian=True), lambda m, a: m.linalg.slogdet(a).logabsdet):
        assert type(fn(tidal, *ours).grad_fn).__name__ == type(fn(torch, *theirs).grad_fn).__name__

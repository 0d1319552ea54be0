"""Gradients of indexing, gather/scatter and mask ops, compared with torch in float64.

Each case builds the same graph in tidal and torch from the same leaves, back-propagates the same
random upstream gradient, and compares every leaf's .grad (and the grad_fn name where tidal matches
torch's). Index tensors hold repeats and negative values wherever the op accepts them.
"""
from __future__ import annotations

import numpy as np
import pytest

import tidal

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(1234)
X345 = RNG.standard_normal((3, 4, 5))
X45 = RNG.standard_normal((4, 5))


def ix(lib, values):
    """An int64 index tensor in `lib` (tidal or torch)."""
    return lib.tensor(np.asarray(values, dtype=np.int64))


def bools(lib, values):
    """A bool mask tensor in `lib`."""
    return lib.tensor(np.asarray(values, dtype=bool))


def compare(fn, *arrays, name: str | None = None, seed: int = 0):
    """fn(lib, *leaves) in tidal and torch; backward one random gradient; compare leaf grads (and grad_fn)."""
    leaves_t = [tidal.tensor(a, requires_grad=True) for a in arrays]
    leaves_q = [torch.tensor(a, requires_grad=True) for a in arrays]
    out_t, out_q = fn(tidal, *leaves_t), fn(torch, *leaves_q)
    assert tuple(out_t.shape) == tuple(out_q.shape)
    np.testing.assert_allclose(out_t.detach().numpy(), out_q.detach().numpy(), rtol=1e-12, atol=1e-12)
    if name is not None:
        assert out_t.grad_fn.name() == out_q.grad_fn.name() == name
    g = np.random.default_rng(seed).standard_normal(tuple(out_q.shape))
    out_t.backward(tidal.tensor(g))
    out_q.backward(torch.tensor(g))
    for k, (a, b) in enumerate(zip(leaves_t, leaves_q)):
        if b.grad is None:
            assert a.grad is None, f"leaf {k} got a gradient torch doesn't give"
        else:
            assert a.grad is not None, f"leaf {k} got no gradient"
            assert tuple(a.grad.shape) == tuple(b.grad.shape)
            np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-12, atol=1e-12)


def double_backward(fn, *arrays):
    """Second-order gradients of sum(w * fn(x)**2) through autograd.grad(create_graph=True), vs torch."""
    results = []
    for lib in (tidal, torch):
        leaves = [lib.tensor(a, requires_grad=True) for a in arrays]
        out = fn(lib, *leaves)
        w = lib.tensor(np.random.default_rng(5).standard_normal(tuple(out.shape)))
        grads = lib.autograd.grad((w * out * out).sum(), leaves, create_graph=True)
        v = [lib.tensor(np.random.default_rng(6 + k).standard_normal(tuple(g.shape))) for k, g in enumerate(grads)]
        sum((g * vk).sum() for g, vk in zip(grads, v)).backward()
        results.append([leaf.grad.detach().numpy() if leaf.grad is not None else None for leaf in leaves])
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


# -- Tensor[...] ------------------------------------------------------------------------------
GETITEM = [
    ("x[1]", "SelectBackward0"), ("x[-1]", "SelectBackward0"), ("x[1:3]", "SliceBackward0"),
    ("x[::2]", "SliceBackward0"), ("x[:, -2]", "SelectBackward0"), ("x[..., 1:4:2]", "SliceBackward0"),
    ("x[None]", "UnsqueezeBackward0"), ("x[:, None, 1:]", "SliceBackward0"), ("x[0, 1:3]", "SliceBackward0"),
    ("x[1:, None]", "UnsqueezeBackward0"), ("x[...]", "AliasBackward0"), ("x[:, :]", "AliasBackward0"),
    ("x[:]", "SliceBackward0"), ("x[2:2]", "SliceBackward0"), ("x[ix(lib, 2)]", "SelectBackward0"),
    ("x[[0, 2, 0]]", "IndexBackward0"), ("x[[-1, 0, -1]]", "IndexBackward0"),
    ("x[:, [1, 1, -2]]", "IndexBackward0"), ("x[ix(lib, [[0, 1], [2, 2]])]", "IndexBackward0"),
    ("x[[0, 2], :, [1, 1]]", "IndexBackward0"), ("x[1, [0, 0, 2]]", "IndexBackward0"),
    ("x[x > 0]", "IndexBackward0"), ("x[bools(lib, [[1, 0, 1, 1], [0, 0, 1, 0], [1, 1, 0, 0]])]", "IndexBackward0"),
    ("x[True]", "IndexBackward0"), ("x[..., [0, 4, 0]]", "IndexBackward0"),
    ("x[:, ix(lib, [1]), None]", "IndexBackward0"), ("x[1:, [0, 0]][:, 1]", "SelectBackward0"),
    ("x[[1, 1], 1:3, [-1, 0]]", "IndexBackward0"), ("x[[]]", "IndexBackward0"),
    ("x.transpose(0, 2)[1:, [0, 0]]", "IndexBackward0"), ("x.transpose(0, 2)[-1, ::2]", "SliceBackward0"),
]


@pytest.mark.parametrize("expr,name", GETITEM, ids=[e for e, _ in GETITEM])
def test_getitem(expr, name):
    compare(lambda lib, x: eval(expr, {"x": x, "lib": lib, "ix": ix, "bools": bools}), X345, name=name)


def test_getitem_of_a_non_leaf_and_iteration():
    compare(lambda lib, x: (x * 2)[1][2:], X345)
    compare(lambda lib, x: lib.stack([row * k for k, row in enumerate(x)]), X345)


def test_getitem_without_grad_records_nothing():
    x = tidal.tensor(X345, requires_grad=True)
    with tidal.no_grad():
        assert x[1:].grad_fn is None and x[[0, 1]].grad_fn is None and not x[[0, 1]].requires_grad
        assert x[0].requires_grad  # as torch: a view made under no_grad reads its base's flag
    assert tidal.tensor(X345)[0].grad_fn is None


# -- Tensor[...] = v ----------------------------------------------------------------------------
def _assign(index, value_expr=None, scalar=0.5):
    """A graph writing into y = x * 1 at `index`: a scalar, or the leaf v (index and value as expressions)."""
    def fn(lib, x, *v):
        y = x * 1
        env = {"x": x, "lib": lib, "ix": ix, "bools": bools, "np": np}
        y[eval(f"np.s_[{index}]", env)] = v[0] if v else scalar
        return y * 3
    return fn


@pytest.mark.parametrize("index", ["0", "-1", "1:3", ":, 2", "..., ::2", "1, None", "[0, 2, 0]", "x > 0",
                                   "(slice(None), [1, -1])", "(1, [0, 0, 3])", "True"])
def test_setitem_scalar(index):
    compare(_assign(index), X345)


@pytest.mark.parametrize("index,shape", [("0", (4, 5)), ("1:, 2", (2, 5)), (":, 1", (5,)), ("0", (1, 1, 4, 5)),
                                         ("..., 1:3", (4, 1)), ("[0, 0, 2]", (3, 4, 5)), ("[0, 2]", (5,)),
                                         ("(1, [0, 2])", (2, 5)), ("x > 0", ()), ("(slice(None), [-1, 1])", (2, 1)),
                                         ("[[0], [2]], [1, 3]", (2, 2, 5))])
def test_setitem_tensor(index, shape):
    compare(_assign(index), X345, RNG.standard_normal(shape))


def test_setitem_grad_fn_and_leaf_error():
    x = tidal.tensor(X345, requires_grad=True)
    y = x * 1
    y[[0, 1]] = 2.0
    assert y.grad_fn.name() == "IndexPutBackward0"
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
        x[0] = 1.0
    with tidal.no_grad():
        x[0] = 1.0
    assert x.grad_fn is None and x.requires_grad
    np.testing.assert_array_equal(x.detach().numpy()[0], 1.0)


def test_setitem_through_a_view_reaches_the_base():
    compare(lambda lib, x: _write_through_view(x * 1), X45)


def _write_through_view(y):
    y[0][1] = 5.0
    return y


def test_setitem_makes_a_tensor_require_grad():
    v = tidal.tensor(np.ones(5), requires_grad=True)
    y = tidal.zeros(3, 5, dtype=tidal.float64)
    y[1] = v
    assert y.requires_grad
    (y * tidal.tensor(np.arange(15.0).reshape(3, 5))).sum().backward()
    np.testing.assert_array_equal(v.grad.numpy(), np.arange(5.0, 10.0))


# -- gather / scatter ---------------------------------------------------------------------------
IDX = [[0, 3, 3, 1, 0], [2, 2, 0, 1, 3]]  # (2, 5), repeats; along dim 0 of (4, 5)


@pytest.mark.parametrize("dim,index", [(0, IDX), (1, [[4, 0, 4], [1, 1, 2], [0, 0, 0], [3, 2, 1]]),
                                       (-1, [[2], [2], [0], [4]])])
def test_gather(dim, index):
    compare(lambda lib, x: lib.gather(x, dim, ix(lib, index)), X45, name="GatherBackward0")


def test_gather_0d():
    compare(lambda lib, x: lib.gather(x, 0, ix(lib, 0)), np.array(1.5), name="GatherBackward0")


def test_scatter_src_and_value():
    src = RNG.standard_normal((3, 6))
    compare(lambda lib, x, s: x.scatter(0, ix(lib, IDX), s[:2, :5]), X45, src, name="ScatterBackward0")
    compare(lambda lib, x: x.scatter(1, ix(lib, [[0, 4], [1, 1], [2, 0], [3, 3]]), 2.5), X45,
            name="ScatterBackward1")

    def inplace(lib, x, s):
        y = x * 2
        y.scatter_(0, ix(lib, IDX), s[:2, :5])
        return y
    compare(inplace, X45, src, name="ScatterBackward0")


def test_scatter_src_larger_than_index():
    """torch can't fit this gradient (the src reaches past the index); tidal gives zeros there."""
    src = RNG.standard_normal((3, 6))
    x, s = tidal.tensor(X45, requires_grad=True), tidal.tensor(src, requires_grad=True)
    tx, ts = torch.tensor(X45, requires_grad=True), torch.tensor(src, requires_grad=True)
    g = RNG.standard_normal((4, 5))
    for op in ("scatter", "scatter_add"):
        s.grad = ts.grad = None
        getattr(x, op)(0, ix(tidal, IDX), s).backward(tidal.tensor(g))
        getattr(tx, op)(0, ix(torch, IDX), ts[:2, :5]).backward(torch.tensor(g))
        np.testing.assert_allclose(s.grad.numpy(), ts.grad.numpy(), rtol=1e-12)
    s.grad = ts.grad = None
    x.scatter_reduce(0, ix(tidal, IDX), s, "mean").backward(tidal.tensor(g))
    tx.scatter_reduce(0, ix(torch, IDX), ts[:2, :5], "mean").backward(torch.tensor(g))
    np.testing.assert_allclose(s.grad.numpy(), ts.grad.numpy(), rtol=1e-12)


def test_scatter_with_reduce_has_no_derivative():
    x = tidal.tensor(X45, requires_grad=True)
    y = (x * 1).scatter(0, ix(tidal, IDX), 2.0, reduce="multiply")
    with pytest.raises(RuntimeError, match="derivative for aten::scatter is not implemented"):
        y.sum().backward()


def test_scatter_add():
    src = RNG.standard_normal((2, 5))
    compare(lambda lib, x, s: x.scatter_add(0, ix(lib, IDX), s), X45, src, name="ScatterAddBackward0")

    def inplace(lib, x, s):
        y = x * 1
        return y.scatter_add_(1, ix(lib, [[0, 0], [4, 4], [1, 2], [3, 3]]), s[:, :2] * 2)
    compare(inplace, X45, RNG.standard_normal((4, 3)), name="ScatterAddBackward0")


PROD_SRC = np.array([[0.5, 0.0, 2.0, 1.5, -1.0], [0.0, 3.0, 0.0, -2.0, 0.5]])  # single and double zeros
PROD_SELF = np.where(np.arange(20).reshape(4, 5) % 7 == 3, 0.0, X45)  # zeros in self too


@pytest.mark.parametrize("reduce", ["sum", "mean", "amax", "amin", "prod"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce(reduce, include_self):
    src, base = (PROD_SRC, PROD_SELF) if reduce == "prod" else (RNG.standard_normal((2, 5)), X45)
    compare(lambda lib, x, s: x.scatter_reduce(0, ix(lib, IDX), s, reduce, include_self=include_self),
            base, src, name="ScatterReduceBackward0")

    def inplace(lib, x, s):
        y = x * 1
        return y.scatter_reduce_(1, ix(lib, [[4, 4, 0], [1, 2, 1], [0, 3, 0], [2, 2, 2]]), s, reduce,
                                 include_self=include_self)
    compare(inplace, base, RNG.standard_normal((4, 3)))


def test_scatter_reduce_ties_share_the_gradient():
    base = np.array([[1.0, 2.0], [3.0, 3.0]])
    src = np.array([[3.0, 2.0], [1.0, 2.0]])
    for reduce in ("amax", "amin"):
        compare(lambda lib, x, s: x.scatter_reduce(0, ix(lib, [[1, 0], [0, 0]]), s, reduce), base, src)


# -- index_select / index_add / index_copy / index_fill ----------------------------------------
@pytest.mark.parametrize("dim,index", [(0, [3, 0, 3, 1]), (1, [4, 4]), (-1, []), (0, 2)])
def test_index_select(dim, index):
    compare(lambda lib, x: x.index_select(dim, ix(lib, index)), X45, name="IndexSelectBackward0")


def test_index_add_copy_fill():
    src = RNG.standard_normal((3, 5))
    compare(lambda lib, x, s: x.index_add(0, ix(lib, [3, 0, 3]), s, alpha=2.5), X45, src, name="IndexAddBackward0")
    compare(lambda lib, x, s: x.index_copy(0, ix(lib, [3, 0, 1]), s), X45, src, name="IndexCopyBackward0")
    compare(lambda lib, x, s: x.index_copy(1, ix(lib, [4, 2, 4]), s.t()[:4] * 1), X45, src)
    # torch's backward can't take the negative index that its forward accepts: give it the wrapped one
    compare(lambda lib, x: x.index_fill(1, ix(lib, [1, 1, -1] if lib is tidal else [1, 1, 4]), -2.0), X45,
            name="IndexFillBackward0")
    compare(lambda lib, x, v: x.index_fill(0, ix(lib, [2, 2, 0]), v), X45, np.array(0.7), name="IndexFillBackward1")

    def inplace(lib, x, s, v):
        y = x * 1
        y.index_add_(1, ix(lib, [0, 0, 4]), s[:4, :3].t().t() * 1)
        y.index_copy_(0, ix(lib, [1]), s[:1] * 1)
        return y.index_fill_(0, ix(lib, [-1] if lib is tidal else [3]), v)
    compare(inplace, X45, RNG.standard_normal((4, 5)), np.array(-0.3))


# -- index_put -----------------------------------------------------------------------------------
@pytest.mark.parametrize("accumulate", [False, True])
@pytest.mark.parametrize("indices,shape", [(([0, 3, 0],), (3, 5)), (([0, 3, 0],), (5,)),
                                           (([1, 1, -1], [0, 0, 2]), (3,)), (([1, 1, -1], [0, 0, 2]), ()),
                                           ("mask", ())])
def test_index_put(accumulate, indices, shape):
    def fn(lib, x, v):
        idx = (X45 > 0,) if indices == "mask" else indices
        tensors = tuple(bools(lib, i) if np.asarray(i).dtype == bool else ix(lib, i) for i in idx)
        return x.index_put(tensors, v, accumulate=accumulate)
    compare(fn, X45, RNG.standard_normal(shape), name="IndexPutBackward0")

    def inplace(lib, x, v):
        y = x * 1
        return y.index_put_((ix(lib, [2, 2]),), v, accumulate=accumulate)
    compare(inplace, X45, RNG.standard_normal((1, 5)))


# -- masks ---------------------------------------------------------------------------------------
MASK = RNG.standard_normal((4, 5)) > 0


def test_masked_fill():
    compare(lambda lib, x: x.masked_fill(bools(lib, MASK), 2.0), X45, name="MaskedFillBackward0")
    compare(lambda lib, x, v: x.masked_fill(bools(lib, MASK), v), X45, np.array(1.5), name="MaskedFillBackward1")
    compare(lambda lib, x: x[:, :1].masked_fill(bools(lib, MASK), -1.0), X45)  # input broadcast

    def inplace(lib, x, v):
        y = x * 1
        return y.masked_fill_(bools(lib, MASK[0]), v)
    compare(inplace, X45, np.array(0.25), name="MaskedFillBackward1")


def test_masked_scatter():
    src = RNG.standard_normal((5, 5))  # more elements than the mask selects: the rest get zeros
    compare(lambda lib, x, s: x.masked_scatter(bools(lib, MASK), s), X45, src, name="MaskedScatterBackward0")
    compare(lambda lib, x, s: x[:1].masked_scatter(bools(lib, MASK), s), X45, src)

    def inplace(lib, x, s):
        y = x * 1
        return y.masked_scatter_(bools(lib, MASK[1]), s[1:])
    compare(inplace, X45, src)


def test_masked_select():
    compare(lambda lib, x: x.masked_select(bools(lib, MASK)), X45, name="MaskedSelectBackward0")
    compare(lambda lib, x: lib.masked_select(x[:, 2:3], bools(lib, MASK)), X45)  # input broadcast to the mask
    compare(lambda lib, x: x.masked_select(bools(lib, np.zeros((4, 5), bool))), X45)


# -- take / put / take_along_dim --------------------------------------------------------------------
def test_take():
    compare(lambda lib, x: x.take(ix(lib, [[0, -1, 7], [7, 19, -20]])), X45, name="TakeBackward0")
    compare(lambda lib, x: x.t().take(ix(lib, [3, 3, -2])), X45)


@pytest.mark.parametrize("accumulate", [False, True])
def test_put(accumulate):
    src = RNG.standard_normal((2, 3))
    compare(lambda lib, x, s: x.put(ix(lib, [0, -1, 7, 7, 19, 3]), s, accumulate=accumulate), X45, src,
            name="PutBackward0")

    def inplace(lib, x, s):
        y = x * 1
        return y.put_(ix(lib, [[1, 1], [-3, 0]]), s[:, :2].t() * 1, accumulate=accumulate)
    compare(inplace, X45, src)


def test_take_along_dim():
    compare(lambda lib, x: lib.take_along_dim(x, ix(lib, [[0, -1, 3, 3]]).t(), 0), X45,
            name="GatherBackward0")
    compare(lambda lib, x: lib.take_along_dim(x, ix(lib, [[[3, -4]], [[0, 0]], [[1, 2]]]), 2), X345[:, :1, :4].copy())
    compare(lambda lib, x: lib.take_along_dim(x[:1, :2], ix(lib, [[0, 1, 0]] * 4), 1), X45)  # input broadcast
    compare(lambda lib, x: lib.take_along_dim(x, ix(lib, [[0, 5], [19, 5]])), X45)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_low_precision_gradients(dtype):
    def graph(lib, x):
        y = x * 1
        y[0] = 1.0
        return (x.gather(0, ix(lib, IDX)).sum() + (x[1:, [0, 0]] * 2).sum() + y.index_select(1, ix(lib, [3, 3])).sum()
                + x.take(ix(lib, [0, -1, 0])).sum() + x.scatter_reduce(0, ix(lib, IDX), x[:2] * 3, "amax").sum())
    x = tidal.tensor(X45, dtype=getattr(tidal, dtype), requires_grad=True)
    tx = torch.tensor(X45, dtype=getattr(torch, dtype), requires_grad=True)
    graph(tidal, x).backward()
    graph(torch, tx).backward()
    assert x.grad.dtype == x.dtype
    np.testing.assert_allclose(x.grad.float().numpy(), tx.grad.float().numpy(), rtol=1e-2, atol=1e-2)


# -- out= and grad ---------------------------------------------------------------------------------
@pytest.mark.parametrize("op", ["gather", "index_select", "take", "take_along_dim", "masked_select"])
def test_out_with_grad_raises(op):
    x = tidal.tensor(X45, requires_grad=True)
    args = {"gather": (0, ix(tidal, IDX)), "index_select": (0, ix(tidal, [1])), "take": (ix(tidal, [1]),),
            "take_along_dim": (ix(tidal, [[1] * 5]), 0), "masked_select": (bools(tidal, MASK),)}[op]
    out = tidal.empty(0, dtype=tidal.float64)
    with pytest.raises(RuntimeError, match=f"{op}\\(\\): functions with out=... arguments don't support automatic"):
        getattr(tidal, op)(x, *args, out=out)
    with tidal.no_grad():
        getattr(tidal, op)(x, *args, out=out)


# -- double backward and finite differences ---------------------------------------------------------
def test_double_backward():
    double_backward(lambda lib, x: x.gather(0, ix(lib, IDX)), X45)
    double_backward(lambda lib, x: x.index_select(1, ix(lib, [4, 0, 4])), X45)
    double_backward(lambda lib, x: x[1:, None, ::2], X345)
    double_backward(lambda lib, x: x[[0, 2, 0], 1], X345)
    double_backward(lambda lib, x: x[x > 0], X345)
    double_backward(lambda lib, x, s: x.scatter_add(0, ix(lib, IDX), s * s), X45, RNG.standard_normal((2, 5)))
    double_backward(lambda lib, x: x.take(ix(lib, [1, -1, 1])), X45)
    double_backward(lambda lib, x, v: x.index_put((ix(lib, [0, 0]),), v * v, accumulate=True), X45,
                    RNG.standard_normal(5))


def test_double_backward_of_the_upstream_gradient():
    """d/dg of gather's backward is gather again: the backward formula records its own graph."""
    x = tidal.tensor(X45, requires_grad=True)
    g = tidal.tensor(RNG.standard_normal((2, 5)), requires_grad=True)
    (gx,) = tidal.autograd.grad(x.gather(0, ix(tidal, IDX)), x, g, create_graph=True)
    assert gx.grad_fn is not None
    w = RNG.standard_normal((4, 5))
    (gx * tidal.tensor(w)).sum().backward()
    np.testing.assert_allclose(g.grad.numpy(), np.take_along_axis(w, np.array(IDX), 0))


def _numeric_grad(f, x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    grad = np.zeros_like(x)
    for k in np.ndindex(x.shape):
        step = np.zeros_like(x)
        step[k] = eps
        grad[k] = (f(x + step) - f(x - step)) / (2 * eps)
    return grad


@pytest.mark.parametrize("case", ["getitem", "scatter_reduce_prod", "scatter_reduce_mean", "masked_scatter"])
def test_finite_differences(case):
    w = RNG.standard_normal((3, 4, 5))
    fns = {
        "getitem": lambda t: t[1:, [0, 0, 3]],
        "scatter_reduce_prod": lambda t: t[0].scatter_reduce(0, ix(tidal, IDX), t[1, :2], "prod"),
        "scatter_reduce_mean": lambda t: t[0].scatter_reduce(1, ix(tidal, [[0, 0], [1, 4]]), t[2, :2, :2],
                                                             "mean", include_self=False),
        "masked_scatter": lambda t: t[0].masked_scatter(bools(tidal, MASK), t[2]),
    }

    def weighted(t):
        out = fns[case](t)
        return (out * tidal.tensor(w.reshape(-1)[:out.numel()].reshape(tuple(out.shape)))).sum()
    x = tidal.tensor(X345, requires_grad=True)
    weighted(x).backward()
    numeric = _numeric_grad(lambda arr: float(weighted(tidal.tensor(arr))), X345)
    np.testing.assert_allclose(x.grad.numpy(), numeric, rtol=1e-6, atol=1e-7)

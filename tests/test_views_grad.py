"""Gradients of views, shape ops and splits against torch: .grad values, node names, double backward."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import tidal

torch = pytest.importorskip("torch")


def leaves(rng, shapes):
    """The same float64 leaves in tidal and torch."""
    arrs = [np.asarray(rng.standard_normal(s)) for s in shapes]
    return ([tidal.tensor(a, requires_grad=True) for a in arrs],
            [torch.tensor(a, requires_grad=True) for a in arrs])


def outputs_of(res) -> list:
    return list(res) if isinstance(res, (tuple, list)) else [res]


def run_both(rng, fn, shapes, use=None):
    """`fn(*leaves, lib)` in both libraries, backward from the outputs picked by `use` with the same gradients."""
    ours, refs = leaves(rng, shapes)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # T on non-2-D tensors
        got, want = outputs_of(fn(*ours, tidal)), outputs_of(fn(*refs, torch))
    assert len(got) == len(want)
    picked = range(len(got)) if use is None else use
    grads = [np.asarray(rng.standard_normal(tuple(want[k].shape))) for k in picked]
    for k in picked:
        assert got[k].requires_grad, f"output {k} does not require grad"
        assert tuple(got[k].shape) == tuple(want[k].shape)
    tidal.autograd.backward([got[k] for k in picked], [tidal.tensor(g) for g in grads])
    torch.autograd.backward([want[k] for k in picked], [torch.tensor(g) for g in grads])
    for a, b in zip(ours, refs):
        if b.grad is None:
            assert a.grad is None or not a.grad.numpy().any()
            continue
        assert a.grad is not None and tuple(a.grad.shape) == tuple(b.shape)
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-12, atol=1e-12)
    return got, want


def node_name(t) -> str | None:
    return None if t.grad_fn is None else type(t.grad_fn).__name__


# (id, input shapes, fn(*leaves, lib)); every output gets a gradient
CASES = [
    ("view", [(3, 4, 5)], lambda x, L: x.view(12, 5)),
    ("view_infer", [(3, 4, 5)], lambda x, L: x.view(-1, 4, 1)),
    ("view_as", [(3, 4)], lambda x, L: x.view_as(L.zeros(2, 6))),
    ("reshape", [(3, 4, 5)], lambda x, L: x.reshape(5, 12)),
    ("reshape_copy", [(3, 4, 5)], lambda x, L: x.transpose(0, 2).reshape(60)),
    ("reshape_as", [(3, 4)], lambda x, L: x.t().reshape_as(L.zeros(12))),
    ("flatten", [(3, 4, 5)], lambda x, L: x.flatten()),
    ("flatten_dims", [(3, 4, 5)], lambda x, L: L.flatten(x, 1, 2)),
    ("flatten_copy", [(3, 4, 5)], lambda x, L: x.permute(2, 0, 1).flatten(0, 1)),
    ("flatten_0d", [()], lambda x, L: x.flatten()),
    ("unflatten", [(3, 12)], lambda x, L: x.unflatten(1, (2, -1, 3))),
    ("ravel", [(3, 4)], lambda x, L: x.ravel()),
    ("ravel_copy", [(3, 4)], lambda x, L: x.t().ravel()),
    ("transpose", [(3, 4, 5)], lambda x, L: x.transpose(0, 2)),
    ("swapaxes", [(3, 4, 5)], lambda x, L: L.swapaxes(x, 1, -1)),
    ("swapdims", [(3, 4, 5)], lambda x, L: x.swapdims(0, 1)),
    ("transpose_0d", [()], lambda x, L: x.transpose(0, -1)),
    ("permute", [(2, 3, 4, 5)], lambda x, L: x.permute(2, 0, 3, 1)),
    ("t", [(3, 4)], lambda x, L: x.t()),
    ("t_1d", [(4,)], lambda x, L: L.t(x)),
    ("T", [(3, 4)], lambda x, L: x.T),
    ("T_3d", [(2, 3, 4)], lambda x, L: x.T),
    ("mT", [(2, 3, 4)], lambda x, L: x.mT),
    ("mH", [(2, 3, 4)], lambda x, L: x.mH),
    ("H", [(3, 4)], lambda x, L: x.H),
    ("adjoint", [(2, 3, 4)], lambda x, L: x.adjoint()),
    ("movedim", [(2, 3, 4, 5)], lambda x, L: x.movedim((0, 1), (3, 0))),
    ("moveaxis", [(2, 3, 4)], lambda x, L: L.moveaxis(x, 0, -1)),
    ("expand", [(3, 1, 5)], lambda x, L: x.expand(2, 3, 4, 5)),
    ("expand_keep", [(3, 1, 5)], lambda x, L: x.expand(-1, 1, 5)),
    ("expand_ones", [(1, 1)], lambda x, L: x.expand(2, 1, 3)),
    ("expand_empty", [(1, 3)], lambda x, L: x.expand(0, 3)),
    ("expand_0d", [()], lambda x, L: x.expand(2, 3)),
    ("expand_as", [(4, 1)], lambda x, L: x.expand_as(L.zeros(2, 4, 3))),
    ("broadcast_to", [(3, 1)], lambda x, L: L.broadcast_to(x, (2, 3, 4))),
    ("broadcast_tensors", [(3, 1), (4,)], lambda x, y, L: L.broadcast_tensors(x, y)),
    ("squeeze", [(3, 1, 4, 1)], lambda x, L: x.squeeze()),
    ("squeeze_dim", [(3, 1, 4, 1)], lambda x, L: x.squeeze(1)),
    ("squeeze_noop", [(3, 1, 4, 1)], lambda x, L: x.squeeze(0)),
    ("squeeze_dims", [(3, 1, 4, 1)], lambda x, L: L.squeeze(x, (1, 3))),
    ("unsqueeze", [(3, 4)], lambda x, L: x.unsqueeze(1)),
    ("unsqueeze_last", [(3, 4)], lambda x, L: L.unsqueeze(x, -1)),
    ("narrow", [(4, 6)], lambda x, L: x.narrow(1, 2, 3)),
    ("narrow_neg", [(4, 6)], lambda x, L: L.narrow(x, 0, -3, 2)),
    ("narrow_empty", [(4, 6)], lambda x, L: x.narrow(1, 6, 0)),
    ("narrow_strided", [(4, 6)], lambda x, L: x.t().narrow(1, 1, 2)),
    ("select", [(3, 4, 5)], lambda x, L: x.select(1, 2)),
    ("select_neg", [(3, 4, 5)], lambda x, L: L.select(x, 0, -1)),
    ("diagonal", [(4, 5)], lambda x, L: x.diagonal()),
    ("diagonal_offset", [(4, 5)], lambda x, L: x.diagonal(2)),
    ("diagonal_neg", [(3, 4, 5)], lambda x, L: L.diagonal(x, -1, 0, 2)),
    ("diagonal_empty", [(4, 5)], lambda x, L: x.diagonal(7)),
    ("unfold_overlap", [(3, 7)], lambda x, L: x.unfold(1, 3, 2)),
    ("unfold_gaps", [(3, 7)], lambda x, L: x.unfold(1, 2, 3)),
    ("unfold_0d", [()], lambda x, L: x.unfold(0, 1, 1)),
    ("as_strided", [(4, 5)], lambda x, L: x.as_strided((3, 2), (5, 2), 1)),
    ("as_strided_overlap", [(9,)], lambda x, L: L.as_strided(x, (3, 3), (1, 1))),
    ("as_strided_of_view", [(4, 5)], lambda x, L: x.narrow(0, 1, 3).as_strided((2, 3), (5, 1), 7)),
    ("split", [(7, 3)], lambda x, L: x.split(3)),
    ("split_sizes", [(3, 7)], lambda x, L: L.split(x, [2, 0, 5], 1)),
    ("split_with_sizes", [(7, 3)], lambda x, L: x.split_with_sizes([4, 3])),
    ("chunk", [(3, 7)], lambda x, L: x.chunk(3, 1)),
    ("tensor_split", [(7, 3)], lambda x, L: x.tensor_split(3)),
    ("tensor_split_idx", [(3, 7)], lambda x, L: L.tensor_split(x, [1, 5, 4], 1)),
    ("hsplit", [(2, 6)], lambda x, L: x.hsplit(3)),
    ("vsplit", [(4, 3)], lambda x, L: L.vsplit(x, [1])),
    ("dsplit", [(2, 2, 4)], lambda x, L: x.dsplit(2)),
    ("unbind", [(3, 4)], lambda x, L: x.unbind(1)),
    ("cat", [(2, 3), (4, 3), (1, 3)], lambda a, b, c, L: L.cat([a, b, c])),
    ("cat_dim", [(2, 3), (2, 1)], lambda a, b, L: L.cat((a, b), -1)),
    ("cat_empty", [(2, 3), (0,)], lambda a, b, L: L.cat([a, b, a], 1)),
    ("concat", [(2, 3), (2, 3)], lambda a, b, L: L.concat([a.t(), b.t()], 1)),
    ("stack", [(2, 3), (2, 3)], lambda a, b, L: L.stack([a, b], 1)),
    ("hstack", [(2, 3), (2, 1)], lambda a, b, L: L.hstack([a, b])),
    ("hstack_1d", [(2,), (3,)], lambda a, b, L: L.hstack([a, b])),
    ("vstack", [(3,), (3,)], lambda a, b, L: L.vstack([a, b])),
    ("row_stack", [(2, 3), (3,)], lambda a, b, L: L.row_stack([a, b])),
    ("dstack", [(2, 3), (2, 3)], lambda a, b, L: L.dstack([a, b])),
    ("column_stack", [(3,), (3, 2), ()], lambda a, b, c, L: L.column_stack([a, b, c.expand(3)])),
    ("flip", [(3, 4, 5)], lambda x, L: x.flip(0, 2)),
    ("fliplr", [(3, 4)], lambda x, L: L.fliplr(x)),
    ("flipud", [(3, 4)], lambda x, L: x.flipud()),
    ("roll", [(3, 4)], lambda x, L: x.roll((1, -2), (0, 1))),
    ("roll_flat", [(3, 4)], lambda x, L: L.roll(x, 5)),
    ("rot90", [(3, 4)], lambda x, L: x.rot90()),
    ("rot90_2", [(2, 3, 4)], lambda x, L: L.rot90(x, 2, (2, 0))),
    ("rot90_3", [(3, 4)], lambda x, L: x.rot90(-1, (1, 0))),
    ("rot90_0", [(3, 4)], lambda x, L: x.rot90(4)),
    ("repeat", [(2, 3)], lambda x, L: x.repeat(2, 1, 3)),
    ("repeat_0d", [()], lambda x, L: x.repeat(4)),
    ("tile", [(2, 3)], lambda x, L: x.tile((2,))),
    ("repeat_interleave", [(2, 3)], lambda x, L: x.repeat_interleave(2, 1)),
    ("repeat_interleave_flat", [(2, 3)], lambda x, L: L.repeat_interleave(x, 3)),
    ("repeat_interleave_counts", [(4, 3)],
     lambda x, L: x.repeat_interleave(L.tensor([2, 0, 3, 1]), 0)),
    ("tril", [(4, 5)], lambda x, L: x.tril()),
    ("triu", [(2, 4, 5)], lambda x, L: L.triu(x, 1)),
    ("tril_neg", [(4, 5)], lambda x, L: L.tril(x, -2)),
    ("atleast_1d", [()], lambda x, L: L.atleast_1d(x)),
    ("atleast_2d", [(3,)], lambda x, L: L.atleast_2d(x)),
    ("atleast_3d", [(3,), ()], lambda x, y, L: L.atleast_3d(x, y)),
    ("atleast_3d_2d", [(2, 3)], lambda x, L: L.atleast_3d(x)),
    ("narrow_copy", [(4, 6)], lambda x, L: x.narrow_copy(1, 1, 3)),
]
COPIES = [
    ("contiguous", [(3, 4)], lambda x, L: x.t().contiguous()),
    ("clone", [(3, 4, 5)], lambda x, L: x.permute(2, 0, 1).narrow(0, 1, 2).clone()),
]


@pytest.mark.parametrize("shapes, fn", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_gradients_and_nodes_match_torch(rng, shapes, fn):
    got, want = run_both(rng, fn, shapes)
    for o, w in zip(got, want):
        assert node_name(o) == node_name(w)


@pytest.mark.parametrize("shapes, fn", [c[1:] for c in COPIES], ids=[c[0] for c in COPIES])
def test_copies_of_views(rng, shapes, fn):
    got, want = run_both(rng, fn, shapes)
    for o, w in zip(got, want):
        assert node_name(o) == node_name(w) == "CloneBackward0"


SPLITS = [
    ("split", lambda x, L: x.split(2, 1), [1]),
    ("split_with_sizes", lambda x, L: x.split([1, 4, 2], 1), [0, 2]),
    ("chunk", lambda x, L: x.chunk(4, 1), [3]),
    ("unbind", lambda x, L: x.unbind(0), [0, 2]),
    ("tensor_split", lambda x, L: x.tensor_split((2, 3), 1), [1]),
]


@pytest.mark.parametrize("fn, use", [s[1:] for s in SPLITS], ids=[s[0] for s in SPLITS])
def test_unused_pieces_get_zeros(rng, fn, use):
    run_both(rng, fn, [(3, 7)], use)


CHAINS = [
    lambda x, L: (x.transpose(0, 1).narrow(0, 1, 2).unsqueeze(0).expand(3, 2, 4, 4) * 2).exp(),
    lambda x, L: L.cat([x.flip(0), x.select(2, 1).unsqueeze(-1).expand(4, 3, 4)], 2).reshape(4, -1).t().sin(),
    lambda x, L: x.permute(2, 1, 0).diagonal(0, 0, 2).unfold(0, 2, 1) * x.sum(),
    lambda x, L: L.stack(x.unbind(1), -1).roll(1, 0).tril().repeat(1, 2, 1) ** 2,
    lambda x, L: x.view(2, 2, 3, 4).movedim(0, -1).flatten(1).split([10, 14], 1)[1].tanh(),
    lambda x, L: L.where(x.narrow(2, 0, 2) > 0, x.narrow(2, 2, 2), x.narrow(2, 1, 2).rot90(1, (0, 2)).transpose(0, 2)),
    lambda x, L: x.squeeze().as_strided((3, 3), (4, 1), 2) + x[0].t().contiguous().narrow(0, 0, 3).narrow(1, 0, 3),
]


@pytest.mark.parametrize("k", range(len(CHAINS)))
def test_chains_of_views_then_math(rng, k):
    run_both(rng, CHAINS[k], [(4, 3, 4)])


def test_leaf_used_through_many_views_accumulates(rng):
    def fn(x, L):
        return x.t() * x.t().contiguous() + x.view(4, 3).reshape(3, 4).t() + L.cat(x.split(1, 0), 1).view(4, 3)
    run_both(rng, fn, [(3, 4)])


DOUBLE = [
    ("reshape", [(3, 4)], lambda x, L: x.t().reshape(2, 6)),
    ("transpose", [(3, 4, 2)], lambda x, L: x.transpose(0, 2)),
    ("expand", [(3, 1)], lambda x, L: x.expand(2, 3, 4)),
    ("cat", [(3, 4)], lambda x, L: L.cat([x, x * 2, x.narrow(0, 1, 1)], 0)),
    ("narrow", [(3, 4)], lambda x, L: x.narrow(1, 1, 2)),
    ("select", [(3, 4)], lambda x, L: x.select(0, 1)),
    ("unfold", [(2, 6)], lambda x, L: x.unfold(1, 3, 1)),
    ("split", [(3, 4)], lambda x, L: x.split([1, 3], 1)[1]),
    ("stack", [(3, 4)], lambda x, L: L.stack([x, x.flip(0)], 1)),
    ("repeat", [(2, 3)], lambda x, L: x.repeat(2, 2)),
    ("repeat_interleave", [(3, 2)], lambda x, L: x.repeat_interleave(L.tensor([1, 0, 2]), 0)),
    ("diagonal", [(3, 4)], lambda x, L: x.diagonal(1)),
    ("as_strided", [(3, 4)], lambda x, L: x.as_strided((3, 3), (1, 2), 1)),
    ("unbind", [(3, 4)], lambda x, L: x.unbind(1)[2]),
    ("roll_rot90_tril", [(3, 4)], lambda x, L: x.roll(1, 1).rot90().tril(-1)),
]


@pytest.mark.parametrize("shapes, view", [d[1:] for d in DOUBLE], ids=[d[0] for d in DOUBLE])
def test_double_backward_matches_torch(rng, shapes, view):
    arr = rng.standard_normal(shapes[0])
    x, tx = tidal.tensor(arr, requires_grad=True), torch.tensor(arr, requires_grad=True)
    shape = tuple(view(tx, torch).shape)
    v_arr, w_arr = rng.standard_normal(shape), rng.standard_normal(arr.shape)
    v, tv = tidal.tensor(v_arr, requires_grad=True), torch.tensor(v_arr, requires_grad=True)
    results = []
    for lib, leaf, up in ((tidal, x, v), (torch, tx, tv)):
        y = view(leaf, lib)
        (gx,) = lib.autograd.grad(lib.sin(y) * y, leaf, up, create_graph=True)
        gx.backward(lib.tensor(w_arr))
        results.append((gx.detach().numpy(), leaf.grad.numpy(), up.grad.numpy()))
    for ours, ref in zip(*results):
        np.testing.assert_allclose(ours, ref, rtol=1e-12, atol=1e-12)


def test_finite_differences(rng):
    base = rng.standard_normal((3, 4))
    g = rng.standard_normal((4, 6))

    def f(x):
        return tidal.cat([x.t().unfold(1, 2, 1).flatten(1), x.t().narrow(1, 0, 2).exp()], 1).repeat(1, 1)

    x = tidal.tensor(base, requires_grad=True)
    f(x).backward(tidal.tensor(g))
    eps, num = 1e-6, np.zeros_like(base)
    for i in np.ndindex(base.shape):
        d = np.zeros_like(base)
        d[i] = eps
        num[i] = ((f(tidal.tensor(base + d)).numpy() - f(tidal.tensor(base - d)).numpy()) * g).sum() / (2 * eps)
    np.testing.assert_allclose(x.grad.numpy(), num, rtol=1e-6, atol=1e-8)


# -- views of leaves, in-place metadata ops, out=, no_grad ------------------------------------------
def test_views_of_leaves_require_grad_and_share_memory():
    x = tidal.zeros(2, 3, dtype=tidal.float64, requires_grad=True)
    for v in (x.view(6), x.t(), x[0], x.narrow(1, 0, 2), x.unsqueeze(0), x.expand(4, 2, 3), x.split(1)[0]):
        assert v.requires_grad and v.grad_fn is not None and not v.is_leaf
        assert v.untyped_storage_id() == x.untyped_storage_id()
    assert not x.int().view(6).requires_grad
    with tidal.no_grad():
        assert x.view(6).grad_fn is None
    assert x.view(tidal.float64).grad_fn is None  # view(dtype) is not differentiable, as in torch


def test_leaf_grad_has_leaf_shape(rng):
    x = tidal.tensor(rng.standard_normal((3, 1)), requires_grad=True)
    x.expand(2, 3, 5).permute(2, 0, 1).reshape(-1).backward(tidal.ones(30, dtype=tidal.float64))
    assert tuple(x.grad.shape) == (3, 1)
    np.testing.assert_allclose(x.grad.numpy(), np.full((3, 1), 10.0))


@pytest.mark.parametrize("call", ["t_()", "transpose_(0, 2)", "swapaxes_(1, 2)", "squeeze_()", "squeeze_(1)",
                                  "squeeze_((1,))", "unsqueeze_(0)", "as_strided_((2, 3), (1, 2))", "tril_()",
                                  "triu_(1)"])
def test_inplace_metadata_ops_on_non_leaves(rng, call):
    arr = rng.standard_normal((3, 1, 4) if "(0, 2)" in call or "(1, 2)" in call or "squeeze" in call else (3, 4))
    results = []
    for lib in (tidal, torch):
        x = lib.tensor(arr, requires_grad=True)
        y = x * 2
        out = eval("y." + call)  # noqa: S307  (a fixed list of calls)
        assert out is y
        results.append((node_name(y), tuple(y.shape)))
        (y * y).backward(lib.ones(tuple(y.shape), dtype=lib.float64))
        results.append(x.grad.numpy())
    assert results[0] == results[2]
    np.testing.assert_allclose(results[1], results[3], rtol=1e-12)


@pytest.mark.parametrize("call", ["t_()", "unsqueeze_(0)", "tril_()"])
def test_inplace_on_leaf_requiring_grad(call):
    x = tidal.zeros(2, 3, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
        eval("x." + call)  # noqa: S307
    with tidal.no_grad():
        eval("x." + call)  # noqa: S307


def test_out_arguments_refuse_grad():
    x = tidal.zeros(2, 3, requires_grad=True)
    for fn, op in ((lambda: tidal.cat([x, x], out=tidal.empty(4, 3)), "cat"),
                   (lambda: tidal.stack([x, x], out=tidal.empty(2, 2, 3)), "stack"),
                   (lambda: tidal.tril(x, out=tidal.empty(2, 3)), "tril")):
        with pytest.raises(RuntimeError, match=rf"{op}\(\): functions with out=\.\.\. arguments don't support"):
            fn()
    with tidal.no_grad():
        assert tidal.cat([x, x], out=tidal.empty(4, 3)).shape == (4, 3)


def test_gradients_in_float32_and_mixed_dtypes(rng):
    a = tidal.tensor(rng.standard_normal((2, 3)).astype(np.float32), requires_grad=True)
    b = tidal.tensor(rng.standard_normal((2, 3)), requires_grad=True)
    i = tidal.ones(2, 3, dtype=tidal.int64)
    out = tidal.cat([a, b, i], 1)
    assert out.dtype is tidal.float64
    out.backward(tidal.ones(2, 9, dtype=tidal.float64))
    assert a.grad.dtype is tidal.float32 and b.grad.dtype is tidal.float64
    np.testing.assert_array_equal(a.grad.numpy(), np.ones((2, 3), np.float32))
    h = tidal.tensor(rng.standard_normal(7).astype(np.float32), dtype=tidal.bfloat16, requires_grad=True)
    h.unfold(0, 3, 1).backward(tidal.ones(5, 3, dtype=tidal.bfloat16))
    np.testing.assert_array_equal(h.grad.float().numpy(), [1, 2, 3, 3, 3, 2, 1])


def test_sum_to_size_matches_torch(rng):
    arr = rng.standard_normal((2, 3, 4))
    for size in [(3, 1), (1, 4), (2, 1, 4), (4,), (2, 3, 4), ()]:
        got = tidal.tensor(arr).sum_to_size(size)
        want = torch.tensor(arr).sum_to_size(size)
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)
    with pytest.raises(RuntimeError, match=r"size \{\[3, 3\]\} is not expandable to size \{\[2, 3, 4\]\}"):
        tidal.tensor(arr).sum_to_size(3, 3)

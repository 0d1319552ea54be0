"""The composites' nodes as kernel-less records (issue 12, session 18): softmax, the norms, attention, embedding,
the elementwise losses, masked_fill/masked_select, basic indexing's views, setitem, ops without a derivative.

Each op's node is attached by its record (ops/dispatch/primitive.py: a record with no kernel, its backward the
composite's own formula): the grad_fn class torch's op records, gradients equal to torch's, a second gradient
through the record's backward, and no node without grad."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import tidal
import tidal.compat as ttorch
import tidal.nn.functional as F
from tidal.ops.dispatch.primitive import PRIMITIVES
from tidal.autograd import view_inplace

RNG = np.random.default_rng(18)


def _pair(*shape, low=-2.0, high=2.0, grad=True):
    a = RNG.uniform(low, high, shape)
    return ttorch.tensor(a, requires_grad=grad), torch.tensor(a, requires_grad=grad)


def _mask(*shape):
    m = RNG.uniform(size=shape) > 0.5
    return ttorch.tensor(m), torch.tensor(m)


def _grads(out, inputs, lib):
    weights = np.linspace(0.5, 1.5, out.numel()).reshape(tuple(out.shape))
    w = (ttorch if lib == "t" else torch).tensor(weights)
    return (tidal.autograd if lib == "t" else torch.autograd).grad((out * w).sum(), inputs, create_graph=True)


CASES = {  # name -> (record, build(lib module, F module, tensors...) -> output, the tensors' shapes)
    "softmax": ("softmax", lambda L, F_, x: L.softmax(x, 1), [(3, 4, 5)]),
    "softmax_rows": ("softmax", lambda L, F_, x: L.softmax(x, -1), [(3, 5)]),
    "log_softmax": ("log_softmax", lambda L, F_, x: L.log_softmax(x, 0), [(3, 4)]),
    "layer_norm_rows": ("layer_norm", lambda L, F_, x, w, b: F_.layer_norm(x, (6,), w, b), [(4, 6), (6,), (6,)]),
    "group_norm": ("native_norm", lambda L, F_, x, w, b: F_.group_norm(x, 2, w, b), [(2, 4, 3), (4,), (4,)]),
    "batch_norm": ("native_norm", lambda L, F_, x, w, b: F_.batch_norm(x, None, None, w, b, training=True),
                   [(5, 3), (3,), (3,)]),
    "sdpa_fused": ("scaled_dot_product_attention",
                   lambda L, F_, q, k, v: F_.scaled_dot_product_attention(q, k, v), [(1, 2, 3, 4), (1, 2, 5, 4),
                                                                                    (1, 2, 5, 4)]),
    "smooth_l1": ("smooth_l1_loss", lambda L, F_, a, b: F_.smooth_l1_loss(a, b, reduction="none", beta=0.8),
                  [(3, 4), (3, 4)]),
    "huber": ("smooth_l1_loss", lambda L, F_, a, b: F_.huber_loss(a, b, reduction="none", delta=0.7),
              [(3, 4), (3, 4)]),
    "bce_with_logits": ("binary_cross_entropy_with_logits",
                        lambda L, F_, x, t: F_.binary_cross_entropy_with_logits(
                            x, t.sigmoid(), pos_weight=L.tensor([0.5, 1.0, 2.0, 3.0], dtype=L.float64),
                            reduction="none"), [(3, 4), (3, 4)]),
    "select": ("getitem_view", lambda L, F_, x: x[1], [(3, 4)]),
    "slice": ("getitem_view", lambda L, F_, x: x[:, 1:3], [(3, 4)]),
    "unsqueeze": ("getitem_view", lambda L, F_, x: x[None, 2], [(3, 4)]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_node_class_and_gradients_match_torch(case):
    record, build, shapes = CASES[case]
    assert PRIMITIVES[record].shapes is None and PRIMITIVES[record].kernels()["cpu"] is None
    made = [_pair(*s) for s in shapes]
    out = build(ttorch, F, *[m[0] for m in made])
    want = build(torch, torch.nn.functional, *[m[1] for m in made])
    assert type(out.grad_fn).__name__ == type(want.grad_fn).__name__
    assert out.grad_fn.backward_fn is PRIMITIVES[record].backward  # (the record's node, attached to the composite)
    np.testing.assert_allclose(out.detach().numpy(), want.detach().numpy(), rtol=1e-10, atol=1e-12)
    got_g = _grads(out, [m[0] for m in made], "t")
    want_g = _grads(want, [m[1] for m in made], "torch")
    for g, w in zip(got_g, want_g):
        np.testing.assert_allclose(g.detach().numpy(), w.detach().numpy(), rtol=1e-9, atol=1e-10)
    # (a view's gradients are constants; a norm's bias gradient, the output gradient summed, is one in tidal)
    both = [k for k, (g, w) in enumerate(zip(got_g, want_g)) if g.requires_grad and w.requires_grad]
    if case != "sdpa_fused" and both:  # (torch's flash attention node has no second gradient)
        # a second gradient runs through the record's backward (written in tidal ops)
        got_gg = tidal.autograd.grad(sum((got_g[k] * got_g[k]).sum() for k in both), [m[0] for m in made],
                                     allow_unused=True)
        want_gg = torch.autograd.grad(sum((want_g[k] * want_g[k]).sum() for k in both), [m[1] for m in made],
                                      allow_unused=True)
        for g, w in zip(got_gg, want_gg):
            if w is None:
                assert g is None or not g.numpy().any()
            else:
                np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-7, atol=1e-9)
    frozen = build(ttorch, F, *[m[0].detach() for m in made])
    assert frozen.grad_fn is None and not frozen.requires_grad


def test_bce_and_embedding_nodes_match_torch():
    p, tp = _pair(3, 4, low=0.05, high=0.95)
    t, tt = _pair(3, 4, low=0.0, high=1.0)
    loss, want = F.binary_cross_entropy(p, t, reduction="none"), torch.nn.functional.binary_cross_entropy(
        tp, tt, reduction="none")
    assert type(loss.grad_fn).__name__ == type(want.grad_fn).__name__ == "BinaryCrossEntropyBackward0"
    assert loss.grad_fn.backward_fn is PRIMITIVES["binary_cross_entropy"].backward
    for g, w in zip(_grads(loss, [p, t], "t"), _grads(want, [tp, tt], "torch")):
        np.testing.assert_allclose(g.detach().numpy(), w.detach().numpy(), rtol=1e-9)
    w, tw = _pair(7, 3)
    idx = np.array([[0, 6, 2], [2, 2, 5]])
    out = F.embedding(ttorch.tensor(idx), w, padding_idx=2)
    ref = torch.nn.functional.embedding(torch.tensor(idx), tw, padding_idx=2)
    assert type(out.grad_fn).__name__ == type(ref.grad_fn).__name__ == "EmbeddingBackward0"
    assert out.grad_fn.backward_fn is PRIMITIVES["embedding_lookup"].backward
    (g,), (tg,) = _grads(out, [w], "t"), _grads(ref, [tw], "torch")
    np.testing.assert_allclose(g.detach().numpy(), tg.detach().numpy())


@pytest.mark.parametrize("tensor_value", [False, True])
def test_masked_fill_overloads_and_masked_select(tensor_value):
    x, tx = _pair(3, 4)
    m, tm = _mask(3, 4)
    v, tv = (_pair() if tensor_value else (1.5, 1.5))
    out, want = x.masked_fill(m, v), tx.masked_fill(tm, tv)
    assert type(out.grad_fn).__name__ == type(want.grad_fn).__name__  # MaskedFillBackward0 / MaskedFillBackward1
    assert out.grad_fn.backward_fn is PRIMITIVES["masked_fill"].backward
    leaves, tleaves = ([x, v], [tx, tv]) if tensor_value else ([x], [tx])
    for g, w in zip(_grads(out, leaves, "t"), _grads(want, tleaves, "torch")):
        np.testing.assert_allclose(g.detach().numpy(), w.detach().numpy())
    sel, tsel = x.masked_select(m[1]), tx.masked_select(tm[1])
    assert type(sel.grad_fn).__name__ == type(tsel.grad_fn).__name__ == "MaskedSelectBackward0"
    assert sel.grad_fn.backward_fn is PRIMITIVES["masked_select"].backward
    (g,), (tg,) = _grads(sel, [x], "t"), _grads(tsel, [tx], "torch")
    np.testing.assert_allclose(g.detach().numpy(), tg.detach().numpy())


@pytest.mark.parametrize("index", [1, (slice(None), 2), [0, 2]])
def test_setitem_node(index):
    x, tx = _pair(3, 4)
    v, tv = _pair(4) if index != (slice(None), 2) else _pair(3)
    y, ty = x * 1, tx * 1
    y[index] = v
    ty[index] = tv
    assert type(y.grad_fn).__name__ == type(ty.grad_fn).__name__  # CopySlices / IndexPutBackward0
    # (a basic index writes through the view it makes, as torch's: the base's CopySlices; an advanced one is the
    # setitem record's node)
    basic = not isinstance(index, list)
    assert y.grad_fn.backward_fn is (view_inplace._copy_slices_backward if basic else PRIMITIVES["setitem"].backward)
    for g, w in zip(_grads(y, [x, v], "t"), _grads(ty, [tx, tv], "torch")):
        np.testing.assert_allclose(g.detach().numpy(), w.detach().numpy())


def test_ldl_solve_has_no_derivative_as_torch():
    a = RNG.standard_normal((4, 4))
    s = a @ a.T + 4 * np.eye(4)
    b = RNG.standard_normal((2, 4, 3))
    results = []
    for lib in (ttorch, torch):
        LD, piv = lib.linalg.ldl_factor(lib.tensor(s))
        LD.requires_grad_(True)
        x = lib.linalg.ldl_solve(LD, piv, lib.tensor(b))  # (B broadcast over a batch: the node links LD itself)
        assert type(x.grad_fn).__name__ == "NotImplemented" and x.grad_fn.next_functions[0][0] is not None
        if lib is ttorch:
            assert x.grad_fn.backward_fn is PRIMITIVES["no_derivative"].backward
        with pytest.raises(RuntimeError, match="derivative for aten::linalg_ldl_solve is not implemented"):
            x.sum().backward()
        results.append(x.detach().numpy())
    np.testing.assert_allclose(results[0], results[1], rtol=1e-10)

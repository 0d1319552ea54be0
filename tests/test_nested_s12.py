"""torch.nested against torch: nested_tensor / as_nested_tensor / nested_tensor_from_jagged in the jagged and strided
layouts, their metadata (sizes, ragged dim, offsets, layout), unbind, to_padded_tensor, pointwise ops and ops over
the trailing dims, gradients back to the components, and torch's errors."""
import subprocess
import sys

import numpy as np
import pytest
import torch

import tidal.compat as tc

RNG = np.random.default_rng(1216)
A, B = RNG.standard_normal((2, 3)).astype("float32"), RNG.standard_normal((4, 3)).astype("float32")
LAYOUT = {tc: tc.jagged, torch: torch.jagged}


def jt(L, requires_grad=False):
    return L.nested.nested_tensor([L.tensor(A), L.tensor(B)], layout=LAYOUT[L], requires_grad=requires_grad)


def close(got, want, rtol=1e-5, atol=1e-6):
    np.testing.assert_allclose(np.asarray(got.detach().numpy()), want.detach().numpy(), rtol=rtol, atol=atol)


def test_jagged_metadata():
    got, want = jt(tc), jt(torch)
    assert type(got).__name__ == type(want).__name__ == "NestedTensor"
    assert isinstance(got, tc.Tensor) and got.is_nested and not tc.ones(2).is_nested
    assert got.layout is tc.jagged and repr(got.layout) == repr(want.layout) == "torch.jagged"
    assert got.dim() == got.ndim == want.dim() == 3 and len(got) == len(want) == 2
    assert (got.size(0), got.size(2), got.size(-1)) == (want.size(0), want.size(2), want.size(-1))
    assert str(got.size(1)).startswith("j") and got.shape[1] is got.size(1)
    assert got.numel() == want.numel() and got.dtype == tc.float32 and not got.requires_grad
    assert got.offsets().tolist() == want.offsets().tolist() and got.offsets().dtype == tc.int64
    close(got.values(), want.values())
    assert repr(got) == f"NestedTensor(size=(2, {got.size(1)}, 3), offsets={got.offsets()!r}, contiguous=True)"
    for g, w in zip(got.unbind(), want.unbind()):
        close(g, w)
    close(got.to_padded_tensor(-1.0), want.to_padded_tensor(-1.0))
    close(tc.nested.to_padded_tensor(got, 0.5), torch.nested.to_padded_tensor(want, 0.5))


def test_ragged_dim_is_shared_only_through_the_same_offsets():
    x = jt(tc)
    assert (x + 1).size(1) is x.size(1) and x.sin().size(1) is x.size(1)
    y = jt(tc)
    assert y.size(1) is not x.size(1)
    for L, a, b in ((tc, x, y), (torch, jt(torch), jt(torch))):
        with pytest.raises(RuntimeError, match="cannot call binary pointwise function add.* with inputs of shapes"):
            a + b


POINTWISE = {
    "add_self": lambda L, x: x + x, "mul_number": lambda L, x: x * 2.5, "rsub": lambda L, x: 1 - x,
    "dense_trailing": lambda L, x: x + L.arange(3.0), "dense_per_sample": lambda L, x: x * L.tensor([[[2.0]], [[3.0]]]),
    "sin": lambda L, x: x.sin(), "torch_exp": lambda L, x: L.exp(x), "relu": lambda L, x: L.nn.functional.relu(x),
    "gelu": lambda L, x: L.nn.functional.gelu(x), "silu": lambda L, x: L.nn.functional.silu(x),
    "where": lambda L, x: L.where(x > 0, x, 0.0 * x), "clamp": lambda L, x: x.clamp(-0.5, 0.5),
    "linear": lambda L, x: L.nn.functional.linear(x, L.ones(5, 3) * 0.5, L.arange(5.0)),
    "matmul": lambda L, x: x @ L.ones(3, 2), "softmax": lambda L, x: x.softmax(-1),
    "log_softmax": lambda L, x: L.nn.functional.log_softmax(x, dim=2), "to_double": lambda L, x: x.to(L.float64),
    "clone": lambda L, x: x.clone(), "detach": lambda L, x: x.detach(), "compare": lambda L, x: x > 0,
}


@pytest.mark.parametrize("op", list(POINTWISE))
def test_jagged_pointwise_and_trailing_ops(op):
    got, want = POINTWISE[op](tc, jt(tc)), POINTWISE[op](torch, jt(torch))
    assert got.is_nested and want.is_nested
    assert got.dim() == want.dim() and got.size(-1) == want.size(-1) and str(got.dtype)[6:] == str(want.dtype)[6:]
    assert got.offsets().tolist() == want.offsets().tolist()
    close(got.values(), want.values())


def test_dropout_and_casts_keep_nesting():
    x = jt(tc)
    for y in (x.float(), x.double(), x.half(), tc.nn.functional.dropout(x, 0.5, training=False)):
        assert y.is_nested and y.offsets() is x.offsets()
    close(x.double().values(), jt(torch).double().values())
    tc.manual_seed(0)
    big = tc.nested.nested_tensor([tc.ones(300, 4), tc.ones(500, 4)], layout=LAYOUT[tc])
    y = tc.nn.Dropout(0.25)(big)
    assert y.is_nested and y.size(1) is big.size(1)
    kept = y.values().numpy()
    assert np.allclose(np.unique(kept), [0.0, 4.0 / 3.0]) and 0.2 < (kept == 0).mean() < 0.3


def test_layer_norm_of_nested():
    w, b = RNG.standard_normal(3).astype("float32"), RNG.standard_normal(3).astype("float32")
    got = tc.nn.functional.layer_norm(jt(tc), (3,), tc.tensor(w), tc.tensor(b))
    want = torch.nn.functional.layer_norm(jt(torch), (3,), torch.tensor(w), torch.tensor(b))
    assert got.is_nested and want.is_nested
    close(got.values(), want.values())


def test_chunk_split_and_components():
    """qkv.chunk(3, dim=-1) as attention blocks write it, split by sizes, and nt[k] (a component)."""
    x, t = (L.nested.nested_tensor([L.arange(24.0).reshape(2, 12), L.arange(36.0).reshape(3, 12)],
                                   layout=LAYOUT[L]) for L in (tc, torch))
    for got, want in ((x.chunk(3, dim=-1), t.chunk(3, dim=-1)), (tc.split(x, [4, 8], -1), torch.split(t, [4, 8], -1))):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert g.is_nested and g.size(1) is x.size(1) and g.size(2) == w.size(2)
            close(g.values(), w.values())
    close(x[1], t[1])
    close(x[-2], t[-2])


def test_cat_and_stack_along_dense_dims():
    res = {}
    for L in (tc, torch):
        a = jt(L, True)
        b = a.detach() * 2
        other = L.nested.nested_tensor([L.tensor(A), L.tensor(B)], layout=LAYOUT[L])  # same offsets, another j
        c, s = L.cat([a, b, other], dim=-1), L.stack([a, b], dim=-1)
        with pytest.raises(RuntimeError, match="stack\\(\\): expected all nested tensors to have the same nested"):
            L.stack([a, other], dim=-1)
        assert c.is_nested and c.dim() == 3 and c.size(2) == 9 and s.dim() == 4 and s.size(3) == 2
        (c.to_padded_tensor(0.0).sum() + (s * s).to_padded_tensor(0.0).sum()).backward()
        res[L] = (c.values(), s.values(), a.grad.values())
        with pytest.raises(RuntimeError, match=r"cat\(\): not supported for NestedTensor on dim=0"):
            L.cat([a, b], dim=0)
    for g, w in zip(res[tc], res[torch]):
        close(g, w)


def test_jagged_reductions():
    x, t = jt(tc), jt(torch)
    for got, want in ((x.sum(-1), t.sum(-1)), (x.mean(dim=2), t.mean(dim=2)), (x.amax(-1), t.amax(-1))):
        assert got.is_nested and got.dim() == want.dim() == 2
        close(got.values(), want.values())
    for got, want in ((x.sum(1), t.sum(1)), (x.mean(1), t.mean(1)), (x.sum(), t.sum())):
        assert not got.is_nested and tuple(got.shape) == tuple(want.shape)
        close(got, want)
    with pytest.raises(RuntimeError, match="reducing along the batch dimension but not the ragged dimension"):
        x.sum(0)  # (more reductions in tests/test_nested_s13.py)
    with pytest.raises(RuntimeError):
        t.sum(0)


def test_gradients_flow_to_the_components():
    grads = {}
    for L in (tc, torch):
        a, b = L.tensor(A, requires_grad=True), L.tensor(B, requires_grad=True)
        nt = L.nested.as_nested_tensor([a, b], layout=LAYOUT[L])
        assert nt.requires_grad and not nt.is_leaf
        padded = L.nn.functional.linear(nt.sin() * 2 + nt, L.ones(4, 3)).to_padded_tensor(0.0)
        assert type(padded.grad_fn).__name__ == "ToPaddedTensorBackward0"
        (padded * padded).sum().backward()
        grads[L] = (a.grad, b.grad)
    for g, w in zip(grads[tc], grads[torch]):
        close(g, w)


def test_nested_leaf_gradient_is_nested():
    got, want = jt(tc, True), jt(torch, True)
    assert got.is_leaf and got.requires_grad
    for x, L in ((got, tc), (want, torch)):
        L.nn.functional.gelu(x * 3).to_padded_tensor(1.0).pow(2).sum().backward()
    assert got.grad.is_nested and got.grad.offsets().tolist() == want.grad.offsets().tolist()
    close(got.grad.values(), want.grad.values())


def test_from_jagged_views_values_and_in_place_ops():
    for L in (tc, torch):
        values = L.arange(10.0).reshape(5, 2)
        nt = L.nested.nested_tensor_from_jagged(values, L.tensor([0, 2, 5]))
        assert nt.size(0) == 2 and nt.size(2) == 2 and [u.shape[0] for u in nt.unbind()] == [2, 3]
        nt.mul_(2)  # writes into the values it views
        assert values[4].tolist() == [16.0, 18.0]
        values[0, 0] = -1.0
        assert nt.unbind()[0][0, 0].item() == -1.0
    with pytest.raises(RuntimeError, match="At least one of offsets or lengths is required"):
        tc.nested.nested_tensor_from_jagged(tc.ones(3, 2))
    with pytest.raises(RuntimeError, match="At least one of offsets or lengths is required"):
        torch.nested.nested_tensor_from_jagged(torch.ones(3, 2))


def test_attention_over_sequences_of_different_lengths():
    """torch's variable-length attention: (B, j, H*D) projected, unflattened to (B, j, H, D), transposed to
    (B, H, j, D), scaled_dot_product_attention, back to (B, j, H*D); values and gradients to the sequences."""
    H, D = 2, 4
    arrays = [RNG.standard_normal((n, H * D)).astype("float32") for n in (3, 5, 1)]
    w = RNG.standard_normal((H * D, H * D)).astype("float32")
    res = {}
    for L in (tc, torch):
        xs = [L.tensor(a, requires_grad=True) for a in arrays]
        nt = L.nested.as_nested_tensor(xs, layout=LAYOUT[L])
        q = (nt @ L.tensor(w)).unflatten(-1, (H, D)).transpose(1, 2)
        assert q.dim() == 4 and (q.size(0), q.size(1), q.size(3)) == (3, H, D)
        out = L.nn.functional.scaled_dot_product_attention(q, q * 0.5, q, scale=0.3)
        assert out.is_nested and (out.size(1), out.size(3)) == (H, D)
        flat = out.transpose(1, 2).flatten(-2)
        assert flat.dim() == 3 and flat.size(2) == H * D and flat.offsets().tolist() == [0, 3, 8, 9]
        padded = flat.to_padded_tensor(0.0)
        (padded * padded).sum().backward()
        res[L] = (padded, [x.grad for x in xs], q.softmax(-1), q.sum(-1))
    close(res[tc][0], res[torch][0])
    for g, w_ in zip(res[tc][1], res[torch][1]):
        close(g, w_, rtol=1e-4, atol=1e-4)
    for k in (2, 3):
        close(res[tc][k].to_padded_tensor(0.0), res[torch][k].to_padded_tensor(0.0))


def test_attention_refusals_as_torch():
    for L in (tc, torch):
        q = L.nested.nested_tensor([L.ones(3, 2, 4), L.ones(5, 2, 4)], layout=LAYOUT[L]).transpose(1, 2)
        with pytest.raises(RuntimeError, match="No viable backend for scaled_dot_product_attention was found"):
            L.nn.functional.scaled_dot_product_attention(q, q, q, is_causal=True)
        with pytest.raises(RuntimeError, match="cannot call binary pointwise function add"):
            q + L.ones(2, 1, 4)
        with pytest.raises(RuntimeError):
            q.transpose(0, 1)


def st(L):
    return L.nested.nested_tensor([L.tensor(A), L.tensor(B[:1, :2])])


def test_strided_layout():
    got, want = st(tc), st(torch)
    assert repr(got.layout) == repr(want.layout) == "torch.strided" and got.is_nested
    assert got.dim() == want.dim() == 3 and got.size(0) == want.size(0) == 2
    for fn in (lambda x: x.size(), lambda x: x.shape, lambda x: x.size(1)):
        with pytest.raises(RuntimeError) as e_got:
            fn(got)
        with pytest.raises(RuntimeError) as e_want:
            fn(want)
        assert str(e_got.value) == str(e_want.value)
    for g, w in zip(got.unbind(), want.unbind()):
        close(g, w)
    for fn in (lambda L, x: (x * 2 + x).sin(), lambda L, x: x.softmax(-1), lambda L, x: L.nn.functional.relu(x),
               lambda L, x: x.sum(-1, keepdim=True)):
        g, w = fn(tc, got), fn(torch, want)
        assert g.is_nested and repr(g.layout) == "torch.strided"
        close(g.to_padded_tensor(-2.0), w.to_padded_tensor(-2.0))
    close(tc.nested.to_padded_tensor(got, 0.0, output_size=(2, 3, 5)),
          torch.nested.to_padded_tensor(want, 0.0, output_size=(2, 3, 5)))
    assert repr(got).startswith("nested_tensor([\n  tensor(") and repr(want).startswith("nested_tensor([\n  tensor(")


def test_strided_gradients():
    grads = {}
    for L in (tc, torch):
        a, b = L.tensor(A, requires_grad=True), L.tensor(B, requires_grad=True)
        nt = L.nested.as_nested_tensor([a, b.t()])
        (L.nn.functional.relu(nt.sin() * 3) + nt).softmax(-1).to_padded_tensor(0.0).pow(2).sum().backward()
        grads[L] = (a.grad, b.grad)
    for g, w in zip(grads[tc], grads[torch]):
        close(g, w)


ERRORS = {
    "dims": lambda L: L.nested.nested_tensor([L.ones(2, 3), L.ones(4)]),
    "two_ragged_dims": lambda L: L.nested.nested_tensor([L.ones(2, 3), L.ones(4, 2)], layout=LAYOUT[L]),
    "strided_keepdim": lambda L: st(L).sum(-1),
    "strided_broadcast": lambda L: st(L) + L.nested.nested_tensor([L.ones(2, 3), L.ones(1, 5)]),
    "padded_of_dense": lambda L: L.nested.to_padded_tensor(L.ones(2), 0.0),
    "padded_method_of_dense": lambda L: L.ones(2).to_padded_tensor(0.0),
}


@pytest.mark.parametrize("case", list(ERRORS))
def test_errors_as_torch(case):
    with pytest.raises(Exception) as want:
        ERRORS[case](torch)
    with pytest.raises(Exception) as got:
        ERRORS[case](tc)
    assert type(got.value) is type(want.value)
    if case.startswith("padded"):  # (torch's text goes on about custom builds)
        assert str(want.value).startswith(str(got.value).removesuffix("."))
    else:
        assert str(got.value) == str(want.value)


def test_unsupported_ops_refuse_rather_than_run_on_packed_memory():
    x = jt(tc)
    # (view, reshape and permute run as torch's: tests/test_nested_s13.py)
    for fn in (lambda: x.new_zeros((2, 2)), lambda: x.masked_select(x > 0),
               lambda: x.index_put_((tc.tensor([0]),), tc.tensor(1.0))):
        with pytest.raises(RuntimeError, match="not supported for nested tensors"):
            fn()


def test_torch_nested_and_jagged_after_a_plain_import():
    code = "import tidal.compat as t; t.nested.nested_tensor([t.ones(2)], layout=t.jagged); print(t.jagged)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "torch.jagged", out.stderr[-500:]

"""Attention's core as one kernel each way (ops/rowwise/attention_rows.py, torch's flash attention for CPU) against
torch: scaled_dot_product_attention on 4-D inputs and nn.MultiheadAttention, values and gradients, every form of mask
(broadcast in any dim, boolean, causal, rows masked throughout), float64, on numba's threads and on one, with the
compiled loops and with the NumPy path; double backward through the composite; and what keeps the composite."""
import numpy as np
import pytest
import torch

import tidal
from tidal.ops.rowwise import attention_rows
from tidal.vm import codegen

from kernel_loops import compile_here, kernel_threads  # noqa: F401 - a fixture

TOL = {np.float32: dict(rtol=2e-5, atol=2e-6), np.float64: dict(rtol=1e-12, atol=1e-13)}


@pytest.fixture(params=["compiled", "compiled, one thread", "numpy"])
def kernels(request, compile_here, monkeypatch):  # noqa: F811 - the fixture above
    """The fused kernels' calls counted; compiled (on numba's threads or on one) or on the NumPy path."""
    if request.param == "numpy":
        monkeypatch.setattr(attention_rows, "_compiled", lambda: None)
    else:
        assert codegen.kernel_module(".attention_kernels", "tidal.ops.rowwise", spent=1e9) is not None
    calls = []
    for attr in ("_ATTENTION", "_ATTENTION_BACKWARD", "_PACKED", "_PACKED_BACKWARD"):  # the kernels' records
        record = getattr(attention_rows, attr)
        monkeypatch.setattr(attention_rows, attr, lambda *a, _r=record: (calls.append(_r.name), _r(*a))[1])
    with kernel_threads(1 if request.param.endswith("one thread") else None):
        yield calls


def _pair(rng, shape, dtype, requires_grad=True):
    a = rng.standard_normal(shape).astype(dtype)
    return tidal.tensor(a, requires_grad=requires_grad), torch.tensor(a, requires_grad=requires_grad)


def _compare(ours, theirs, dtype):
    for o, t in zip(ours, theirs):
        np.testing.assert_allclose(o.detach().numpy(), t.detach().numpy(), **TOL[dtype])


MASKS = {  # name: (mask shape or None, kind)
    "none": (None, None),
    "causal": (None, "causal"),
    "float 2-D": ((5, 7), float),
    "float per batch": ((2, 1, 5, 7), float),
    "float per key": ((2, 3, 1, 7), float),
    "bool per head": ((1, 3, 5, 7), bool),
}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("mask", list(MASKS))
def test_sdpa_4d_matches_torch(kernels, mask, dtype):
    rng = np.random.default_rng(0)
    (q, tq), (k, tk), (v, tv) = (_pair(rng, s, dtype) for s in ((2, 3, 5, 4), (2, 3, 7, 4), (2, 3, 7, 4)))
    shape, kind = MASKS[mask]
    kwargs, torch_kwargs = {}, {}
    if kind == "causal":
        kwargs = torch_kwargs = dict(is_causal=True)
    elif kind is float:
        m = rng.standard_normal(shape).astype(dtype)
        if shape[-2] > 1:
            m[..., 1, :] = -np.inf  # a row masked throughout: zeros, as torch
        kwargs, torch_kwargs = dict(attn_mask=tidal.tensor(m)), dict(attn_mask=torch.tensor(m))
    elif kind is bool:
        m = rng.random(shape) > 0.4
        kwargs, torch_kwargs = dict(attn_mask=tidal.tensor(m)), dict(attn_mask=torch.tensor(m))
    out = tidal.nn.functional.scaled_dot_product_attention(q, k, v, scale=0.3, **kwargs)
    ref = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, scale=0.3, **torch_kwargs)
    assert type(out.grad_fn).__name__ == type(ref.grad_fn).__name__ == "ScaledDotProductFlashAttentionForCpuBackward0"
    g = rng.standard_normal(ref.shape).astype(dtype)
    out.backward(tidal.tensor(g))
    ref.backward(torch.tensor(g))
    _compare((out, q.grad, k.grad, v.grad), (ref, tq.grad, tk.grad, tv.grad), dtype)
    assert kernels == [attention_rows.FORWARD, attention_rows.BACKWARD]


@pytest.mark.parametrize("batch_first", [True, False], ids=["batch_first", "length_first"])
@pytest.mark.parametrize("masks", ["attn_mask", "key_padding_mask", "both"])
def test_multihead_attention_matches_torch(kernels, masks, batch_first):
    # self-attention runs packed: the kernels read each head from the input projection and write the result and the
    # projection's gradient in its layout (no head copied), in either layout of the batch
    rng = np.random.default_rng(1)
    tidal.manual_seed(0)
    ours = tidal.nn.MultiheadAttention(8, 2, batch_first=batch_first)
    theirs = torch.nn.MultiheadAttention(8, 2, batch_first=batch_first)
    theirs.load_state_dict({name: torch.tensor(p.detach().numpy()) for name, p in ours.state_dict().items()})
    x, tx = _pair(rng, (3, 6, 8) if batch_first else (6, 3, 8), np.float32)
    kwargs, torch_kwargs = {}, {}
    if masks in ("attn_mask", "both"):
        causal = np.triu(np.full((6, 6), -np.inf, np.float32), 1)
        kwargs["attn_mask"], torch_kwargs["attn_mask"] = tidal.tensor(causal), torch.tensor(causal)
    if masks in ("key_padding_mask", "both"):
        padding = np.zeros((3, 6), np.float32)
        padding[1, 4:] = -np.inf
        kwargs["key_padding_mask"], torch_kwargs["key_padding_mask"] = tidal.tensor(padding), torch.tensor(padding)
    out = ours(x, x, x, need_weights=False, **kwargs)[0]
    ref = theirs(tx, tx, tx, need_weights=False, **torch_kwargs)[0]
    g = rng.standard_normal(ref.shape).astype(np.float32)
    out.backward(tidal.tensor(g))
    ref.backward(torch.tensor(g))
    _compare((out, x.grad), (ref, tx.grad), np.float32)
    grads = dict(theirs.named_parameters())
    for name, p in ours.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), grads[name].grad.numpy(), rtol=1e-4, atol=1e-5, err_msg=name)
    assert kernels == [attention_rows.PACKED, attention_rows.PACKED_BACKWARD]


def test_multihead_attention_copies_no_head(kernels):
    # a batch_first encoder layer's attention, forward and backward, issues no copy of the heads (no cat of their
    # gradients, no transposing copy): the instructions issued are counted by name
    tidal.manual_seed(0)
    layer = tidal.nn.TransformerEncoderLayer(16, 4, 32, dropout=0.0, batch_first=True, norm_first=True)
    x = tidal.randn(3, 5, 16, requires_grad=True)
    names = []
    vm = x._vm
    vm.recorder = lambda ins: names.append(ins.name)
    try:
        layer(x, src_mask=tidal.nn.Transformer.generate_square_subsequent_mask(5), is_causal=True).sum().backward()
    finally:
        vm.recorder = None
    assert attention_rows.PACKED in names and attention_rows.PACKED_BACKWARD in names
    assert not [n for n in names if n in ("to", "cat", "copy_") or n.startswith("fused[to")], names


@pytest.mark.parametrize("batch_first", [True, False], ids=["batch_first", "length_first"])
def test_packed_multihead_attention_double_backward(kernels, batch_first):
    # create_graph differentiates the composite over the projection's heads: gradgradcheck in float64
    import tidal.compat as tc
    tidal.manual_seed(0)
    mha = tidal.nn.MultiheadAttention(8, 2, batch_first=batch_first).double()
    x = tidal.tensor(np.random.default_rng(3).standard_normal((2, 3, 8) if batch_first else (3, 2, 8)),
                     requires_grad=True)
    mask = tidal.nn.Transformer.generate_square_subsequent_mask(3, dtype=tidal.float64)

    def attend(x):
        return mha(x, x, x, attn_mask=mask, need_weights=False)[0]
    assert tc.autograd.gradcheck(attend, (x,)) and tc.autograd.gradgradcheck(attend, (x,))
    assert attention_rows.PACKED in kernels


def test_double_backward_through_the_composite(kernels):
    rng = np.random.default_rng(2)
    (q, tq), (k, tk), (v, tv) = (_pair(rng, (1, 2, 3, 4), np.float64) for _ in range(3))
    out = tidal.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    with torch.nn.attention.sdpa_kernel(torch.nn.attention.SDPBackend.MATH):  # (torch's flash refuses a 2nd order)
        ref = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, is_causal=True)
    grads = tidal.autograd.grad((out * out).sum(), (q, k, v), create_graph=True)
    torch_grads = torch.autograd.grad((ref * ref).sum(), (tq, tk, tv), create_graph=True)
    _compare(grads, torch_grads, np.float64)
    second = tidal.autograd.grad(sum(g.square().sum() for g in grads), (q, k, v))
    torch_second = torch.autograd.grad(sum(g.square().sum() for g in torch_grads), (tq, tk, tv))
    _compare(second, torch_second, np.float64)


def test_three_dims_dropout_a_mask_needing_grad_or_half_precision_keep_the_composite(kernels):
    rng = np.random.default_rng(3)
    (q, tq), = (_pair(rng, (3, 4, 5), np.float32),)
    out = tidal.nn.functional.scaled_dot_product_attention(q, q, q)
    ref = torch.nn.functional.scaled_dot_product_attention(tq, tq, tq)
    assert type(out.grad_fn).__name__ == type(ref.grad_fn).__name__  # torch's math path for 3-D inputs
    _compare((out,), (ref,), np.float32)
    (q4, tq4), (m, tm) = _pair(rng, (1, 2, 4, 5), np.float32), _pair(rng, (4, 4), np.float32)
    out = tidal.nn.functional.scaled_dot_product_attention(q4, q4, q4, attn_mask=m)
    ref = torch.nn.functional.scaled_dot_product_attention(tq4, tq4, tq4, attn_mask=tm)
    out.sum().backward()
    ref.sum().backward()
    _compare((out, q4.grad, m.grad), (ref, tq4.grad, tm.grad), np.float32)
    half_q = tidal.tensor(q4.detach().numpy(), dtype=tidal.float16)
    half = tidal.nn.functional.scaled_dot_product_attention(half_q, half_q, half_q)
    assert half.dtype == tidal.float16
    tidal.nn.functional.scaled_dot_product_attention(q4, q4, q4, dropout_p=0.5)
    (v, tv), (m3, tm3) = _pair(rng, (1, 2, 4, 3), np.float32), _pair(rng, (2, 4, 4), np.float32, False)
    strided = tidal.tensor(q4.detach().numpy().swapaxes(2, 3).copy()).transpose(2, 3).requires_grad_()
    # torch's math path too: a value head dim of its own, a 3-D mask, rows of the head dim strided
    for args, torch_args in [((q4, q4, v), (tq4, tq4, tv)), ((q4, q4, q4, m3), (tq4, tq4, tq4, tm3)),
                             ((strided,) * 3, (torch.tensor(strided.detach().numpy()).requires_grad_(),) * 3)]:
        out = tidal.nn.functional.scaled_dot_product_attention(*args)
        ref = torch.nn.functional.scaled_dot_product_attention(*torch_args)
        assert type(out.grad_fn).__name__ == type(ref.grad_fn).__name__
        _compare((out,), (ref,), np.float32)
    assert kernels == []

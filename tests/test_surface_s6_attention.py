"""The torch.nn.attention names added by the s6 surface pass, compared with real torch 2.13: SDPBackend and
sdpa_kernel, the causal biases, flex_attention with BlockMask, and the deprecated backends.cuda.sdp_kernel."""
import warnings

import numpy as np
import pytest
import torch
import torch.nn.attention.bias

import tidal
import tidal.compat as tc
from torch_compare import check


def _pair(*shape, seed=0, requires_grad=False):
    a = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return (torch.tensor(a, requires_grad=requires_grad), tidal.tensor(a, requires_grad=requires_grad))

# ---- torch.nn.attention -------------------------------------------------------------------------

def test_sdp_backend_enum_as_torch():
    ref, mine = torch.nn.attention.SDPBackend, tc.nn.attention.SDPBackend
    assert list(mine.__members__) == list(ref.__members__)
    for name in ref.__members__:
        assert int(getattr(mine, name)) == int(getattr(ref, name))
        assert str(getattr(mine, name)) == str(getattr(ref, name))
        assert repr(getattr(mine, name)) == repr(getattr(ref, name))


@pytest.mark.parametrize("backends", ["MATH", "FLASH_ATTENTION", "EFFICIENT_ATTENTION", "CUDNN_ATTENTION",
                                      ("EFFICIENT_ATTENTION", "MATH"), ()])
def test_sdpa_kernel_switches_and_refusal(backends):
    """Inside sdpa_kernel the switches read as torch's; on the CPU only math/flash may run, else torch's error."""
    (tq, mq) = _pair(1, 2, 4, 8)
    results = []
    for lib, attn, cuda in ((torch, torch.nn.attention, torch.backends.cuda),
                            (tc, tc.nn.attention, tc.backends.cuda)):
        chosen = getattr(attn.SDPBackend, backends) if isinstance(backends, str) else \
            [getattr(attn.SDPBackend, b) for b in backends]
        q = tq if lib is torch else mq
        with attn.sdpa_kernel(chosen) as value:
            flags = (cuda.flash_sdp_enabled(), cuda.math_sdp_enabled(), cuda.mem_efficient_sdp_enabled(),
                     cuda.cudnn_sdp_enabled(), value)
            try:
                out = lib.nn.functional.scaled_dot_product_attention(q, q, q)
            except RuntimeError as e:
                out = str(e)
        results.append((flags, out, cuda.math_sdp_enabled() and cuda.flash_sdp_enabled()))
    (rflags, rout, rrestored), (mflags, mout, mrestored) = results
    assert mflags == rflags and mrestored and rrestored
    if isinstance(rout, str):
        assert mout == rout
    else:
        check(mout, rout, rtol=1e-5, atol=1e-6)


def test_sdpa_kernel_type_error_and_priority():
    for attn in (torch.nn.attention, tc.nn.attention):
        with pytest.raises(AssertionError, match="Backend must be an instance of SDPBackend or a list of SDPBackend "
                                                 "instances, got str"):
            with attn.sdpa_kernel("math"):
                pass
    B = tc.nn.attention.SDPBackend
    with tc.nn.attention.sdpa_kernel([B.MATH, B.CUDNN_ATTENTION], set_priority=True):
        assert tc.nn.attention.priority_order()[:2] == [0, 3]
    with torch.nn.attention.sdpa_kernel([torch.nn.attention.SDPBackend.MATH,
                                         torch.nn.attention.SDPBackend.CUDNN_ATTENTION], set_priority=True):
        assert torch._C._get_sdp_priority_order()[:2] == [0, 3]


def test_flash_attention_registry():
    attn = tc.nn.attention
    assert attn.current_flash_attention_impl() is None
    with pytest.raises(ValueError, match="Unknown flash attention impl 'nope'"):
        attn.activate_flash_attention_impl("nope")
    removed = []

    class Handle:
        def remove(self):
            removed.append(True)

    attn.register_flash_attention_impl("Mine", register_fn=Handle)
    try:
        assert "Mine" in attn.list_flash_attention_impls()
        attn.activate_flash_attention_impl("Mine")
        assert attn.current_flash_attention_impl() == "Mine"
        attn.restore_flash_attention_impl()
        assert removed == [True] and attn.current_flash_attention_impl() is None
    finally:
        attn._registry._IMPLS.pop("Mine")
    q = tc.randn(1, 1, 2, 4)
    params = attn.SDPAParams(q, q, q, None, 0.0, False, False)
    assert attn.can_use_flash_attention(params) is False and attn.can_use_efficient_attention(params) is False


@pytest.mark.parametrize("lq,lk", [(3, 5), (4, 4), (5, 3)])
@pytest.mark.parametrize("variant", ["causal_upper_left", "causal_lower_right"])
def test_causal_bias(variant, lq, lk):
    """The bias materializes as torch's mask; attention with it matches torch, gradients too."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rb = getattr(torch.nn.attention.bias, variant)(lq, lk)
        mb = getattr(tc.nn.attention.bias, variant)(lq, lk)
    check(mb._materialize(), rb._materialize())
    tq, mq = _pair(2, 2, lq, 4, seed=1, requires_grad=True)
    tk, mk = _pair(2, 2, lk, 4, seed=2, requires_grad=True)
    rout = torch.nn.functional.scaled_dot_product_attention(tq, tk, tk, rb)
    mout = tc.nn.functional.scaled_dot_product_attention(mq, mk, mk, mb)
    check(mout, rout.as_subclass(torch.Tensor), rtol=1e-5, atol=1e-6)
    rout.sum().backward()
    mout.sum().backward()
    check(mq.grad, tq.grad, rtol=1e-4, atol=1e-5)
    check(mk.grad, tk.grad, rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="CausalBias should not be used with causal=True"):
        tc.nn.functional.scaled_dot_product_attention(mq, mk, mk, mb, is_causal=True)


# ---- torch.nn.attention.flex_attention ----------------------------------------------------------

def _causal(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx


def _window(b, h, q_idx, kv_idx):
    return (q_idx - kv_idx).abs() <= 2 + h


_BM_FIELDS = ("kv_num_blocks", "kv_indices", "full_kv_num_blocks", "full_kv_indices", "q_num_blocks", "q_indices",
              "full_q_num_blocks", "full_q_indices")


def _same_block_mask(mine, ref):
    assert repr(mine).replace("tidal.Size", "torch.Size") == repr(ref)  # Size prints as torch's under the runner
    for name in _BM_FIELDS:
        m, r = getattr(mine, name), getattr(ref, name)
        assert (m is None) == (r is None), name
        if r is not None:
            check(m, r)
    check(mine.to_dense(), ref.to_dense())
    assert mine.shape == ref.shape and abs(mine.sparsity() - ref.sparsity()) < 1e-9


@pytest.mark.parametrize("mod,B,H,L,S,block,separate", [
    (_causal, None, None, 5, 7, 2, True), (_window, 2, 3, 9, 6, (4, 2), True), (_causal, 1, 2, 8, 8, 4, False),
    ("noop", None, None, 4, 4, 2, True)])
def test_create_block_mask_as_torch(mod, B, H, L, S, block, separate):
    import torch.nn.attention.flex_attention as rfa
    mfa = tc.nn.attention.flex_attention
    rmod, mmod = (rfa.noop_mask, mfa.noop_mask) if mod == "noop" else (mod, mod)
    ref = rfa.create_block_mask(rmod, B, H, L, S, device="cpu", BLOCK_SIZE=block, separate_full_blocks=separate)
    mine = mfa.create_block_mask(mmod, B, H, L, S, device="cpu", BLOCK_SIZE=block, separate_full_blocks=separate)
    _same_block_mask(mine, ref)
    _same_block_mask(mine._adjust(L - 1, S - 2), ref._adjust(L - 1, S - 2))
    if B:
        _same_block_mask(mine[B - 1], ref[B - 1])
        with pytest.raises(RuntimeError, match="Cannot use mask_mod from a sliced BlockMask"):
            mine[0].mask_mod(None, None, None, None)
    check(mfa.create_mask(mmod, B, H, L, S, "cpu"), rfa.create_mask(rmod, B, H, L, S, "cpu"))


def _flex_inputs(lib, hq=2, hkv=2, grad=False):
    rng = np.random.default_rng(11)
    shapes = ((2, hq, 5, 4), (2, hkv, 7, 4), (2, hkv, 7, 3))
    return [lib.tensor(rng.standard_normal(s).astype(np.float32), requires_grad=grad) for s in shapes]


@pytest.mark.parametrize("case", ["plain", "both", "gqa", "empty_rows"])
def test_flex_attention_as_torch(case):
    """Values and log-sum-exp as torch's eager flex_attention (torch has no CPU backward to compare)."""
    import torch.nn.attention.flex_attention as rfa
    mfa = tc.nn.attention.flex_attention
    results = []
    for lib, fa in ((torch, rfa), (tc, mfa)):
        q, k, v = _flex_inputs(lib, hq=4 if case == "gqa" else 2)
        bias = lib.tensor([0.5, -0.25, 0.0, 1.0])

        def score_mod(score, b, h, q_idx, kv_idx):
            return score + (q_idx - kv_idx) * 0.1 + bias[h]
        mask = None
        if case == "both":
            mask = fa.create_block_mask(fa.and_masks(_causal, lambda b, h, qi, ki: ki != 2), 2, None, 5, 7,
                                        device="cpu", BLOCK_SIZE=(2, 4))
        if case == "empty_rows":
            mask = fa.create_block_mask(fa.or_masks(lambda b, h, qi, ki: ki > 100, lambda b, h, qi, ki: qi == 3), None,
                                        None, 5, 7, device="cpu", BLOCK_SIZE=2)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch's 'called without torch.compile' note
            out, aux = fa.flex_attention(q, k, v, score_mod=score_mod if case == "both" else None,
                                         block_mask=mask, enable_gqa=case == "gqa",
                                         scale=0.3 if case == "gqa" else None, return_aux=fa.AuxRequest(lse=True))
        results.append((out, aux.lse))
    check(results[1][0], results[0][0], rtol=1e-5, atol=1e-6)
    check(results[1][1], results[0][1], rtol=1e-5, atol=1e-6)


def test_flex_attention_gradients_match_the_math():
    """Gradients (torch's flex_attention refuses backward on CPU): against torch's softmax(QK^T) V written out."""
    mfa = tc.nn.attention.flex_attention
    tq, tk, tv = _flex_inputs(torch, grad=True)
    mq, mk, mv = _flex_inputs(tc, grad=True)
    tbias, mbias = torch.tensor([0.5, -0.25], requires_grad=True), tc.tensor([0.5, -0.25], requires_grad=True)
    mask = mfa.create_block_mask(_causal, None, None, 5, 7, device="cpu", BLOCK_SIZE=2)
    out = mfa.flex_attention(mq, mk, mv, score_mod=lambda s, b, h, qi, ki: s + mbias[h], block_mask=mask)
    scores = tq @ tk.transpose(-2, -1) / 2.0 + tbias.view(1, 2, 1, 1)
    allowed = torch.ones(5, 7, dtype=torch.bool).tril()
    ref = torch.softmax(scores.masked_fill(~allowed, float("-inf")), -1) @ tv
    check(out, ref, rtol=1e-5, atol=1e-6)
    out.square().sum().backward()
    ref.square().sum().backward()
    for mine, theirs in ((mq, tq), (mk, tk), (mv, tv), (mbias, tbias)):
        check(mine.grad, theirs.grad, rtol=1e-4, atol=1e-5)


def test_flex_attention_errors_as_torch():
    import torch.nn.attention.flex_attention as rfa
    mfa = tc.nn.attention.flex_attention
    for lib, fa in ((torch, rfa), (tc, mfa)):
        q, k, v = _flex_inputs(lib, hq=4)
        with pytest.raises(ValueError, match="Expect query and key/value to have the same number of heads but got "
                                             "Hq=4 and Hkv=2. Try setting enable_gqa=True for GQA."):
            fa.flex_attention(q, k, v)
        with pytest.raises(NotImplementedError, match="NYI: query, key, and value must be 4D tensors"):
            fa.flex_attention(q[0], k[0], v[0])
        with pytest.raises(ValueError, match="same embedding dimension but got E=4 and E=2"):
            fa.flex_attention(q, k[..., :2], v, enable_gqa=True)
        for lengths, hint in (((9, 9), "larger length"), ((3, 3), "smaller length")):
            bm = fa.create_block_mask(_causal, None, None, *lengths, device="cpu", BLOCK_SIZE=2)
            with pytest.raises(ValueError, match=f"block_mask was created for .* {hint}"):
                fa.flex_attention(q, k, v, block_mask=bm, enable_gqa=True)
        with pytest.raises(RuntimeError, match="All inputs should be callable mask_mods"):
            fa.and_masks(_causal, 3)
        with pytest.raises(NotImplementedError, match="Returning max scores is not supported on CPU/MPS."):
            fa.flex_attention(q, k, v, enable_gqa=True, return_aux=fa.AuxRequest(max_scores=True))
        with pytest.raises(ValueError, match="Cannot specify both return_lse and return_aux"):
            fa.flex_attention(q, k, v, enable_gqa=True, return_lse=True, return_aux=fa.AuxRequest(lse=True))
        with pytest.warns(FutureWarning, match="return_lse is deprecated"):
            fa.flex_attention(q, k, v, enable_gqa=True, return_lse=True)


def test_backends_sdp_kernel_deprecated_as_torch():
    for lib in (torch, tc):
        with pytest.warns(FutureWarning, match=r"`torch.backends.cuda.sdp_kernel\(\)` is deprecated"):
            with lib.backends.cuda.sdp_kernel(enable_math=False):
                assert not lib.backends.cuda.math_sdp_enabled() and lib.backends.cuda.flash_sdp_enabled()
        assert lib.backends.cuda.math_sdp_enabled()

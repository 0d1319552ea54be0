"""The torch names added by the s6 surface pass, each compared with real torch 2.13: torch.nn.attention,
torch.cpu, nn.grad, nn.utils.fusion/stateless/skip_init, norm `bias=`, and the small torch.* names."""
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

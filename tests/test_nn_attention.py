"""scaled_dot_product_attention, MultiheadAttention and the Transformer encoder against torch with
identical weights: outputs, attention weights, masks, gradients, reprs and state_dict layout."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import tidal
import tidal.nn as nn
import tidal.nn.functional as F
from nn_helpers import (assert_close, assert_grads_close, backward_both, load_from_torch, pair, require_backward,
                        torch_repr)

ATTENTION_OPS = ("matmul", "transpose", "reshape", "softmax", "chunk", "mean", "unsqueeze", "expand")


@pytest.fixture
def rng():
    return np.random.default_rng(5)


def bool_pair(arr):
    arr = np.asarray(arr, dtype=bool)
    return tidal.tensor(arr), torch.from_numpy(arr)


# -- scaled_dot_product_attention ---------------------------------------------------------------------
@pytest.mark.parametrize("shape_q,shape_kv", [((2, 3, 4, 8), (2, 3, 6, 8)), ((5, 4), (7, 4)), ((3, 2, 5), (3, 2, 5))])
@pytest.mark.parametrize("mask", [None, "bool", "float", "causal", "causal+bool"])
def test_sdpa(rng, shape_q, shape_kv, mask):
    q, qr = pair(rng, shape_q, requires_grad=True)
    k, kr = pair(rng, shape_kv, requires_grad=True)
    v, vr = pair(rng, shape_kv, requires_grad=True)
    tgt, src = shape_q[-2], shape_kv[-2]
    kwargs, rkwargs = {}, {}
    if mask in ("bool", "causal+bool"):
        m = rng.random((tgt, src)) < 0.7
        m[:, 0] = True
        kwargs["attn_mask"], rkwargs["attn_mask"] = bool_pair(m)
    elif mask == "float":
        kwargs["attn_mask"], rkwargs["attn_mask"] = pair(rng, (tgt, src))
    if mask and mask.startswith("causal"):
        kwargs["is_causal"] = rkwargs["is_causal"] = True
    if mask == "causal+bool" and len(shape_q) != 4:
        with pytest.raises(RuntimeError) as ref_err:
            TF.scaled_dot_product_attention(qr, kr, vr, **rkwargs)
        with pytest.raises(RuntimeError, match="Explicit attn_mask should not be set when is_causal=True") as err:
            F.scaled_dot_product_attention(q, k, v, **kwargs)
        assert str(err.value) == str(ref_err.value)
        return
    out = F.scaled_dot_product_attention(q, k, v, **kwargs)
    ref = TF.scaled_dot_product_attention(qr, kr, vr, **rkwargs)
    assert_close(out, ref)
    assert_close(F.scaled_dot_product_attention(q, k, v, scale=0.3, **kwargs),
                 TF.scaled_dot_product_attention(qr, kr, vr, scale=0.3, **rkwargs))
    require_backward(*ATTENTION_OPS)
    backward_both(out, ref, rng)
    assert_grads_close([(q, qr), (k, kr), (v, vr)])


def test_sdpa_fully_masked_rows_give_zeros(rng):
    q, qr = pair(rng, (1, 2, 3, 4), requires_grad=True)
    m = np.ones((3, 3), bool)
    m[0] = False
    mt, mr = bool_pair(m)
    out = F.scaled_dot_product_attention(q, q, q, attn_mask=mt)
    ref = TF.scaled_dot_product_attention(qr, qr, qr, attn_mask=mr)
    assert_close(out, ref)
    require_backward(*ATTENTION_OPS)
    backward_both(out, ref, rng)
    assert_grads_close([(q, qr)])  # no NaN leaks from the masked row


def test_sdpa_gqa_dropout_and_float32(rng):
    q, qr = pair(rng, (2, 4, 3, 8), "float32")
    k, kr = pair(rng, (2, 2, 5, 8), "float32")
    assert_close(F.scaled_dot_product_attention(q, k, k, enable_gqa=True),
                 TF.scaled_dot_product_attention(qr, kr, kr, enable_gqa=True), rtol=1e-5, atol=1e-6)
    tidal.manual_seed(0)
    a = F.scaled_dot_product_attention(q, k, k, dropout_p=0.5, enable_gqa=True)
    tidal.manual_seed(0)
    b = F.scaled_dot_product_attention(q, k, k, dropout_p=0.5, enable_gqa=True)
    # reproducible under manual_seed (to a few ulps: a fused group may run on NumPy, then compiled)
    np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)
    assert not np.allclose(a.numpy(), F.scaled_dot_product_attention(q, k, k, enable_gqa=True).numpy())


# -- MultiheadAttention --------------------------------------------------------------------------------
def mha_pair(**kwargs):
    ref = torch.nn.MultiheadAttention(**kwargs).double()
    mod = nn.MultiheadAttention(**kwargs).double()
    load_from_torch(mod, ref)
    return mod, ref


def param_pairs(mod, ref):
    ref_params = dict(ref.named_parameters())
    return [(p, ref_params[n]) for n, p in mod.named_parameters()]


MHA_CASES = [
    {"embed_dim": 8, "num_heads": 2},
    {"embed_dim": 8, "num_heads": 4, "batch_first": True},
    {"embed_dim": 6, "num_heads": 3, "kdim": 4, "vdim": 5},
    {"embed_dim": 8, "num_heads": 2, "bias": False},
    {"embed_dim": 8, "num_heads": 2, "add_bias_kv": True, "add_zero_attn": True},
]


@pytest.mark.parametrize("kwargs", MHA_CASES, ids=[str(k) for k in MHA_CASES])
@pytest.mark.parametrize("need_weights,average", [(True, True), (True, False), (False, True)])
def test_mha(rng, kwargs, need_weights, average):
    mod, ref = mha_pair(**kwargs)
    assert repr(mod) == torch_repr(repr(ref))
    assert list(mod.state_dict()) == list(ref.state_dict())
    e, kd, vd = kwargs["embed_dim"], kwargs.get("kdim", kwargs["embed_dim"]), kwargs.get("vdim", kwargs["embed_dim"])
    bf = kwargs.get("batch_first", False)
    lq, ls, n = 3, 5, 2
    q, qr = pair(rng, (n, lq, e) if bf else (lq, n, e), requires_grad=True)
    k, kr = pair(rng, (n, ls, kd) if bf else (ls, n, kd), requires_grad=True)
    v, vr = pair(rng, (n, ls, vd) if bf else (ls, n, vd), requires_grad=True)
    out, w = mod(q, k, v, need_weights=need_weights, average_attn_weights=average)
    ref_out, ref_w = ref(qr, kr, vr, need_weights=need_weights, average_attn_weights=average)
    assert_close(out, ref_out)
    if need_weights:
        assert_close(w, ref_w)
    else:
        assert w is None and ref_w is None
    require_backward(*ATTENTION_OPS, "cat", "repeat")
    backward_both(out, ref_out, rng)
    assert_grads_close([(q, qr), (k, kr), (v, vr)] + param_pairs(mod, ref))


@pytest.mark.parametrize("mask_kind", ["bool", "float", "3d"])
def test_mha_masks(rng, mask_kind):
    mod, ref = mha_pair(embed_dim=8, num_heads=2)
    x, xr = pair(rng, (4, 3, 8))
    kpm = np.zeros((3, 4), bool)
    kpm[0, -1] = kpm[2, 0] = True
    kp, kpr = bool_pair(kpm)
    if mask_kind == "bool":
        am, amr = bool_pair(np.triu(np.ones((4, 4), bool), 1))  # True = not allowed to attend
    elif mask_kind == "float":
        am, amr = pair(rng, (4, 4))
    else:
        am, amr = pair(rng, (6, 4, 4))
    for need_weights in (True, False):
        out, w = mod(x, x, x, key_padding_mask=kp, attn_mask=am, need_weights=need_weights)
        ref_out, ref_w = ref(xr, xr, xr, key_padding_mask=kpr, attn_mask=amr, need_weights=need_weights)
        assert_close(out, ref_out)
        if need_weights:
            assert_close(w, ref_w)


def test_mha_unbatched_eval_dropout_and_errors(rng):
    mod, ref = mha_pair(embed_dim=4, num_heads=2, dropout=0.5)
    mod.eval()
    ref.eval()
    x, xr = pair(rng, (3, 4))
    out, w = mod(x, x, x)
    ref_out, ref_w = ref(xr, xr, xr)
    assert_close(out, ref_out)
    assert_close(w, ref_w)
    mod.train()
    tidal.manual_seed(0)
    a, _ = mod(x, x, x)
    tidal.manual_seed(0)
    b, _ = mod(x, x, x)
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-6)  # see above
    with pytest.raises(AssertionError, match="embed_dim must be divisible by num_heads"):
        nn.MultiheadAttention(5, 2)
    with pytest.raises(ValueError, match="embed_dim and num_heads must be greater than 0"):
        nn.MultiheadAttention(0, 2)
    with pytest.raises(RuntimeError, match=r"The shape of the 2D attn_mask is"):
        mod(x, x, x, attn_mask=tidal.zeros(2, 2))
    with pytest.raises(RuntimeError, match="Need attn_mask if specifying the is_causal hint"):
        mod(x, x, x, is_causal=True)


# -- Transformer encoder ---------------------------------------------------------------------------
def encoder_pair(num_layers=None, final_norm=False, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's nested-tensor notice
        ref_layer = torch.nn.TransformerEncoderLayer(**kwargs)
        layer = nn.TransformerEncoderLayer(**kwargs)
        if num_layers is None:
            ref, mod = ref_layer, layer
        else:
            ref = torch.nn.TransformerEncoder(ref_layer, num_layers,
                                              norm=torch.nn.LayerNorm(kwargs["d_model"]) if final_norm else None)
            mod = nn.TransformerEncoder(layer, num_layers, norm=nn.LayerNorm(kwargs["d_model"]) if final_norm else None)
    ref.double()
    mod.double()
    load_from_torch(mod, ref)
    return mod, ref


LAYER_CASES = [{"d_model": 8, "nhead": 2, "dim_feedforward": 16},
               {"d_model": 8, "nhead": 4, "dim_feedforward": 12, "norm_first": True, "activation": "gelu"},
               {"d_model": 6, "nhead": 2, "dim_feedforward": 10, "batch_first": True, "layer_norm_eps": 1e-3},
               {"d_model": 8, "nhead": 2, "dim_feedforward": 16, "bias": False}]


@pytest.mark.parametrize("kwargs", LAYER_CASES, ids=[str(k) for k in LAYER_CASES])
def test_encoder_layer(rng, kwargs):
    mod, ref = encoder_pair(**kwargs)
    assert repr(mod) == repr(ref)
    assert list(mod.state_dict()) == list(ref.state_dict())
    mod.eval()
    ref.eval()
    d = kwargs["d_model"]
    x, xr = pair(rng, (2, 5, d) if kwargs.get("batch_first") else (5, 2, d), requires_grad=True)
    kpm = np.zeros((2, 5), bool)
    kpm[1, 3:] = True
    kp, kpr = bool_pair(kpm)
    mask = np.triu(np.full((5, 5), -np.inf), 1)
    with torch.no_grad():
        assert_close(mod(x, src_mask=tidal.tensor(mask), src_key_padding_mask=kp),
                     ref(xr, src_mask=torch.from_numpy(mask), src_key_padding_mask=kpr))
    out, expected = mod(x), ref(xr)
    assert_close(out, expected)
    require_backward(*ATTENTION_OPS, "mean")
    backward_both(out, expected, rng)
    ref_params = dict(ref.named_parameters())
    assert_grads_close([(x, xr)] + [(p, ref_params[n]) for n, p in mod.named_parameters()])


def test_encoder_layer_module_activation_and_training_dropout(rng):
    layer = nn.TransformerEncoderLayer(4, 2, 8, activation=nn.GELU())
    ref = torch.nn.TransformerEncoderLayer(4, 2, 8, activation=torch.nn.GELU())
    assert repr(layer) == repr(ref)
    with pytest.raises(RuntimeError, match="activation should be relu/gelu, not tanh"):
        nn.TransformerEncoderLayer(4, 2, activation="tanh")
    x = tidal.randn(3, 2, 4)
    tidal.manual_seed(1)
    a = layer(x)
    tidal.manual_seed(1)
    b = layer(x)
    # the same dropout draws; values to a few ulps (a fused group may run on NumPy the first time and
    # compiled the second, while its kernel compiles in the background)
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-6)
    layer.eval()
    assert not np.allclose(layer(x).detach().numpy(), a.detach().numpy())


@pytest.mark.parametrize("final_norm", [False, True])
def test_encoder_stack(rng, final_norm):
    mod, ref = encoder_pair(num_layers=2, final_norm=final_norm, d_model=8, nhead=2, dim_feedforward=16)
    assert repr(mod) == repr(ref)
    assert list(mod.state_dict()) == list(ref.state_dict())
    assert mod.layers[0].linear1.weight is not mod.layers[1].linear1.weight  # deep copies, as torch
    mod.eval()
    ref.eval()
    x, xr = pair(rng, (5, 3, 8))
    assert_close(mod(x), ref(xr))
    causal = nn.modules.transformer.generate_square_subsequent_mask(5, dtype=tidal.float64)
    ref_causal = torch.nn.Transformer.generate_square_subsequent_mask(5, dtype=torch.float64)
    assert_close(causal, ref_causal)
    kpm = np.zeros((3, 5), bool)
    kpm[0, 4] = True
    kp, kpr = bool_pair(kpm)
    with torch.no_grad():
        assert_close(mod(x, mask=causal, src_key_padding_mask=kp), ref(xr, mask=ref_causal, src_key_padding_mask=kpr))

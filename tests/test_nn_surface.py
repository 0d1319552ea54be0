"""nn.Transformer, TransformerDecoder(Layer) and the other late additions to tidal.nn against torch with identical
weights (torch's state_dict loaded into tidal's module): outputs, gradients, masks and state_dict layout."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import tidal
import tidal.nn as nn
from nn_helpers import assert_close, assert_grads_close, backward_both, load_from_torch, pair


@pytest.fixture
def rng():
    return np.random.default_rng(11)


def bool_pair(arr):
    arr = np.asarray(arr, dtype=bool)
    return tidal.tensor(arr), torch.from_numpy(arr)


def module_pair(name, *args, **kwargs):
    """A tidal module and its torch twin in float64 holding torch's weights."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's nested-tensor advice
        ref = getattr(torch.nn, name)(*args, **kwargs).double()
    mod = getattr(nn, name)(*args, **kwargs).double()
    assert list(mod.state_dict()) == list(ref.state_dict())
    assert repr(mod) == repr(ref)
    load_from_torch(mod, ref)
    return mod, ref


def param_grads(mod, ref):
    refs = dict(ref.named_parameters())
    return [(p, refs[n]) for n, p in mod.named_parameters()]


# -- Transformer -----------------------------------------------------------------------------------------
DECODER_CASES = [{}, {"norm_first": True, "activation": "gelu"}, {"batch_first": True, "layer_norm_eps": 1e-3},
                 {"bias": False}]


@pytest.mark.parametrize("kwargs", DECODER_CASES, ids=[str(k) for k in DECODER_CASES])
def test_decoder_layer(rng, kwargs):
    mod, ref = module_pair("TransformerDecoderLayer", 8, 2, 12, **kwargs)
    mod.eval()
    ref.eval()
    bf = kwargs.get("batch_first", False)
    x, xr = pair(rng, (2, 5, 8) if bf else (5, 2, 8), requires_grad=True)
    m, mr = pair(rng, (2, 4, 8) if bf else (4, 2, 8), requires_grad=True)
    causal = nn.Transformer.generate_square_subsequent_mask(5, dtype=tidal.float64)
    causal_r = torch.nn.Transformer.generate_square_subsequent_mask(5, dtype=torch.float64)
    kpm = np.zeros((2, 4), bool)
    kpm[1, 2:] = True
    kp, kpr = bool_pair(kpm)
    out = mod(x, m, tgt_mask=causal, memory_key_padding_mask=kp, tgt_is_causal=True)
    expected = ref(xr, mr, tgt_mask=causal_r, memory_key_padding_mask=kpr, tgt_is_causal=True)
    assert_close(out, expected)
    backward_both(out, expected, rng)
    assert_grads_close([(x, xr), (m, mr)] + param_grads(mod, ref))


def test_decoder_stack_bool_masks_and_unbatched(rng):
    layer = nn.TransformerDecoderLayer(8, 2, 16).double()
    ref_layer = torch.nn.TransformerDecoderLayer(8, 2, 16).double()
    mod = nn.TransformerDecoder(layer, 2, norm=nn.LayerNorm(8).double())
    ref = torch.nn.TransformerDecoder(ref_layer, 2, norm=torch.nn.LayerNorm(8).double())
    assert list(mod.state_dict()) == list(ref.state_dict()) and repr(mod) == repr(ref)
    load_from_torch(mod, ref)
    mod.eval()
    ref.eval()
    x, xr = pair(rng, (6, 3, 8))
    m, mr = pair(rng, (4, 3, 8))
    tgt_mask, tgt_mask_r = bool_pair(np.triu(np.ones((6, 6)), 1))
    mem_mask, mem_mask_r = bool_pair(rng.random((6, 4)) < 0.3)
    tkp = np.zeros((3, 6), bool)
    tkp[2, 5] = True
    tk, tkr = bool_pair(tkp)
    with torch.no_grad():
        assert_close(mod(x, m, tgt_mask=tgt_mask, memory_mask=mem_mask, tgt_key_padding_mask=tk),
                     ref(xr, mr, tgt_mask=tgt_mask_r, memory_mask=mem_mask_r, tgt_key_padding_mask=tkr))
        assert_close(mod(x[:, 0], m[:, 0]), ref(xr[:, 0], mr[:, 0]))  # unbatched


@pytest.mark.parametrize("kwargs", [{}, {"batch_first": True, "norm_first": True}, {"activation": torch.tanh}],
                         ids=["default", "batch_first_norm_first", "callable"])
def test_transformer_matches_torch(rng, kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = torch.nn.Transformer(8, 2, 2, 1, 16, dropout=0.0, **kwargs).double()
    ours = dict(kwargs, activation=tidal.tanh) if "activation" in kwargs else kwargs
    mod = nn.Transformer(8, 2, 2, 1, 16, dropout=0.0, **ours).double()
    assert list(mod.state_dict()) == list(ref.state_dict()) and repr(mod) == repr(ref)
    load_from_torch(mod, ref)
    bf = kwargs.get("batch_first", False)
    src, srcr = pair(rng, (2, 7, 8) if bf else (7, 2, 8), requires_grad=True)
    tgt, tgtr = pair(rng, (2, 5, 8) if bf else (5, 2, 8), requires_grad=True)
    skp = np.zeros((2, 7), bool)
    skp[0, 5:] = True
    sk, skr = bool_pair(skp)
    mask = mod.generate_square_subsequent_mask(5, dtype=tidal.float64)
    mask_r = ref.generate_square_subsequent_mask(5, dtype=torch.float64)
    out = mod(src, tgt, tgt_mask=mask, src_key_padding_mask=sk, memory_key_padding_mask=sk)
    expected = ref(srcr, tgtr, tgt_mask=mask_r, src_key_padding_mask=skr, memory_key_padding_mask=skr)
    assert_close(out, expected)
    backward_both(out, expected, rng)
    assert_grads_close([(src, srcr), (tgt, tgtr)] + param_grads(mod, ref))


def test_transformer_init_errors_and_causal_detection():
    model = nn.Transformer(8, 2, 1, 1, 16)
    for p in model.parameters():  # xavier-uniform matrices, LayerNorm ones and zero biases
        if p.dim() > 1:
            bound = np.sqrt(6.0 / sum(p.shape[:2]))
            assert np.abs(p.detach().numpy()).max() <= bound and p.detach().numpy().std() > bound / 4
    with pytest.raises(RuntimeError, match="the batch number of src and tgt must be equal"):
        model(tidal.randn(4, 2, 8), tidal.randn(3, 3, 8))
    with pytest.raises(RuntimeError, match="the feature number of src and tgt must be equal to d_model"):
        model(tidal.randn(4, 2, 8), tidal.randn(3, 2, 6))
    with pytest.raises(RuntimeError, match="activation should be relu/gelu, not swish"):
        nn.TransformerDecoderLayer(8, 2, activation="swish")
    detect = nn.modules.transformer._detect_is_causal_mask
    causal = nn.Transformer.generate_square_subsequent_mask(4)
    assert detect(causal) and not detect(causal, size=3) and not detect(causal, is_causal=False)
    assert not detect(tidal.zeros(4, 4)) and detect(None, is_causal=True) and not detect(None)
    assert nn.TransformerEncoderLayer(8, 2).activation_relu_or_gelu == 1
    assert nn.TransformerEncoderLayer(8, 2, activation="gelu").activation_relu_or_gelu == 2
    assert nn.TransformerEncoderLayer(8, 2, activation=tidal.tanh).activation_relu_or_gelu == 0
    from tidal.nn.modules.transformer import _get_activation_fn, _get_clones  # imported by model code, as torch's
    clones = _get_clones(nn.Linear(2, 2), 2)
    assert len(clones) == 2 and clones[0].weight is not clones[1].weight and _get_activation_fn("gelu") is \
        nn.functional.gelu


def test_transformer_loads_torch_state_dict_file(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = torch.nn.Transformer(8, 2, 1, 1, 16, dropout=0.0, batch_first=True).eval()
    torch.save(ref.state_dict(), tmp_path / "t.pt")
    mod = nn.Transformer(8, 2, 1, 1, 16, dropout=0.0, batch_first=True).eval()
    mod.load_state_dict(tidal.load(str(tmp_path / "t.pt")))
    src = np.random.default_rng(0).standard_normal((2, 5, 8)).astype(np.float32)
    tgt = np.random.default_rng(1).standard_normal((2, 3, 8)).astype(np.float32)
    with torch.no_grad():
        assert_close(mod(tidal.tensor(src), tidal.tensor(tgt)), ref(torch.from_numpy(src), torch.from_numpy(tgt)))


def test_translation_script_follows_torch(tmp_path):
    """tests/scripts/transformer_translation.py (nn.Transformer seq2seq) unmodified under tidal.compat."""
    from script_runs import check_losses, run_both
    theirs, ours = run_both("transformer_translation", tmp_path)
    check_losses(theirs, ours)
    np.testing.assert_allclose(ours["first_logits"], theirs["first_logits"], rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(ours["memory_norm"], theirs["memory_norm"], rtol=1e-4)


# -- EmbeddingBag ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("padding_idx", [None, 3])
@pytest.mark.parametrize("include_last_offset", [False, True])
def test_embedding_bag(rng, mode, padding_idx, include_last_offset):
    weight, weight_r = pair(rng, (10, 4), requires_grad=True)
    idx = rng.integers(0, 10, 12)
    idx[[2, 5, 8]] = 3
    offsets = np.array([0, 3, 3, 7] + ([12] if include_last_offset else []))  # bag 1 is empty
    psw = rng.standard_normal(12) if mode == "sum" else None
    w, wr = (tidal.tensor(psw).requires_grad_(True), torch.from_numpy(psw).requires_grad_(True)) if mode == "sum" \
        else (None, None)
    kwargs = {"mode": mode, "padding_idx": padding_idx, "include_last_offset": include_last_offset}
    out = nn.functional.embedding_bag(tidal.tensor(idx), weight, tidal.tensor(offsets), per_sample_weights=w,
                                      **kwargs)
    expected = torch.nn.functional.embedding_bag(torch.from_numpy(idx), weight_r, torch.from_numpy(offsets),
                                                 per_sample_weights=wr, **kwargs)
    assert_close(out, expected)
    backward_both(out, expected, rng)
    assert_grads_close([(weight, weight_r)] + ([(w, wr)] if w is not None else []))


def test_embedding_bag_module_2d_input_and_errors(rng):
    mod, ref = module_pair("EmbeddingBag", 7, 3, mode="max", padding_idx=-1)
    idx = rng.integers(0, 7, (4, 5))
    assert_close(mod(tidal.tensor(idx)), ref(torch.from_numpy(idx)))
    mod, ref = module_pair("EmbeddingBag", 7, 3, max_norm=1.0)
    assert_close(mod(tidal.tensor(idx)), ref(torch.from_numpy(idx)))
    assert_close(mod.weight, ref.weight)  # both renormalized the rows they used
    frozen = nn.EmbeddingBag.from_pretrained(tidal.ones(4, 2), mode="sum")
    assert not frozen.weight.requires_grad and repr(frozen) == "EmbeddingBag(4, 2, mode='sum')"
    x = tidal.tensor(idx)
    for call, error, text in (
            (lambda: nn.functional.embedding_bag(x, mod.weight, tidal.tensor([0, 2])), ValueError,
             "if input is 2D, then offsets has to be None"),
            (lambda: nn.functional.embedding_bag(x.reshape(-1), mod.weight), ValueError,
             "offsets has to be a 1D Tensor but got None"),
            (lambda: nn.functional.embedding_bag(x, mod.weight, mode="min"), ValueError,
             "mode has to be one of sum, mean or max"),
            (lambda: nn.functional.embedding_bag(x, mod.weight, per_sample_weights=tidal.ones(4, 5)),
             NotImplementedError, "per_sample_weights is only supported for mode='sum'"),
            (lambda: nn.functional.embedding_bag(x.reshape(-1), mod.weight, tidal.tensor([1, 4])), RuntimeError,
             "offsets\\[0\\] has to be 0"),
            (lambda: nn.EmbeddingBag(3, 2, padding_idx=3), AssertionError, "padding_idx must be within")):
        with pytest.raises(error, match=text):
            call()


# -- CTC and margin losses -------------------------------------------------------------------------------
CTC_T, CTC_N, CTC_C = 12, 4, 6


def ctc_case(rng):
    logits = rng.standard_normal((CTC_T, CTC_N, CTC_C))
    targets = rng.integers(1, CTC_C, (CTC_N, 5))
    targets[1, 1] = targets[1, 0]  # a repeated label needs a blank between
    return logits, targets, np.array([12, 10, 7, 12]), np.array([5, 3, 0, 4])


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("layout", ["padded", "concatenated"])
def test_ctc_loss_through_log_softmax(rng, reduction, layout):
    logits, targets, input_lengths, target_lengths = ctc_case(rng)
    if layout == "concatenated":
        targets = np.concatenate([targets[b, :target_lengths[b]] for b in range(CTC_N)])
    x, xr = tidal.tensor(logits).requires_grad_(True), torch.from_numpy(logits).requires_grad_(True)
    out = nn.functional.ctc_loss(x.log_softmax(2), tidal.tensor(targets), tidal.tensor(input_lengths),
                                 tidal.tensor(target_lengths), reduction=reduction)
    expected = torch.nn.functional.ctc_loss(xr.log_softmax(2), torch.from_numpy(targets),
                                            torch.from_numpy(input_lengths), torch.from_numpy(target_lengths),
                                            reduction=reduction)
    assert out.dtype is tidal.float64
    assert_close(out, expected)
    backward_both(out, expected, rng)
    assert_grads_close([(x, xr)])


@pytest.mark.parametrize("zero_infinity", [False, True])
def test_ctc_loss_module_leaf_log_probs_float32_and_infeasible(rng, zero_infinity):
    logits, targets, input_lengths, target_lengths = ctc_case(rng)
    input_lengths[0] = 3  # too short for 5 labels: infinite loss
    lp = torch.from_numpy(logits).float().log_softmax(2).numpy()
    a, ar = tidal.tensor(lp).requires_grad_(True), torch.from_numpy(lp).requires_grad_(True)
    mod, ref = nn.CTCLoss(reduction="none", zero_infinity=zero_infinity), \
        torch.nn.CTCLoss(reduction="none", zero_infinity=zero_infinity)
    assert repr(mod) == repr(ref)
    out = mod(a, tidal.tensor(targets), input_lengths.tolist(), target_lengths.tolist())
    expected = ref(ar, torch.from_numpy(targets), input_lengths.tolist(), target_lengths.tolist())
    assert out.dtype is tidal.float32 and np.isinf(out.detach().numpy()[0]) != zero_infinity
    assert_close(out, expected, rtol=1e-5, atol=1e-5)
    out.sum().backward()
    expected.sum().backward()
    ours, theirs = a.grad.numpy(), ar.grad.numpy()
    np.testing.assert_array_equal(np.isnan(ours), np.isnan(theirs))  # torch's NaN gradient for an infinite loss
    np.testing.assert_allclose(np.nan_to_num(ours), np.nan_to_num(theirs), rtol=1e-5, atol=1e-5)
    # unbatched
    one = nn.functional.ctc_loss(a[:, 1], tidal.tensor(targets[1, :3]), tidal.tensor(10), tidal.tensor(3),
                                 reduction="none")
    assert_close(one, torch.nn.functional.ctc_loss(ar[:, 1], torch.from_numpy(targets[1, :3]), torch.tensor(10),
                                                   torch.tensor(3), reduction="none"), rtol=1e-5, atol=1e-5)
    with pytest.raises(RuntimeError, match="blank must be in label range"):
        nn.functional.ctc_loss(a, tidal.tensor(targets), input_lengths, target_lengths, blank=CTC_C)
    with pytest.raises(NotImplementedError, match="\"ctc_loss_cpu\" not implemented for 'BFloat16'"):
        nn.functional.ctc_loss(a.bfloat16(), tidal.tensor(targets), input_lengths, target_lengths)
    with pytest.raises(RuntimeError, match="Expected input_lengths to have value at most 12"):
        nn.functional.ctc_loss(a, tidal.tensor(targets), [13, 1, 1, 1], target_lengths)


@pytest.mark.parametrize("p,weighted", [(1, False), (2, True)])
def test_multi_margin_and_multilabel_margin_losses(rng, p, weighted):
    x, xr = pair(rng, (5, 6), requires_grad=True)
    y = rng.integers(0, 6, 5)
    w = rng.random(6) if weighted else None
    mod = nn.MultiMarginLoss(p=p, margin=0.7, weight=None if w is None else tidal.tensor(w), reduction="none")
    ref = torch.nn.MultiMarginLoss(p=p, margin=0.7, weight=None if w is None else torch.from_numpy(w),
                                   reduction="none")
    assert list(mod.state_dict()) == list(ref.state_dict())
    out, expected = mod(x, tidal.tensor(y)), ref(xr, torch.from_numpy(y))
    labels = np.array([[3, 0, -1, 1, 2, 2], [1, 2, 3, 4, 5, 0], [-1, 1, 1, 1, 1, 1], [5, 5, -1, 0, 0, 0],
                       [2, -1, 3, 3, 3, 3]])
    out = out.sum() + nn.MultiLabelMarginLoss()(x, tidal.tensor(labels))
    expected = expected.sum() + torch.nn.MultiLabelMarginLoss()(xr, torch.from_numpy(labels))
    assert_close(out, expected)
    out.backward()
    expected.backward()
    assert_grads_close([(x, xr)])
    with pytest.raises(ValueError, match="only p == 1 and p == 2 supported"):
        nn.MultiMarginLoss(p=3)
    scalar = nn.functional.multilabel_margin_loss(tidal.tensor(-3.5), tidal.tensor(0))  # a 0-d input and label
    assert scalar.shape == () and float(scalar) == float(torch.nn.functional.multilabel_margin_loss(
        torch.tensor(-3.5), torch.tensor(0)))


def test_triplet_margin_with_distance_loss_and_nll_loss2d(rng):
    a, ar = pair(rng, (4, 5), requires_grad=True)
    pos, posr = pair(rng, (4, 5))
    neg, negr = pair(rng, (4, 5))
    mod, ref = nn.TripletMarginWithDistanceLoss(swap=True), torch.nn.TripletMarginWithDistanceLoss(swap=True)
    assert repr(mod) == repr(ref)
    cos = nn.TripletMarginWithDistanceLoss(distance_function=lambda u, v: 1 - nn.functional.cosine_similarity(u, v),
                                           margin=0.5)
    cos_r = torch.nn.TripletMarginWithDistanceLoss(
        distance_function=lambda u, v: 1 - torch.nn.functional.cosine_similarity(u, v), margin=0.5)
    out, expected = mod(a, pos, neg) + cos(a, pos, neg), ref(ar, posr, negr) + cos_r(ar, posr, negr)
    assert_close(out, expected)
    out.backward()
    expected.backward()
    assert_grads_close([(a, ar)])
    with pytest.warns(FutureWarning, match="NLLLoss2d"):
        loss = nn.NLLLoss2d()
    assert isinstance(loss, nn.NLLLoss)


# -- lazy modules and the adaptive softmax -----------------------------------------------------------------
@pytest.mark.parametrize("name,args,shape", [("LazyLinear", (4,), (2, 3)), ("LazyConv1d", (4, 3), (2, 3, 7)),
                                             ("LazyConv2d", (4, 3), (3, 6, 6)),
                                             ("LazyConvTranspose3d", (4, 2), (1, 3, 3, 3, 3)),
                                             ("LazyBatchNorm1d", (), (4, 3)),
                                             ("LazyInstanceNorm2d", (), (2, 3, 5, 5))])
def test_lazy_modules_become_their_class(rng, name, args, shape):
    kwargs = {"affine": True} if "Instance" in name else {}
    mod, ref = getattr(nn, name)(*args, **kwargs), getattr(torch.nn, name)(*args, **kwargs)
    assert repr(mod) == repr(ref) and repr(mod.weight) == repr(ref.weight) == "<UninitializedParameter>"
    weight = mod.weight
    optimizer = tidal.optim.SGD(mod.parameters(), lr=0.1)  # built before the shapes are known, as torch allows
    x, xr = pair(rng, shape, dtype="float32")
    out, expected = mod(x), ref(xr)
    assert type(mod).__name__ == type(ref).__name__ == ref.cls_to_become.__name__ if hasattr(ref, "cls_to_become") \
        else type(ref).__name__
    assert repr(mod) == repr(ref) and list(mod.state_dict()) == list(ref.state_dict())
    assert mod.weight is weight and tuple(weight.shape) == tuple(ref.weight.shape)
    assert tuple(out.shape) == tuple(expected.shape)
    load_from_torch(mod, ref)
    assert_close(mod(x), ref(xr), rtol=1e-5, atol=1e-5)
    (mod(x) ** 3).sum().backward()
    before = weight.detach().numpy().copy()
    optimizer.step()
    assert not np.allclose(before, weight.detach().numpy())


def test_lazy_module_loads_a_checkpoint_and_copies():
    ref = torch.nn.Linear(3, 5)
    lazy = nn.LazyLinear(5)
    lazy.load_state_dict({k: tidal.tensor(v.detach().numpy()) for k, v in ref.state_dict().items()})
    assert tuple(lazy.weight.shape) == (5, 3)
    x = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)
    assert_close(lazy(tidal.tensor(x)), ref(torch.from_numpy(x)), rtol=1e-6, atol=1e-6)
    assert type(lazy) is nn.Linear
    import copy
    twin = copy.deepcopy(nn.LazyConv2d(4, 3).double())
    assert twin.has_uninitialized_params() and twin(tidal.zeros(1, 2, 5, 5, dtype=tidal.float64)).dtype is tidal.float64
    with pytest.raises(RuntimeError, match="Expected 3D \\(unbatched\\) or 4D \\(batched\\) input to LazyConv2d"):
        nn.LazyConv2d(4, 3)(tidal.zeros(5, 5))


def test_adaptive_log_softmax_with_loss(rng):
    mod, ref = module_pair("AdaptiveLogSoftmaxWithLoss", 8, 20, [4, 10, 15], div_value=2.0, head_bias=True)
    x, xr = pair(rng, (7, 8), requires_grad=True)
    target = np.array([0, 5, 12, 19, 3, 11, 16])
    out, expected = mod(x, tidal.tensor(target)), ref(xr, torch.from_numpy(target))
    assert_close(out.output, expected.output)
    assert_close(out.loss, expected.loss)
    out.loss.backward()
    expected.loss.backward()
    assert_grads_close([(x, xr)] + param_grads(mod, ref))
    assert_close(mod.log_prob(x), ref.log_prob(xr))
    np.testing.assert_array_equal(mod.predict(x).numpy(), ref.predict(xr).numpy())
    one = mod(x[0], tidal.tensor(target[0]))
    assert_close(one.output, ref(xr[0], torch.tensor(target[0])).output)
    with pytest.raises(RuntimeError, match="Target values should be in \\[0, 19\\]"):
        mod(x, tidal.tensor(np.array([0, 1, 2, 3, 4, 5, 25])))
    with pytest.raises(ValueError, match="cutoffs should be a sequence of unique, positive integers"):
        nn.AdaptiveLogSoftmaxWithLoss(8, 20, [4, 4])


@pytest.mark.parametrize("kwargs", [{}, {"bias": True, "label_smoothing": 0.1, "ignore_index": 2},
                                    {"out_features": (3,), "bias": True, "reduction": "none"}])
def test_linear_cross_entropy_loss(rng, kwargs):
    mod, ref = module_pair("LinearCrossEntropyLoss", 5, 4, **kwargs)
    x, xr = pair(rng, (6, 5), requires_grad=True)
    target = rng.integers(0, 4, (6, 3) if "out_features" in kwargs else 6)
    out, expected = mod(x, tidal.tensor(target)), ref(xr, torch.from_numpy(target))
    assert_close(out, expected)
    backward_both(out, expected, rng)
    assert_grads_close([(x, xr)] + param_grads(mod, ref))
    options = nn.LinearCrossEntropyOptions(batch_chunk_size=2)
    assert repr(options) == repr(torch.nn.LinearCrossEntropyOptions(batch_chunk_size=2))
    with pytest.raises(ValueError, match="invalid acc_policy"):
        nn.LinearCrossEntropyOptions(acc_policy="fast")
    w = mod.linear.weight.reshape(4, *kwargs.get("out_features", ()), 5)
    chunked = nn.functional.linear_cross_entropy(x[0], w[:, 0] if "out_features" in kwargs else w,
                                                 tidal.tensor(target[0, 0] if target.ndim == 2 else target[0]),
                                                 options=options)
    wr = ref.linear.weight.reshape(4, *kwargs.get("out_features", ()), 5)
    assert_close(chunked, torch.nn.functional.linear_cross_entropy(
        xr[0], wr[:, 0] if "out_features" in kwargs else wr,
        torch.tensor(target[0, 0] if target.ndim == 2 else target[0]), options=torch.nn.LinearCrossEntropyOptions(
            batch_chunk_size=2)))


# -- SyncBatchNorm -----------------------------------------------------------------------------------------
def test_sync_batch_norm_on_one_process_is_batch_norm(rng):
    mod, ref = module_pair("SyncBatchNorm", 3, momentum=None)
    x, xr = pair(rng, (4, 3, 5), requires_grad=True)
    for _ in range(2):  # torch's SyncBatchNorm falls back to batch_norm without a process group, as tidal's
        out, expected = mod(x), ref(xr)
        assert_close(out, expected)
    backward_both(out, expected, rng)
    assert_grads_close([(x, xr)] + param_grads(mod, ref))
    assert_close(mod.running_var, ref.running_var)
    model = nn.SyncBatchNorm.convert_sync_batchnorm(nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4)))
    reference = torch.nn.SyncBatchNorm.convert_sync_batchnorm(torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3),
                                                                                  torch.nn.BatchNorm2d(4)))
    assert repr(model) == repr(reference) and list(model.state_dict()) == list(reference.state_dict())
    with pytest.raises(ValueError, match="expected at least 2D input \\(got 1D input\\)"):
        mod(tidal.zeros(3))


@pytest.mark.timeout(120)
def test_sync_batch_norm_across_ranks_matches_the_whole_batch():
    import syncbn_ranks as S
    from comm_ranks import RankPool, no_failures
    pool = RankPool(2)
    try:
        no_failures(pool.run(S.sync_batch_norm_matches_full_batch, (3, 5), 0.3, timeout=60))
        no_failures(pool.run(S.sync_batch_norm_matches_full_batch, (2, 3, 2), None, timeout=60))
    finally:
        pool.close()


def test_deprecated_container():
    with pytest.warns(FutureWarning, match="`nn.Container` is deprecated"):
        box = nn.Container(a=nn.Linear(2, 3), b=nn.ReLU())
    with pytest.warns(FutureWarning):
        ref = torch.nn.Container(a=torch.nn.Linear(2, 3), b=torch.nn.ReLU())
    assert repr(box) == repr(ref) and list(box.state_dict()) == list(ref.state_dict())


@pytest.mark.parametrize("shape_a,shape_b,offs", [((6, 8), (2, 8, 4), [2, 6]), ((7, 8), (2, 8, 4), [3, 7]),
                                                  ((2, 6, 8), (2, 8, 4), None), ((4, 8), (8, 4), [4, 8]),
                                                  ((2, 4, 8), (8, 8), [4, 8])])
def test_grouped_mm(rng, shape_a, shape_b, offs):
    a, ar = pair(rng, shape_a, dtype="float32", requires_grad=True)
    b, br = pair(rng, shape_b, dtype="float32", requires_grad=True)
    groups = None if offs is None else np.array(offs, dtype=np.int32)
    out = nn.functional.grouped_mm(a, b, offs=None if groups is None else tidal.tensor(groups))
    expected = torch.nn.functional.grouped_mm(ar, br, offs=None if groups is None else torch.from_numpy(groups))
    assert_close(out, expected, rtol=1e-5, atol=1e-5)
    backward_both(out, expected, rng)
    assert_grads_close([(a, ar), (b, br)], rtol=1e-5, atol=1e-5)
    if groups is not None:
        with pytest.raises(RuntimeError, match="Offsets have to be int32"):
            nn.functional.grouped_mm(a, b, offs=tidal.tensor(offs))
    with pytest.raises(RuntimeError, match="Expected mat_a to be Float32, BFloat16 or Float16 matrix, got Double"):
        nn.functional.grouped_mm(a.double(), b, offs=None if groups is None else tidal.tensor(groups))

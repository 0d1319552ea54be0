"""Attention: scaled_dot_product_attention and the multi-head attention forward of nn.MultiheadAttention."""
from __future__ import annotations

import math

from .. import ops
from ..autograd import no_grad
from ..autograd.grad_mode import is_grad_enabled
from ..ops.rowwise import attention_rows
from ..ops.dispatch import autocast as _ac
from ..ops.dispatch import torch_function
from ..ops.dispatch.primitive import Primitive
from ..ops.reductions.softmax import safe_softmax
from ..tensor import Tensor
from ..tensor import dtype as dt
from ._util import check_probability, warn_mismatched_masks
from .functional_dropout import dropout
from .functional_linear import linear
from .sdpa_backends import check_viable

__all__ = ["scaled_dot_product_attention", "multi_head_attention_forward"]

# mask classes that run attention themselves: class -> its (mask, query, key, value, ...) function; the module that
# defines such a class (nn.attention.bias) builds on this one and registers it here
MASK_TYPES: dict = {}


def _additive_mask(mask: Tensor | None, dtype: dt.dtype, name: str = "attn_mask",
                   true_means_attend: bool = True) -> Tensor | None:
    """A boolean or float mask as a float mask added to the attention scores. Boolean masks mean 'may
    attend' in scaled_dot_product_attention and 'masked out' in multi-head attention, as in PyTorch."""
    if mask is None:
        return None
    if mask.dtype is dt.bool_:
        blocked = ~mask if true_means_attend else mask
        return ops.zeros(tuple(mask.shape), dtype=dtype, device=mask.device).masked_fill(blocked, float("-inf"))
    if not mask.dtype.is_floating_point:
        raise AssertionError(f"only bool and floating types of {name} are supported")
    return mask


def _safe_softmax(scores: Tensor) -> Tensor:
    """softmax over the last dim, with rows that are entirely -inf giving zeros instead of NaN (as PyTorch)."""
    return safe_softmax(scores, -1)


# how torch's C++ checks print a dtype (its C++ type's name)
_CPP_NAMES = {"float32": "float", "float64": "double", "float16": "c10::Half", "bfloat16": "c10::BFloat16",
              "int64": "long int", "int32": "int", "int16": "short int", "int8": "signed char", "uint8": "unsigned char",
              "complex64": "c10::complex<float>", "complex128": "c10::complex<double>"}


def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor, attn_mask: Tensor | None = None,
                                 dropout_p: float = 0.0, is_causal: bool = False, scale: float | None = None,
                                 enable_gqa: bool = False) -> Tensor:
    """softmax(Q K^T * scale + mask) V, with an optional causal mask and dropout on the weights."""
    if torch_function.SUBCLASSES[0] and torch_function.first_is_subclass(query):  # (nested tensors answer it)
        handled, result = torch_function.dispatch_subclass(
            scaled_dot_product_attention, scaled_dot_product_attention,
            (query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa), {})
        if handled:
            return result
    if ops.holds_global(query, key, value, attn_mask):
        # DTensors (tensor-parallel heads): one op on the gathered inputs, the result a global tensor
        return ops.global_dispatch("scaled_dot_product_attention", scaled_dot_product_attention,
                                   (query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa), {})
    for mask_type, attend in MASK_TYPES.items():  # a mask that computes attention its own way (CausalBias)
        if isinstance(attn_mask, mask_type):
            return attend(attn_mask, query, key, value, dropout_p, is_causal, scale, enable_gqa)
    if _ac.ACTIVE[0]:
        query, key, value, attn_mask = _ac.lower(query, key, value, attn_mask)
    check_viable(query.device.type)
    if query.dim() < 2 or key.dim() < 2 or value.dim() < 2:
        raise RuntimeError("scaled_dot_product_attention: expected query, key and value to have at least 2 dims")
    if not query.dtype is key.dtype is value.dtype:
        names = [_CPP_NAMES.get(t.dtype.name, t.dtype.name) for t in (query, key, value)]
        raise RuntimeError(f"Expected query, key, and value to have the same dtype, but got query.dtype: {names[0]} "
                           f"key.dtype: {names[1]} and value.dtype: {names[2]} instead.")
    # torch's math path multiplies in batches (bmm): its size check names the batch and the dims it expected
    batch = math.prod(query.shape[:-2])
    if query.shape[-1] != key.shape[-1]:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: [{batch}, "
                           f"{query.shape[-1]}] but got: [{batch}, {key.shape[-1]}].")
    if key.shape[-2] != value.shape[-2]:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: [{batch}, "
                           f"{key.shape[-2]}] but got: [{batch}, {value.shape[-2]}].")
    tgt, src = query.shape[-2], key.shape[-2]
    if scale is None:
        scale = 1.0 / math.sqrt(query.shape[-1])
    if enable_gqa and query.dim() >= 3 and key.shape[-3] != query.shape[-3]:
        groups = query.shape[-3] // key.shape[-3]
        key = key.repeat_interleave(groups, -3)
        value = value.repeat_interleave(groups, -3)
    if is_causal and attn_mask is not None and query.dim() != 4:
        # PyTorch combines the two masks only for 4-D inputs and refuses otherwise
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True")
    if is_causal:
        causal = ops.ones((tgt, src), dtype=dt.bool_, device=query.device).tril()
        attn_mask = causal if attn_mask is None else (attn_mask & causal if attn_mask.dtype is dt.bool_ else
                                                      attn_mask.masked_fill(~causal, float("-inf")))
    flash = dropout_p == 0.0 and _flash_shapes(query, key, value, attn_mask)
    bias = _additive_mask(attn_mask, query.dtype)
    if flash and _fused_takes(query, key, value, bias):
        return _fused_attention(query, key, value, bias, scale)
    low = query.dtype in (dt.float16, dt.bfloat16)
    if low:  # torch's CPU math path computes half and bfloat16 in float32 (rounded logits change the softmax)
        dtype = query.dtype
        query, key, value = query.float(), key.float(), value.float()
        bias = None if bias is None else bias.float()
    # torch's math path scales both factors by sqrt(|scale|) (the query carries a negative scale's sign): the
    # products save these scaled copies, so a later write into query or key is allowed, as in torch
    root = math.sqrt(abs(scale))
    scores = ops.matmul(query * (-root if scale < 0 else root), key.transpose(-2, -1) * root)
    if bias is not None:
        scores = scores + bias
    weights = _safe_softmax(scores) if bias is not None else ops.softmax(scores, -1)
    if dropout_p > 0.0:
        weights = dropout(weights, dropout_p, True)
    out = ops.matmul(weights, value)
    return out.to(dtype) if low else out


def _flash_shapes(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None) -> bool:
    """Whether torch would run these inputs through its flash attention (its node, ScaledDotProductFlashAttentionFor
    CpuBackward0): 4-D, rows of the head dim contiguous, a 2-D or 4-D mask (or none)."""
    return (q.dim() == 4 and (mask is None or mask.dim() in (2, 4))
            and all(t._v.strides[-1] == 1 or t._v.shape[-1] == 1 for t in (q, k, v)))


def _fused_takes(q: Tensor, k: Tensor, v: Tensor, bias: Tensor | None) -> bool:
    """Whether attention's core runs as one kernel each way (ops/rowwise/attention_rows.py): local inputs it takes,
    and a
    bias that needs no gradient."""
    return (attention_rows.takes(q, k, v, bias) and not (bias is not None and bias._requires_grad)
            and not ops.holds_global(q, k, v, bias))


def _fused_attention(q: Tensor, k: Tensor, v: Tensor, bias: Tensor | None, scale: float) -> Tensor:
    """softmax(q k^T * scale + bias) v as one node (torch's ScaledDotProductFlashAttentionForCpu), saving the
    probabilities for its backward."""
    with no_grad():
        out, probs = attention_rows.attention_rows(q, k, v, bias, scale)
    FUSED_ATTENTION.attach((q, k, v), (out,), scale, attention_rows.FORWARD, (q, k, v, probs, bias))
    return out


def _fused_attention_backward(node, g: Tensor) -> tuple:
    # one kernel; a create_graph backward (grad mode on) differentiates the composite's formula instead
    q, k, v, probs, bias = node.saved_tensors
    scale = node.attrs
    if not is_grad_enabled():
        return attention_rows.attention_rows_backward(g, q, k, v, probs, scale)
    return _composite_grads(g, q, k, v, bias, scale)


def _composite_grads(g: Tensor, q: Tensor, k: Tensor, v: Tensor, bias: Tensor | None, scale: float) -> tuple:
    # the gradients of q, k, v as tidal ops, the probabilities recomputed from q and k so that a second backward
    # sees them depend on those
    scores = ops.matmul(q, k.transpose(-2, -1)) * scale
    probs = _safe_softmax(scores if bias is None else scores + bias)
    dp = ops.matmul(g, v.transpose(-2, -1))
    ds = probs * (dp - (probs * dp).sum(-1, keepdim=True)) * scale
    return ops.matmul(ds, k), ops.matmul(ds.transpose(-2, -1), q), ops.matmul(probs.transpose(-2, -1), g)


def _packed_attention(proj: Tensor, heads: int, batch_first: bool, bias: Tensor | None, scale: float) -> Tensor:
    """Self-attention over the q, k, v packed in `proj` ((N, L, 3E), or (L, N, 3E) unless `batch_first`) as one node,
    its result (N, L, E) (or (L, N, E)) and its gradient in `proj`'s layout: no head is copied either way."""
    with no_grad():
        out, probs = attention_rows.packed_attention(proj, heads, batch_first, bias, scale)
    PACKED_ATTENTION.attach((proj,), (out,), (heads, batch_first, scale), attention_rows.PACKED, (proj, probs, bias))
    return out


def _packed_attention_backward(node, g: Tensor) -> tuple:
    proj, probs, bias = node.saved_tensors
    heads, batch_first, scale = node.attrs
    if not is_grad_enabled():
        return (attention_rows.packed_attention_backward(g, proj, probs, heads, batch_first, scale),)
    b0, b1, width = proj.shape
    order = attention_rows.HEADS_FIRST[batch_first]
    split = proj.reshape(b0, b1, 3, heads, width // (3 * heads)).permute(*order)
    g = g.reshape(b0, b1, 1, heads, width // (3 * heads)).permute(*order)[0]
    grads = ops.stack(_composite_grads(g, split[0], split[1], split[2], bias, scale))
    return (grads.permute(*[order.index(d) for d in range(5)]).reshape(b0, b1, width),)  # (the inverse order)


# the row kernels' attention nodes (torch's ScaledDotProductFlashAttentionForCpuBackward0, and the packed
# self-attention's through node=), saving the inputs, the probabilities and the bias: their backward a kernel, but
# for create_graph
FUSED_ATTENTION = Primitive("scaled_dot_product_attention", None, cpu=None, backward=_fused_attention_backward)
PACKED_ATTENTION = Primitive("multi_head_attention_forward", None, cpu=None, backward=_packed_attention_backward)


def _project(x: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
    return linear(x, weight, bias)


def _same_input(a: Tensor, b: Tensor) -> bool:
    """Whether two inputs are the same values with the same autograd path: one tensor, or equal views
    (batch_first's separate transposes of x) of one base."""
    if a is b:
        return True
    va, vb = a._v, b._v
    if not (va.blob is vb.blob and va.shape == vb.shape and va.strides == vb.strides and va.offset == vb.offset
            and a.dtype is b.dtype):
        return False
    return not (a._requires_grad or b._requires_grad) or (a._base is not None and a._base is b._base)


def _pad_last(mask: Tensor | None) -> Tensor | None:
    """Append one 'attend' column (0) to a float mask, for an extra key (bias_k or the zero key)."""
    if mask is None:
        return None
    extra = ops.zeros(tuple(mask.shape[:-1]) + (1,), dtype=mask.dtype, device=mask.device)
    return ops.cat([mask, extra], -1)


def multi_head_attention_forward(query: Tensor, key: Tensor, value: Tensor, embed_dim_to_check: int, num_heads: int,
                                 in_proj_weight: Tensor | None, in_proj_bias: Tensor | None, bias_k: Tensor | None,
                                 bias_v: Tensor | None, add_zero_attn: bool, dropout_p: float,
                                 out_proj_weight: Tensor, out_proj_bias: Tensor | None, training: bool = True,
                                 key_padding_mask: Tensor | None = None, need_weights: bool = True,
                                 attn_mask: Tensor | None = None, use_separate_proj_weight: bool = False,
                                 q_proj_weight: Tensor | None = None, k_proj_weight: Tensor | None = None,
                                 v_proj_weight: Tensor | None = None, static_k: Tensor | None = None,
                                 static_v: Tensor | None = None, average_attn_weights: bool = True,
                                 is_causal: bool = False) -> tuple:
    """Multi-head attention on (L, N, E) inputs (or unbatched (L, E)): returns (output, weights or None)."""
    check_probability(dropout_p)
    if query.dim() not in (2, 3):  # torch's shape check (an unpacking error otherwise)
        raise AssertionError(f"query should be unbatched 2D or batched 3D tensor but received {query.dim()}-D query "
                             "tensor")
    batched = query.dim() == 3
    if not batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query.shape
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but got {embed_dim}")
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if use_separate_proj_weight:  # separate projections may take keys and values of other widths
        if key.shape[:2] != value.shape[:2]:
            raise AssertionError(f"key's sequence and batch dims {key.shape[:2]} do not match value's "
                                 f"{value.shape[:2]}")
    elif key.shape != value.shape:
        raise AssertionError(f"key shape {key.shape} does not match value shape {value.shape}")
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the Transformer module "
                           "method `generate_square_subsequent_mask` to create this mask.")
    float_dtype = query.dtype
    warn_mismatched_masks(key_padding_mask, "key_padding_mask", attn_mask, "attn_mask")
    key_padding_mask = _additive_mask(key_padding_mask, float_dtype, "key_padding_mask", true_means_attend=False)
    attn_mask = _additive_mask(attn_mask, float_dtype, true_means_attend=False)

    # input projections: self-attention projects once with the packed weight, as PyTorch does
    proj = None
    if not use_separate_proj_weight and _same_input(query, key) and _same_input(key, value):
        # batch_first's (L, N, E) query is a transposed view of the caller's (N, L, E): projected in that layout, the
        # packed kernels take each head from the projection and give the result in it, with no copy either way
        batch_first = tgt_len > 1 and bsz > 1 and tuple(query._v.strides) == (embed_dim, tgt_len * embed_dim, 1)
        proj = _project(query.transpose(0, 1) if batch_first else query, in_proj_weight, in_proj_bias)
        q, k, v = ops.chunk(proj.transpose(0, 1) if batch_first else proj, 3, -1)
    else:
        if use_separate_proj_weight:
            weights = (q_proj_weight, k_proj_weight, v_proj_weight)
        else:
            weights = ops.chunk(in_proj_weight, 3, 0)
        biases = ops.chunk(in_proj_bias, 3, 0) if in_proj_bias is not None else (None, None, None)
        q = _project(query, weights[0], biases[0])
        k = _project(key, weights[1], biases[1])
        v = _project(value, weights[2], biases[2])

    src_len = key.shape[0]
    if attn_mask is not None:
        if attn_mask.dim() == 2:
            if tuple(attn_mask.shape) != (tgt_len, src_len):
                raise RuntimeError(f"The shape of the 2D attn_mask is {attn_mask.shape}, but should be "
                                   f"{(tgt_len, src_len)}.")
            attn_mask = attn_mask.unsqueeze(0)
        elif attn_mask.dim() == 3:
            if tuple(attn_mask.shape) != (bsz * num_heads, tgt_len, src_len):
                raise RuntimeError(f"The shape of the 3D attn_mask is {attn_mask.shape}, but should be "
                                   f"{(bsz * num_heads, tgt_len, src_len)}.")
        else:
            raise RuntimeError(f"attn_mask's dimension {attn_mask.dim()} is not supported")
    if bias_k is not None and bias_v is not None:
        k = ops.cat([k, bias_k.repeat(1, bsz, 1)])
        v = ops.cat([v, bias_v.repeat(1, bsz, 1)])
        attn_mask, key_padding_mask = _pad_last(attn_mask), _pad_last(key_padding_mask)

    if not training:
        dropout_p = 0.0
    # self-attention without weights, dropout or extra keys may run packed (see _packed_attention): its heads stay in
    # the projection
    packed = (proj is not None and not need_weights and dropout_p == 0.0 and bias_k is None and not add_zero_attn
              and static_k is None and static_v is None)
    def split_heads(x: Tensor) -> Tensor:  # (L, N, E) -> (N * H, L, head_dim)
        return x.reshape(x.shape[0], bsz * num_heads, head_dim).transpose(0, 1)

    if not packed:
        q = split_heads(q)
        k = split_heads(k) if static_k is None else static_k
        v = split_heads(v) if static_v is None else static_v
    if add_zero_attn:
        zeros = ops.zeros((bsz * num_heads, 1, head_dim), dtype=q.dtype, device=q.device)
        k, v = ops.cat([k, zeros], 1), ops.cat([v, zeros], 1)
        attn_mask, key_padding_mask = _pad_last(attn_mask), _pad_last(key_padding_mask)
    src_len = k.shape[0] if packed else k.shape[1]
    if key_padding_mask is not None:
        # torch 2.13's _check_key_padding_mask: the batch size first, then the source length
        for dim, expected in ((0, bsz), (1, src_len)):
            if key_padding_mask.shape[dim] != expected:
                raise AssertionError(f"Expected key_padded_mask.shape[{dim}] to be {expected}, but got "
                                     f"{key_padding_mask.shape[dim]}")
        kpm = key_padding_mask.reshape(bsz, 1, 1, src_len).expand(bsz, num_heads, 1, src_len)
        kpm = kpm.reshape(bsz * num_heads, 1, src_len)
        attn_mask = kpm if attn_mask is None else attn_mask + kpm

    if packed:
        lead = (bsz, num_heads) if attn_mask is not None and attn_mask.shape[0] > 1 else (1, 1)  # (from N * H or 1)
        bias = None if attn_mask is None else attn_mask.reshape(*lead, attn_mask.shape[1], src_len)
        if (attention_rows.takes_packed(proj, num_heads, batch_first, bias)
                and not (bias is not None and bias._requires_grad) and not ops.holds_global(proj, bias)):
            out = linear(_packed_attention(proj, num_heads, batch_first, bias, math.sqrt(1.0 / head_dim)),
                         out_proj_weight, out_proj_bias)
            out = out.transpose(0, 1) if batch_first else out  # (L, N, E)
            return (out if batched else out.squeeze(1)), None
        q, k, v = split_heads(q), split_heads(k), split_heads(v)  # (a layout the packed kernels do not take)
    if not need_weights and dropout_p == 0.0 and _fused_takes(q, k, v, attn_mask):
        out = _fused_attention(q, k, v, attn_mask, math.sqrt(1.0 / head_dim))  # (N * H, L, head_dim)
    else:
        scores = ops.matmul(q * math.sqrt(1.0 / head_dim), k.transpose(-2, -1))
        if attn_mask is not None:
            scores = scores + attn_mask
        attn = ops.softmax(scores, -1) if need_weights else _safe_softmax(scores)
        if dropout_p > 0.0:
            attn = dropout(attn, dropout_p, True)
        out = ops.matmul(attn, v)  # (N * H, L, head_dim)
    out = out.transpose(0, 1).reshape(tgt_len * bsz, embed_dim)
    out = linear(out, out_proj_weight, out_proj_bias).reshape(tgt_len, bsz, out_proj_weight.shape[0])
    if not batched:
        out = out.squeeze(1)
    if not need_weights:
        return out, None
    attn = attn.reshape(bsz, num_heads, tgt_len, src_len)
    if average_attn_weights:
        attn = attn.mean(1)
    if not batched:
        attn = attn.squeeze(0)
    return out, attn

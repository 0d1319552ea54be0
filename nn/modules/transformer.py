"""TransformerEncoderLayer and TransformerEncoder."""
from __future__ import annotations

import copy

from ... import ops
from ...tensor import Tensor
from ...tensor import dtype as dt
from .. import functional as F
from ..containers import ModuleList
from ..module import Module
from .attention import MultiheadAttention
from .dropout import Dropout
from .linear import Linear
from .normalization import LayerNorm

__all__ = ["TransformerEncoderLayer", "TransformerEncoder", "generate_square_subsequent_mask"]


def generate_square_subsequent_mask(sz: int, device=None, dtype=None) -> Tensor:
    """A float (sz, sz) causal mask: 0 on and below the diagonal, -inf above."""
    dtype = dtype or dt.get_default_dtype()
    return ops.full((sz, sz), float("-inf"), dtype=dtype, device=device).triu(1)


def _activation_fn(activation):
    if activation == "relu":
        return F.relu
    if activation == "gelu":
        return F.gelu
    raise RuntimeError(f"activation should be relu/gelu, not {activation}")


def _float_mask(mask: Tensor | None, dtype: dt.dtype) -> Tensor | None:
    """Boolean masks (True = masked out) as additive float masks, as PyTorch canonicalizes them."""
    if mask is None or mask.dtype.is_floating_point:
        return mask
    if mask.dtype is not dt.bool_:
        raise AssertionError("only bool and floating types of masks are supported")
    return ops.zeros(tuple(mask.shape), dtype=dtype, device=mask.device).masked_fill(mask, float("-inf"))


class TransformerEncoderLayer(Module):
    """Self-attention and a feed-forward block, each with dropout, a residual and LayerNorm (pre or post)."""

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation="relu", layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__()
        factory = {"device": device, "dtype": dtype}
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first,
                                            **factory)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **factory)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **factory)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.activation = _activation_fn(activation) if isinstance(activation, str) else activation

    def forward(self, src: Tensor, src_mask: Tensor | None = None, src_key_padding_mask: Tensor | None = None,
                is_causal: bool = False) -> Tensor:
        """One encoder layer on (S, N, E) (or (N, S, E) with batch_first) inputs."""
        src_key_padding_mask = _float_mask(src_key_padding_mask, src.dtype)
        src_mask = _float_mask(src_mask, src.dtype)
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            x = x + self._ff_block(self.norm2(x))
        else:
            x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
            x = self.norm2(x + self._ff_block(x))
        return x

    def _sa_block(self, x: Tensor, attn_mask, key_padding_mask, is_causal: bool) -> Tensor:
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask, need_weights=False,
                           is_causal=is_causal)[0]
        return self.dropout1(x)

    def _ff_block(self, x: Tensor) -> Tensor:
        return self.dropout2(self.linear2(self.dropout(self.activation(self.linear1(x)))))


class TransformerEncoder(Module):
    """A stack of `num_layers` copies of an encoder layer, with an optional final norm."""

    def __init__(self, encoder_layer: TransformerEncoderLayer, num_layers: int, norm: Module | None = None,
                 enable_nested_tensor: bool = True, mask_check: bool = True) -> None:
        super().__init__()
        self.layers = ModuleList([copy.deepcopy(encoder_layer) for _ in range(num_layers)])
        self.num_layers = num_layers
        self.norm = norm
        self.enable_nested_tensor = enable_nested_tensor
        self.mask_check = mask_check

    def forward(self, src: Tensor, mask: Tensor | None = None, src_key_padding_mask: Tensor | None = None,
                is_causal: bool | None = None) -> Tensor:
        """The layers in turn, then the final norm."""
        src_key_padding_mask = _float_mask(src_key_padding_mask, src.dtype)
        mask = _float_mask(mask, src.dtype)
        causal = bool(is_causal)
        if is_causal is None and mask is not None and mask.dim() == 2 and mask.shape[0] == mask.shape[1]:
            expected = generate_square_subsequent_mask(mask.shape[0], device=mask.device, dtype=mask.dtype)
            causal = bool((mask == expected).all())
        output = src
        for layer in self.layers:
            output = layer(output, src_mask=mask, is_causal=causal, src_key_padding_mask=src_key_padding_mask)
        if self.norm is not None:
            output = self.norm(output)
        return output

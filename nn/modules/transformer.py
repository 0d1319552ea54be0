"""The Transformer of "Attention Is All You Need": encoder and decoder layers, their stacks, and the model."""
from __future__ import annotations

import copy
import warnings
from typing import Any, Callable

from ... import ops
from ...autograd.grad_mode import is_grad_enabled
from ...ops.dispatch import autocast as _ac
from ...tensor import Tensor
from ...tensor import dtype as dt
from .. import functional as F
from .. import init
from ..containers import ModuleList
from .._util import warn_mismatched_masks
from ..module import Module
from .activation import GELU
from .activation import ReLU
from .attention import MultiheadAttention
from .dropout import Dropout
from .linear import Linear
from .normalization import LayerNorm

__all__ = ["Transformer", "TransformerEncoderLayer", "TransformerEncoder", "TransformerDecoderLayer",
           "TransformerDecoder", "generate_square_subsequent_mask"]


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


def _activation_code(activation) -> int:
    """PyTorch's `activation_relu_or_gelu` flag: 1 for relu, 2 for gelu, 0 for anything else."""
    if activation is F.relu or isinstance(activation, ReLU):
        return 1
    if activation is F.gelu or isinstance(activation, GELU):
        return 2
    return 0


def _float_mask(mask: Tensor | None, dtype: dt.dtype) -> Tensor | None:
    """Boolean masks (True = masked out) as additive float masks, as PyTorch canonicalizes them."""
    if mask is None or mask.dtype.is_floating_point:
        return mask
    if mask.dtype is not dt.bool_:
        raise AssertionError("only bool and floating types of masks are supported")
    return ops.zeros(tuple(mask.shape), dtype=dtype, device=mask.device).masked_fill(mask, float("-inf"))


def _no_fast_path_reason(layer) -> str:
    """Why torch's TransformerEncoder would not use nested tensors with this layer ('' if it would)."""
    if not isinstance(layer, TransformerEncoderLayer):
        return "encoder_layer was not TransformerEncoderLayer"
    attn = layer.self_attn
    checks = ((layer.norm_first, "encoder_layer.norm_first was True"),
              (not attn.batch_first, "encoder_layer.self_attn.batch_first was not True(use batch_first for better "
                                     "inference performance)"),
              (not attn._qkv_same_embed_dim, "encoder_layer.self_attn._qkv_same_embed_dim was not True"),
              (attn.in_proj_bias is None, "encoder_layer.self_attn was passed bias=False"),
              (not layer.activation_relu_or_gelu, "encoder_layer.activation_relu_or_gelu was not True"),
              (layer.norm1.eps != layer.norm2.eps, "encoder_layer.norm1.eps was not equal to encoder_layer.norm2.eps"),
              (attn.num_heads % 2 == 1, "encoder_layer.self_attn.num_heads is odd"))
    return next((why for failed, why in checks if failed), "")


def _seq_len(x: Tensor, batch_first: bool) -> int:
    return x.shape[0] if x.dim() == 2 else x.shape[1 if batch_first else 0]


def _detect_is_causal_mask(mask: Tensor | None, is_causal: bool | None = None, size: int | None = None) -> bool:
    """`is_causal` when given; otherwise whether `mask` equals the causal mask of its size."""
    if is_causal is not None or mask is None:
        return is_causal is True
    sz = size if size is not None else mask.shape[-2]
    expected = generate_square_subsequent_mask(sz, device=mask.device, dtype=mask.dtype)
    return tuple(mask.shape) == (sz, sz) and bool((mask == expected).all())


def _clones(module: Module, n: int) -> ModuleList:
    return ModuleList([copy.deepcopy(module) for _ in range(n)])


# PyTorch's private names for these helpers, which model code imports from torch.nn.modules.transformer
_get_clones, _get_activation_fn, _get_seq_len = _clones, _activation_fn, _seq_len
_generate_square_subsequent_mask = generate_square_subsequent_mask


class TransformerEncoderLayer(Module):
    """Self-attention and a feed-forward block, each with dropout, a residual and LayerNorm (pre or post)."""

    __constants__ = ["norm_first"]

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation: str | Callable = F.relu, layer_norm_eps: float = 1e-5, batch_first: bool = False,
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
        activation = _activation_fn(activation) if isinstance(activation, str) else activation
        self.activation_relu_or_gelu = _activation_code(activation)
        self.activation = activation

    def forward(self, src: Tensor, src_mask: Tensor | None = None, src_key_padding_mask: Tensor | None = None,
                is_causal: bool = False) -> Tensor:
        """One encoder layer on (S, N, E) (or (N, S, E) with batch_first) inputs."""
        warn_mismatched_masks(src_key_padding_mask, "src_key_padding_mask", src_mask, "src_mask")
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


class TransformerDecoderLayer(Module):
    """Self-attention, attention over the encoder's memory, and a feed-forward block, each with dropout, a
    residual and LayerNorm (pre or post)."""

    __constants__ = ["norm_first"]

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation: str | Callable = F.relu, layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__()
        factory = {"device": device, "dtype": dtype}
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, batch_first=batch_first, bias=bias,
                                            **factory)
        self.multihead_attn = MultiheadAttention(d_model, nhead, dropout=dropout, batch_first=batch_first,
                                                 bias=bias, **factory)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **factory)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **factory)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.norm3 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.dropout3 = Dropout(dropout)
        self.activation = _activation_fn(activation) if isinstance(activation, str) else activation

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask: Tensor | None = None, memory_mask: Tensor | None = None,
                tgt_key_padding_mask: Tensor | None = None, memory_key_padding_mask: Tensor | None = None,
                tgt_is_causal: bool = False, memory_is_causal: bool = False) -> Tensor:
        """One decoder layer: `tgt` attends to itself, then to `memory`."""
        x = tgt
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask, tgt_is_causal)
            x = x + self._mha_block(self.norm2(x), memory, memory_mask, memory_key_padding_mask, memory_is_causal)
            x = x + self._ff_block(self.norm3(x))
        else:
            x = self.norm1(x + self._sa_block(x, tgt_mask, tgt_key_padding_mask, tgt_is_causal))
            x = self.norm2(x + self._mha_block(x, memory, memory_mask, memory_key_padding_mask, memory_is_causal))
            x = self.norm3(x + self._ff_block(x))
        return x

    def _sa_block(self, x: Tensor, attn_mask, key_padding_mask, is_causal: bool) -> Tensor:
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask, is_causal=is_causal,
                           need_weights=False)[0]
        return self.dropout1(x)

    def _mha_block(self, x: Tensor, mem: Tensor, attn_mask, key_padding_mask, is_causal: bool) -> Tensor:
        x = self.multihead_attn(x, mem, mem, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                                is_causal=is_causal, need_weights=False)[0]
        return self.dropout2(x)

    def _ff_block(self, x: Tensor) -> Tensor:
        return self.dropout3(self.linear2(self.dropout(self.activation(self.linear1(x)))))


class TransformerEncoder(Module):
    """A stack of `num_layers` copies of an encoder layer, with an optional final norm."""

    __constants__ = ["norm"]

    def __init__(self, encoder_layer: TransformerEncoderLayer, num_layers: int, norm: Module | None = None,
                 enable_nested_tensor: bool = True, mask_check: bool = True) -> None:
        super().__init__()
        self.layers = _clones(encoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm
        self.enable_nested_tensor = enable_nested_tensor
        reason = _no_fast_path_reason(encoder_layer)
        # torch's flag; tidal has no nested tensors, but gives the padded positions what they would hold (forward)
        self.use_nested_tensor = enable_nested_tensor and not reason
        if enable_nested_tensor and reason:  # torch's warning when its sparsity fast path is ruled out
            warnings.warn(f"enable_nested_tensor is True, but self.use_nested_tensor is False because {reason}",
                          stacklevel=2)
        self.mask_check = mask_check

    def forward(self, src: Tensor, mask: Tensor | None = None, src_key_padding_mask: Tensor | None = None,
                is_causal: bool | None = None) -> Tensor:
        """The layers in turn, then the final norm."""
        warn_mismatched_masks(src_key_padding_mask, "src_key_padding_mask", mask, "mask")
        padded = self._nested_padding(src, mask, src_key_padding_mask)
        src_key_padding_mask = _float_mask(src_key_padding_mask, src.dtype)
        mask = _float_mask(mask, src.dtype)
        batch_first = self.layers[0].self_attn.batch_first if len(self.layers) else False
        causal = _detect_is_causal_mask(mask, is_causal, _seq_len(src, batch_first))
        output = src
        for layer in self.layers:
            output = layer(output, src_mask=mask, is_causal=causal, src_key_padding_mask=src_key_padding_mask)
        if padded is not None:  # torch's nested-tensor path leaves zeros where it computed nothing
            output = output.masked_fill(padded.unsqueeze(-1), 0.0)
        if self.norm is not None:
            output = self.norm(output)
        return output


    def _nested_padding(self, src: Tensor, mask, key_padding_mask):
        """The padded positions (bool, (N, S)) when torch's TransformerEncoder would run on nested tensors (eval,
        no gradient to record, a right-padded key_padding_mask, no attention mask, no autocast), else None."""
        if key_padding_mask is None or mask is not None or not self.use_nested_tensor or not len(self.layers):
            return None
        first = self.layers[0]
        if first.training or src.dim() != 3 or _ac.enabled_dtype(src.device.type) is not None:
            return None
        weights = (src, *(p for p in first.parameters()))
        if is_grad_enabled() and any(t._requires_grad for t in weights):
            return None
        padded = key_padding_mask if key_padding_mask.dtype is dt.bool_ else key_padding_mask != 0
        valid = ~padded
        if self.mask_check and bool((valid[:, 1:] & ~valid[:, :-1]).any()):  # torch's left-aligned check
            return None
        global _NESTED_WARNED
        if not _NESTED_WARNED:  # (torch warns once per process)
            _NESTED_WARNED = True
            warnings.warn("The PyTorch API of nested tensors is in prototype stage and will change in the near "
                          "future. We recommend specifying layout=torch.jagged when constructing a nested tensor, as "
                          "this layout receives active development, has better operator coverage, and works with "
                          "torch.compile.", UserWarning, stacklevel=3)
        return padded


_NESTED_WARNED = False


class TransformerDecoder(Module):
    """A stack of `num_layers` copies of a decoder layer, with an optional final norm."""

    __constants__ = ["norm"]

    def __init__(self, decoder_layer: TransformerDecoderLayer, num_layers: int, norm: Module | None = None) -> None:
        super().__init__()
        self.layers = _clones(decoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask: Tensor | None = None, memory_mask: Tensor | None = None,
                tgt_key_padding_mask: Tensor | None = None, memory_key_padding_mask: Tensor | None = None,
                tgt_is_causal: bool | None = None, memory_is_causal: bool = False) -> Tensor:
        """The layers in turn (each attending to `memory`), then the final norm."""
        batch_first = self.layers[0].self_attn.batch_first if len(self.layers) else False
        tgt_is_causal = _detect_is_causal_mask(tgt_mask, tgt_is_causal, _seq_len(tgt, batch_first))
        output = tgt
        for layer in self.layers:
            output = layer(output, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                           tgt_key_padding_mask=tgt_key_padding_mask, memory_key_padding_mask=memory_key_padding_mask,
                           tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)
        if self.norm is not None:
            output = self.norm(output)
        return output


class Transformer(Module):
    """An encoder-decoder Transformer: the encoder reads `src` into a memory the decoder attends to."""

    def __init__(self, d_model: int = 512, nhead: int = 8, num_encoder_layers: int = 6, num_decoder_layers: int = 6,
                 dim_feedforward: int = 2048, dropout: float = 0.1, activation: str | Callable = F.relu,
                 custom_encoder: Any | None = None, custom_decoder: Any | None = None, layer_norm_eps: float = 1e-5,
                 batch_first: bool = False, norm_first: bool = False, bias: bool = True, device=None,
                 dtype=None) -> None:
        super().__init__()
        factory = {"device": device, "dtype": dtype}
        layer_args = (d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps, batch_first, norm_first,
                      bias)
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            self.encoder = TransformerEncoder(TransformerEncoderLayer(*layer_args, **factory), num_encoder_layers,
                                              LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory))
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            self.decoder = TransformerDecoder(TransformerDecoderLayer(*layer_args, **factory), num_decoder_layers,
                                              LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory))
        self._reset_parameters()
        self.d_model = d_model
        self.nhead = nhead
        self.batch_first = batch_first

    def forward(self, src: Tensor, tgt: Tensor, src_mask: Tensor | None = None, tgt_mask: Tensor | None = None,
                memory_mask: Tensor | None = None, src_key_padding_mask: Tensor | None = None,
                tgt_key_padding_mask: Tensor | None = None, memory_key_padding_mask: Tensor | None = None,
                src_is_causal: bool | None = None, tgt_is_causal: bool | None = None,
                memory_is_causal: bool = False) -> Tensor:
        """Encode `src`, then decode `tgt` against that memory."""
        batch_dim = 0 if self.batch_first else 1
        if src.dim() == 3 and src.shape[batch_dim] != tgt.shape[batch_dim]:
            raise RuntimeError("the batch number of src and tgt must be equal")
        if src.shape[-1] != self.d_model or tgt.shape[-1] != self.d_model:
            raise RuntimeError("the feature number of src and tgt must be equal to d_model")
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask, is_causal=src_is_causal)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask, tgt_is_causal=tgt_is_causal,
                            memory_is_causal=memory_is_causal)

    @staticmethod
    def generate_square_subsequent_mask(sz: int, device=None, dtype=None) -> Tensor:
        """A float (sz, sz) causal mask: 0 on and below the diagonal, -inf above."""
        return generate_square_subsequent_mask(sz, device=device, dtype=dtype)

    def _reset_parameters(self) -> None:
        """Xavier-uniform for every matrix parameter, as PyTorch initializes the model."""
        for p in self.parameters():
            if p.dim() > 1:
                init.xavier_uniform_(p)

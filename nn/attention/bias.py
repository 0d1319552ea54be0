"""torch.nn.attention.bias: causal attention biases (upper-left and lower-right aligned)."""
from __future__ import annotations

import enum
import warnings

from ... import ops
from ...tensor import Tensor
from ...tensor import dtype as dt
from ..functional_attention import MASK_TYPES, scaled_dot_product_attention

__all__ = ["causal_upper_left", "causal_lower_right", "CausalVariant", "CausalBias"]


class CausalVariant(enum.IntEnum):
    """Where the causal triangle is aligned when query and key lengths differ."""

    UPPER_LEFT = 1
    LOWER_RIGHT = 2


class CausalBias(Tensor):
    """A causal mask given by its variant and sequence lengths: a Tensor (its values are the boolean mask, True
    where a query may attend, as torch's CausalBias prints and materializes).

    scaled_dot_product_attention takes it as `attn_mask`; an upper-left bias (or a square one)
    becomes `is_causal=True`, a lower-right one the boolean mask it stands for."""

    def __new__(cls, variant: CausalVariant, seq_len_q: int, seq_len_kv: int) -> "CausalBias":
        if not isinstance(variant, CausalVariant):
            raise AssertionError(f"variant must be a CausalVariant, got {type(variant).__name__}")
        if seq_len_q > seq_len_kv and variant == CausalVariant.LOWER_RIGHT:
            warnings.warn("Lower right causal bias will produce NaNs in the output when seq_len_q > seq_len_kv!",
                          stacklevel=3)
        mask = _mask(variant, seq_len_q, seq_len_kv, "cpu")
        self = cls._make(mask._v, mask.dtype, mask.device, mask._vm)
        self.variant, self.seq_len_q, self.seq_len_kv = variant, seq_len_q, seq_len_kv
        return self

    def __init__(self, variant: CausalVariant, seq_len_q: int, seq_len_kv: int) -> None:
        pass  # (made by __new__)

    def _materialize(self, device=None):
        """The boolean mask (True: may attend), on `device` (the CPU by default)."""
        return _mask(self.variant, self.seq_len_q, self.seq_len_kv, device or "cpu")

    def _dispatch(self, query, key, value, dropout_p: float = 0.0, is_causal: bool = False, scale=None,
                  enable_gqa: bool = False):
        if is_causal:
            raise ValueError("CausalBias should not be used with causal=True")
        if self.seq_len_q == self.seq_len_kv or self.variant == CausalVariant.UPPER_LEFT:
            return scaled_dot_product_attention(query, key, value, None, dropout_p, True, scale, enable_gqa)
        return scaled_dot_product_attention(query, key, value, self._materialize(query.device), dropout_p, False,
                                            scale, enable_gqa)

    def __repr__(self) -> str:
        return repr(self._materialize())


def _mask(variant: CausalVariant, seq_len_q: int, seq_len_kv: int, device):
    ones = ops.ones((seq_len_q, seq_len_kv), dtype=dt.bool_, device=device)
    return ones.tril() if variant == CausalVariant.UPPER_LEFT else ones.tril(seq_len_kv - seq_len_q)


def causal_upper_left(*size: int) -> CausalBias:
    """A causal bias aligned to the upper-left corner: size (seq_len_q, seq_len_kv)."""
    if len(size) != 2:
        raise AssertionError("causal_upper_left only supports 2D tensors")
    return CausalBias(CausalVariant.UPPER_LEFT, size[0], size[1])


def causal_lower_right(*size: int) -> CausalBias:
    """A causal bias aligned to the lower-right corner: size (seq_len_q, seq_len_kv)."""
    if len(size) != 2:
        raise AssertionError("causal_lower_right only supports 2D tensors")
    return CausalBias(CausalVariant.LOWER_RIGHT, size[0], size[1])


MASK_TYPES[CausalBias] = CausalBias._dispatch

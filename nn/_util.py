"""Helpers shared by the functional files: precision, reductions, argument checks."""
from __future__ import annotations

import warnings

from ..tensor import Tensor
from ..tensor import dtype as dt
from ..ops.dispatch.user_frame import user_stacklevel

_HALF = (dt.float16, dt.bfloat16)


def opmath(x: Tensor) -> Tensor:
    """`x` in the precision a composite runs in: float32 for 16-bit floats, as PyTorch accumulates."""
    return x.float() if x.dtype in _HALF else x


def check_probability(p: float) -> None:
    """PyTorch's check on a dropout probability."""
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def legacy_reduction(size_average, reduce, reduction: str) -> str:
    """The reduction named by the deprecated size_average/reduce flags (with PyTorch's warning), else `reduction`."""
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    result = "none" if not reduce else ("mean" if size_average else "sum")
    warnings.warn(f"size_average and reduce args will be deprecated, please use reduction='{result}' instead.",
                  stacklevel=user_stacklevel())
    return result


def warn_mismatched_masks(mask, name: str, other, other_name: str) -> None:
    """torch's deprecation warning when a padding mask and an attention mask have different dtypes."""
    if mask is not None and other is not None and mask.dtype is not other.dtype:
        warnings.warn(f"Support for mismatched {name} and {other_name} is deprecated. Use same type for both "
                      "instead.", stacklevel=3)


def check_reduction(reduction: str) -> None:
    """ValueError for an unknown reduction name."""
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")


def reduce(loss: Tensor, reduction: str) -> Tensor:
    """Apply 'none' | 'mean' | 'sum' to an elementwise loss."""
    check_reduction(reduction)
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


def warn_if_broadcast(input: Tensor, target: Tensor, stacklevel: int | None = None) -> None:
    """PyTorch's warning when a loss's target shape differs from its input's (at the user's line by default)."""
    if target.shape != input.shape:
        warnings.warn(f"Using a target size ({target.shape}) that is different to the input size "
                      f"({input.shape}). This will likely lead to incorrect results due to broadcasting. "
                      "Please ensure they have the same size.",
                      stacklevel=user_stacklevel() if stacklevel is None else stacklevel)

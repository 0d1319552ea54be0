"""Linear maps: F.linear and F.bilinear (the layers' math, and the projections attention and losses use)."""
from __future__ import annotations

import math

from .. import ops
from ..ops.dispatch import autocast as _ac
from ..ops.elementwise.plans import torch_name
from ..ops.dispatch.factory_args import TYPEMETA_NAME
from ..ops.dispatch.node_names import torch_node
from ..tensor import Tensor
from ..tensor import dtype as dt

__all__ = ["linear", "bilinear"]


_ROUNDED_ONCE = (dt.bfloat16, dt.float16)


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """y = input @ weight.T + bias."""
    if _ac.ACTIVE[0]:
        input, weight, bias = _ac.lower(input, weight, bias)
    if bias is not None:
        _check_addmm(input, weight, bias)
    if bias is not None and input.dtype in _ROUNDED_ONCE and bias.dim() == 1 and input.dim() >= 1 \
            and (input.dim() == 2 or input.is_contiguous()):
        # torch's fused addmm: the bias joins the float32 accumulator, so a half/bfloat16 result rounds once
        flat = ops.addmm(bias, input.reshape(-1, input.shape[-1]), weight.t())
        return flat if input.dim() == 2 else flat.view(*input.shape[:-1], flat.shape[-1])
    out = ops.matmul(input, weight.t())
    if bias is None:
        return out
    # torch's node: addmm for a batch of vectors, else the view around it
    return torch_node(out + bias, "addmm" if input.dim() == 2 else "view", input, weight, bias)


def _check_addmm(input: Tensor, weight: Tensor, bias: Tensor) -> None:
    """torch's errors for linear with a bias (its addmm on the input seen as 2-D): no silent dtype promotion."""
    if input.dim() == 0 or weight.dim() == 0:
        raise RuntimeError(f"both arguments to linear need to be at least 1D, but they are {input.dim()}D and "
                           f"{weight.dim()}D")
    if bias.dtype is not weight.dtype:  # (addmm checks its self, the bias, first)
        raise RuntimeError(f"self and mat2 must have the same dtype, but got {torch_name(bias.dtype)} and "
                           f"{torch_name(weight.dtype)}")
    if input.dtype is not weight.dtype:
        raise RuntimeError(f"mat1 and mat2 must have the same dtype, but got {torch_name(input.dtype)} and "
                           f"{torch_name(weight.dtype)}")
    if bias.dim() != 1 or weight.dim() != 2 or bias.shape[0] != weight.shape[0]:
        rows = math.prod(input.shape[:-1])
        bias.expand(rows, weight.shape[0] if weight.dim() == 2 else 1)  # torch's expand error when it can't


def _check_bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Tensor | None) -> None:
    """torch's bilinear checks, in its order: dtypes, ranks, each batch dim, then sizes against weight's."""
    named = [("input1", input1), ("input2", input2), ("weight", weight)] + ([("bias", bias)] if bias is not None
                                                                           else [])
    if len({x.dtype for _, x in named}) > 1:  # named as C++ types
        raise RuntimeError("All tensors must have the same dtype, got " + ", ".join(
            f"{name}: {TYPEMETA_NAME.get(x.dtype, torch_name(x.dtype))}" for name, x in named))
    if input1.dim() != input2.dim():
        raise RuntimeError(f"bilinear(): input dimensions do not match: got {input1.dim()} and {input2.dim()}")
    for d in range(input1.dim() - 1):
        if input1.shape[d] != input2.shape[d]:
            raise RuntimeError(f"bilinear(): input batch dimensions do not match at dim {d}: got {input1.shape[d]} "
                               f"and {input2.shape[d]}")
    for name, x, d in (("input1", input1, 1), ("input2", input2, 2)):
        if x.size(-1) != weight.size(d):
            raise RuntimeError(f"bilinear(): {name} size does not match weight size: got {x.size(-1)} but "
                               f"expected {weight.size(d)}")
    if bias is not None and bias.size(0) != weight.size(0):
        raise RuntimeError(f"bilinear(): bias size does not match weight size: got {bias.size(0)} but expected "
                           f"{weight.size(0)}")


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """y[..., o] = sum_ij input1[..., i] * weight[o, i, j] * input2[..., j] + bias[o]."""
    _check_bilinear(input1, input2, weight, bias)
    out_f, in1, in2 = weight.shape
    # (..., i) @ (i, o*j) -> (..., o, j), then contract j with input2
    mixed = ops.matmul(input1, weight.permute(1, 0, 2).reshape(in1, out_f * in2))
    mixed = mixed.reshape(tuple(input1.shape[:-1]) + (out_f, in2))
    out = (mixed * input2.unsqueeze(-2)).sum(-1, dtype=mixed.dtype)  # (a sum would make integer inputs int64)
    return out if bias is None else out + bias

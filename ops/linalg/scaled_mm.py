"""torch._scaled_mm as torch 2.13 runs it on the CPU: float8 matrices times their scales, in float32.

torch's CPU kernel emulates the GPU one: both float8 matrices are converted to float32, the
matrices are scaled by `scale_a` and `scale_b` first (one number each: "tensorwise"; or a (M, 1) and a (1, N)
float32 column and row: "rowwise"), `bias` is added with the usual promotion (so a float8 bias is refused), and the
result converted to `out_dtype` (the first matrix's dtype by default). `scale_result` and `use_fast_accum`
change nothing on the CPU.
"""
from __future__ import annotations

from ...tensor import Tensor
from ...tensor import dtype as dt

__all__ = ["_scaled_mm"]


def _scaling_ok(mat_a: Tensor, mat_b: Tensor, scale_a: Tensor, scale_b: Tensor) -> bool:
    if mat_a.dtype not in dt.FLOAT8 or mat_b.dtype not in dt.FLOAT8:
        return False
    if scale_a.dtype is not dt.float32 or scale_b.dtype is not dt.float32:
        return False
    if scale_a.numel() == 1 and scale_b.numel() == 1:  # tensorwise
        return True
    rows, cols = mat_a.shape[0], mat_b.shape[-1]
    return (tuple(scale_a.shape) == (rows, 1) and tuple(scale_b.shape) == (1, cols) and scale_a.is_contiguous()
            and scale_b.is_contiguous())  # rowwise


def _scaling_error(mat_a: Tensor, mat_b: Tensor, scale_a: Tensor, scale_b: Tensor) -> ValueError:
    rows, cols = mat_a.shape[0], mat_b.shape[-1]
    return ValueError(
        "Invalid scaling configuration.\n"
        "- For TensorWise scaling, a and b should be float8, scales should be float and singletons.\n"
        f"- For RowWise scaling, a and b should be float8, scales should be float, scale_a should be ({rows}, 1) "
        f"and scale_b should be (1, {cols}), and both should be contiguous.\n"
        f"Got mat_a.dtype()={mat_a.dtype.scalar_name}, scale_a.dtype()={scale_a.dtype.scalar_name}, "
        f"scale_a.size()={list(scale_a.shape)}, scale_a.stride()={list(scale_a.stride())}, "
        f"mat_b.dtype()={mat_b.dtype.scalar_name}, scale_b.dtype()={scale_b.dtype.scalar_name}, "
        f"scale_b.size()={list(scale_b.shape)} and scale_b.stride()={list(scale_b.stride())}")


def _scaled_mm(self: Tensor, mat2: Tensor, scale_a: Tensor, scale_b: Tensor, bias: Tensor | None = None,
               scale_result: Tensor | None = None, out_dtype: dt.dtype | None = None,
               use_fast_accum: bool = False) -> Tensor:
    """`(self @ mat2) * scale_a * scale_b + bias` from float8 matrices, computed in float32, as torch's CPU kernel."""
    if not _scaling_ok(self, mat2, scale_a, scale_b):
        raise _scaling_error(self, mat2, scale_a, scale_b)
    if self.dim() != 2:
        raise RuntimeError("mat1 must be a matrix")
    if mat2.dim() != 2:
        raise RuntimeError("mat2 must be a matrix")
    (m, k), (k2, n) = self.shape, mat2.shape
    if k != k2:
        raise RuntimeError(f"mat_a and mat_b shapes cannot be multiplied ({m}x{k} and {k2}x{n})")
    if bias is not None and bias.numel() != n:
        raise RuntimeError(f"Bias must be size {n} but got {bias.numel()}")
    out = (self.to(dt.float32) * scale_a) @ (mat2.to(dt.float32) * scale_b)  # (scaled before the product)
    if bias is not None:
        out = out + bias
    return out.to(self.dtype if out_dtype is None else out_dtype)

"""grouped_mm: many matrix products of different sizes in one call (mixture-of-experts layers), as a composite of
matmuls over the groups that `offs` (cumulative group ends) cuts out of the 2-D operand."""
from __future__ import annotations

from .. import ops
from ..ops.windowed.windows import TENSOR_TYPE
from ..tensor import Tensor
from ..tensor import dtype as dt

__all__ = ["grouped_mm"]


def _check(mat_a: Tensor, mat_b: Tensor, offs: Tensor | None, bias, out_dtype) -> None:
    for name, m in (("mat_a", mat_a), ("mat_b", mat_b)):
        if m.dtype not in (dt.float32, dt.bfloat16, dt.float16):
            raise RuntimeError(f"Expected {name} to be Float32, BFloat16 or Float16 matrix, got "
                               f"{TENSOR_TYPE[m.dtype]}")
        if m.dim() not in (2, 3):
            raise RuntimeError(f"{name} has to be 2 or 3d")
    if (offs is None) != (mat_a.dim() == 3 and mat_b.dim() == 3):
        raise RuntimeError("Have to provide offsets if there is a 2d matrix, or no offset if both matrices are 3d")
    if offs is not None and offs.dtype is not dt.int32:
        raise RuntimeError("Offsets have to be int32")
    if bias is not None:
        raise RuntimeError("Bias not supported yet")
    if out_dtype is not None and out_dtype is not mat_a.dtype and not (out_dtype is dt.float32
                                                                       and mat_a.dtype is dt.bfloat16):
        raise RuntimeError("Grouped gemm output dtype must match `mat_a` dtype")
    if mat_a.shape[-1] != mat_b.shape[-2]:
        raise RuntimeError("contraction dimension of mat_a and mat_b must match")
    if mat_a.dim() == 3 and mat_b.dim() == 3 and mat_a.shape[0] != mat_b.shape[0]:
        raise RuntimeError("batched dimension has to match")


def _spans(offs: Tensor, groups: int | None) -> list:
    """The (start, end) of each group from cumulative ends."""
    ends = [int(e) for e in offs.numpy().reshape(-1)]
    if groups is not None and len(ends) != groups:
        raise RuntimeError("matrix batch sizes have to match")
    starts = [0] + ends[:-1]
    return list(zip(starts, ends))


def grouped_mm(mat_a: Tensor, mat_b: Tensor, *, offs: Tensor | None = None, bias: Tensor | None = None,
               out_dtype: dt.dtype | None = None) -> Tensor:
    """Per-group products: 3-D x 3-D is a batched matmul; a 2-D operand is cut into groups by `offs`
    (rows of mat_a against mat_b[g], columns of mat_b against mat_a[g], or the shared K dim for 2-D x 2-D)."""
    _check(mat_a, mat_b, offs, bias, out_dtype)
    if out_dtype is not None and out_dtype is not mat_a.dtype:  # bfloat16 in, float32 out: accumulate in float32
        mat_a, mat_b = mat_a.to(out_dtype), mat_b.to(out_dtype)
    if offs is None:
        out = ops.matmul(mat_a, mat_b)
    elif mat_a.dim() == 2 and mat_b.dim() == 3:      # rows of mat_a in groups
        parts = [ops.matmul(mat_a[s:e], mat_b[g]) for g, (s, e) in enumerate(_spans(offs, mat_b.shape[0]))]
        used = sum(e - s for s, e in _spans(offs, None))
        rest = mat_a.shape[0] - used
        if rest > 0:  # rows after the last group: PyTorch leaves them unwritten, tidal zero
            parts.append(ops.zeros((rest, mat_b.shape[2]), dtype=mat_a.dtype, device=mat_a.device))
        out = ops.cat(parts, 0)
    elif mat_a.dim() == 3 and mat_b.dim() == 2:      # columns of mat_b in groups
        parts = [ops.matmul(mat_a[g], mat_b[:, s:e]) for g, (s, e) in enumerate(_spans(offs, mat_a.shape[0]))]
        rest = mat_b.shape[1] - sum(e - s for s, e in _spans(offs, None))
        if rest > 0:
            parts.append(ops.zeros((mat_a.shape[1], rest), dtype=mat_a.dtype, device=mat_a.device))
        out = ops.cat(parts, 1)
    else:                                            # 2-D x 2-D: the contraction dim in groups
        spans = _spans(offs, None)
        out = ops.stack([ops.matmul(mat_a[:, s:e], mat_b[s:e]) for s, e in spans]) if spans else \
            ops.zeros((0, mat_a.shape[0], mat_b.shape[1]), dtype=mat_a.dtype, device=mat_a.device)
    return out


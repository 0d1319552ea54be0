"""torch's memory-overlap rules for ops that write an existing tensor (in-place ops and `out=`).

One place decides when a written-to tensor may share memory with itself or with what the op reads:
- internal overlap: an output with a 0-stride dim of size > 1 (an `expand`ed tensor) is refused, as
  torch's assert_no_internal_overlap refuses it (other self-overlapping layouts pass, as in torch);
- an input sharing memory with the output: elementwise ops may read exactly the memory they write (the
  same elements in the same order, `x.add_(1)`), any other overlap is refused; other ops (index_select,
  cat, masked_select...) refuse full overlap too, as torch's assert_no_overlap.
`check_out` also refuses a write into an inference tensor outside inference_mode (`check_written`), since
every in-place op and `out=` passes through it.
"""
from __future__ import annotations

import numpy as np

from ...tensor import Tensor
from ...tensor.tensor import INFERENCE

INTERNAL = ("unsupported operation: more than one element of the written-to tensor refers to a single memory "
            "location. Please clone() the tensor before performing the operation.")
PARTIAL = ("unsupported operation: some elements of the input tensor and the written-to tensor refer to a single "
           "memory location. Please clone() the tensor before performing the operation.")

INFERENCE_WRITE = ("Inplace update to inference tensor outside InferenceMode is not allowed.You can make a clone to "
                   "get a normal tensor before doing inplace update.See https://github.com/pytorch/rfcs/pull/17 for "
                   "more details.")


def check_written(out: Tensor) -> None:
    """torch's RuntimeError for an in-place write into an inference tensor (or a view of one) outside
    inference_mode (`_inference`, `_base`: class defaults, so a normal tensor costs two attribute reads)."""
    base = out._base if out._base is not None else out
    if base._inference and not INFERENCE.now():
        raise RuntimeError(INFERENCE_WRITE)


def has_internal_overlap(t: Tensor) -> bool:
    """Whether `t` repeats an element along a dim (stride 0, size > 1): torch's definite internal overlap."""
    v = t._v
    return 0 in v.strides and 0 not in v.shape and any(s == 0 and n > 1 for n, s in zip(v.shape, v.strides))


def _offsets(v) -> np.ndarray:
    if not v.shape:
        return np.array([v.offset])
    grids = np.ix_(*[np.arange(n) * s for n, s in zip(v.shape, v.strides)])
    return np.unique(sum(grids, np.zeros((), np.int64)) + v.offset)


def _span(v) -> tuple:
    far = sum((n - 1) * s for n, s in zip(v.shape, v.strides) if n > 0)
    return v.offset, v.offset + far


def overlap(a: Tensor, b: Tensor) -> str | None:
    """"full" when `a` and `b` view the same elements in the same layout, "partial" when they share some
    element otherwise, None when they share none (or either is empty)."""
    av, bv = a._v, b._v
    if av.blob is not bv.blob or 0 in av.shape or 0 in bv.shape:
        return None
    if av is bv or (av.shape, av.strides, av.offset) == (bv.shape, bv.strides, bv.offset):
        return "full"
    (lo_a, hi_a), (lo_b, hi_b) = _span(av), _span(bv)
    if hi_a < lo_b or hi_b < lo_a or not np.intersect1d(_offsets(av), _offsets(bv)).size:
        return None
    return "partial"


def check_out(out: Tensor, reads=(), elementwise: bool = False) -> None:
    """torch's RuntimeError when `out` overlaps itself or any tensor in `reads` (numbers and None are
    skipped); `elementwise`: an input viewing exactly `out`'s elements is allowed."""
    check_written(out)
    if has_internal_overlap(out):
        raise RuntimeError(INTERNAL)
    for r in reads:
        if isinstance(r, Tensor):
            found = overlap(out, r)
            if found == "partial" or (found == "full" and not elementwise):
                raise RuntimeError(PARTIAL)

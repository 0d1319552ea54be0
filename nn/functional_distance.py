"""pdist: the p-norm distances between every pair of rows of a matrix."""
from __future__ import annotations

import numpy as np

from .. import ops
from ..ops.dispatch.node_names import torch_node
from ..ops.windowed.windows import not_implemented
from ..tensor import Tensor
from ..tensor import dtype as dt

__all__ = ["pdist"]


def pdist(input: Tensor, p: float = 2) -> Tensor:
    """Distances ||x_i - x_j||_p for i < j over the rows of (N, M) `input`, in row-major pair order."""
    if input.dim() != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.dim()}D")
    if not input.dtype.is_floating_point or input.dtype.is_complex:
        raise RuntimeError("pdist only supports floating-point dtypes")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    if input.dtype in (dt.float16, dt.bfloat16):  # PyTorch's CPU kernel has no 16-bit floats
        raise not_implemented("pdist", input.dtype)
    first, second = np.triu_indices(input.shape[0], 1)
    rows = lambda idx: input.index_select(0, ops.tensor(idx, device=input.device))  # noqa: E731
    diff = rows(first) - rows(second)
    if p == 0:  # a count of differing coordinates: its gradient is zero (not absent), as PyTorch's
        result = (diff != 0).to(diff.dtype).sum(1) + (diff - diff.detach()).sum(1) * 0
    else:
        result = diff.norm(p, 1)
    return torch_node(result, "PdistBackward0", input)  # (torch's node of _pdist_forward, which saves the input)

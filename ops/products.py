"""Matrix products on NumPy arrays for the CPU kernels: BLAS whenever the result stays exact."""
from __future__ import annotations

import numpy as np

from ..tensor import dtype as dt

HALF_NP = (np.dtype(np.float16), dt.bfloat16.np)  # stored in 16 bits, computed in float32


def _blas_ready(x: np.ndarray) -> np.ndarray:
    """`x`, or a contiguous copy when its matrix layout would push NumPy off BLAS onto a slow loop."""
    if x.dtype.kind != "f" or x.ndim == 0:
        return x
    item = x.itemsize
    if x.ndim == 1:
        return x if x.strides[0] == item or x.shape[0] <= 1 else np.ascontiguousarray(x)
    (rows, cols), (s0, s1) = x.shape[-2:], x.strides[-2:]
    if (s1 == item and s0 >= cols * item) or (s0 == item and s1 >= rows * item):
        return x
    return np.ascontiguousarray(x)


def _exact_in_float64(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether an integer product of `a` and `b` fits float64's 53-bit mantissa (so BLAS is exact)."""
    if a.size == 0 or b.size == 0:
        return True
    bound_a = max(abs(int(a.max())), abs(int(a.min())))
    bound_b = max(abs(int(b.max())), abs(int(b.min())))
    depth = a.shape[-1] if a.ndim else 1
    return bound_a * bound_b * max(depth, 1) < 2 ** 53


def product_into(a: np.ndarray, b: np.ndarray, acc: np.ndarray) -> None:
    """acc[...] = a @ b (NumPy's matmul rules), through BLAS whenever the result stays exact."""
    kind = acc.dtype.kind
    if kind in "iu":
        if _exact_in_float64(a, b):
            exact = np.asarray(np.matmul(a.astype(np.float64), b.astype(np.float64))).astype(np.int64)
            acc[...] = exact.astype(acc.dtype, copy=False)  # through int64: narrow types wrap as in PyTorch
        else:  # integer overflow wraps, as in PyTorch
            np.matmul(a, b, out=acc)
    elif acc.dtype in HALF_NP:
        acc[...] = np.matmul(a.astype(np.float32), b.astype(np.float32))
    else:
        np.matmul(_blas_ready(a), _blas_ready(b), out=acc)

"""Adaptive pools: average and max pooling of any input size to a given output size, in 1-D, 2-D and 3-D.

Windows of (nearly) equal length, as torch bounds them: a table of windows (max) or an averaging matrix (average)
per dim, run by the kernels registered in pool.py beside the other pools'.
"""
from __future__ import annotations

import numpy as np

from ...tensor import Tensor
from ..movement.memory_format import CONTIGUOUS
from ..dispatch.node_names import torch_node
from .windows import batched, check_tensor, int_list, not_implemented, pair
from .pool import PoolGeometry, _batched_format, _formats, _linear_pool, _max_pool, _squeezed

__all__ = ["adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d", "adaptive_max_pool1d",
           "adaptive_max_pool2d", "adaptive_max_pool3d", "adaptive_max_pool1d_with_indices",
           "adaptive_max_pool2d_with_indices", "adaptive_max_pool3d_with_indices"]
METHODS: dict = {}



def _adaptive_bounds(size: int, out: int) -> tuple:
    """PyTorch's adaptive windows: [floor(i * size / out), ceil((i + 1) * size / out))."""
    i = np.arange(out)
    return i * size // out, ((i + 1) * size + out - 1) // out


def _average_matrix(size: int, out: int) -> np.ndarray:
    start, end = _adaptive_bounds(size, out)
    taps = np.arange(size)
    inside = (taps >= start[:, None]) & (taps < end[:, None])
    return inside / (end - start)[:, None]


def _window_table(size: int, out: int) -> np.ndarray:
    """The input positions of each adaptive window, padded by repeating its last position."""
    start, end = _adaptive_bounds(size, out)
    width = int((end - start).max()) if out else 1
    return np.minimum(start[:, None] + np.arange(width), end[:, None] - 1)


def _adaptive_geometry(op: str, spatial: int, input, output_size, table) -> PoolGeometry:
    """Checks and geometry of the adaptive pools; `table(size, out)` builds each dim's matrix or table."""
    check_tensor(input, op, "input", 1)
    if spatial == 1:
        sizes = int_list(output_size, op, "output_size")
        if len(sizes) != 1:
            raise RuntimeError(f"{op}() argument 'output_size' should contain one int (got {len(sizes)})")
        if input.dim() not in (2, 3):
            raise RuntimeError(f"Expected 2 to 3 dimensions, but got {input.dim()}-dimensional tensor for argument "
                               f"#1 'self' (while checking arguments for {op})")
        if sizes[0] < 0:  # torch's 1-d pools run the 2-d kernel on (..., 1, L)
            if op.startswith("adaptive_avg"):
                raise RuntimeError(f"adaptive_avg_pool2d: elements of output_size must be greater than or equal to 0 "
                                   f"but received {{1, {sizes[0]}}}")
            shape = list(batched(input.shape, 1)[:2]) + [1, sizes[0]]
            raise RuntimeError(f"Trying to create tensor with negative dimension {sizes[0]}: {shape}")
    else:
        if isinstance(output_size, (list, tuple)) and input.dim() <= len(output_size):
            raise ValueError(f"Input dimension should be at least {len(output_size) + 1}")  # torch's F wrapper
        items = list(output_size) if isinstance(output_size, (list, tuple)) else [output_size] * spatial
        if len(items) != spatial:
            raise RuntimeError(f"{op}: output_size must be {spatial}" if op.startswith("adaptive_avg") else
                               f"{op}(): internal error: output_size.size() must be {spatial}")
        if input.dim() not in (spatial + 1, spatial + 2):
            colon = ":" if op.startswith("adaptive_max") else ""
            raise RuntimeError(f"{op}(): Expected {spatial + 1}D or {spatial + 2}D tensor, but got{colon} "
                               f"{list(input.shape)}")
        sizes = [input.shape[-spatial + k] if v is None else v for k, v in enumerate(items)]
        sizes = int_list(sizes, op, "output_size")
        if min(sizes) < 0:
            raise RuntimeError(f"{op}: elements of output_size must be greater than or equal to 0 but received "
                               f"{{{', '.join(map(str, sizes))}}}")
    for d in range(1, input.dim()):
        if input.shape[d] == 0:
            raise RuntimeError(f"{op}(): Expected input to have non-zero size for non-batch dimensions, but input "
                               f"has sizes {list(input.shape)} with dimension {d} being empty")
    if not input.dtype.is_floating_point:
        raise not_implemented(f"{op}_cpu" if spatial == 3 else op, input.dtype)
    # complex input: torch averages to size 1 with a mean, and has no kernel otherwise (1-d pools run the 2-d one)
    if input.dtype.is_complex and not (op.startswith("adaptive_avg") and all(v == 1 for v in sizes)):
        raise not_implemented(f"{op}_cpu" if spatial == 3 else op.replace("1d", "2d"), input.dtype)
    image4 = batched(input.shape, spatial)
    out = pair(sizes, spatial, 1)
    result = tuple(input.shape[:-spatial]) + tuple(sizes)
    return PoolGeometry(tuple(input.shape), result, image4, image4[:2] + out,
                        tables=tuple(table(n, o) for n, o in zip(image4[2:], out)))

def _adaptive_named(out: Tensor, op: str, input: Tensor, spatial: int) -> Tensor:
    # an average to one element is torch's mean, laid out channels_last(_3d) by an as_strided_ when the input is
    if all(n == 1 for n in out.shape[-spatial:]):
        op = "MeanBackward1" if _batched_format(input, spatial) == CONTIGUOUS else "AsStridedBackward1"
    return torch_node(out, op, input)


def _adaptive_average(op: str, spatial: int, input: Tensor, output_size) -> Tensor:
    geo = _adaptive_geometry(op, spatial, input, output_size, _average_matrix)
    mean = all(n == 1 for n in geo.result4[2:])
    if mean:  # torch's mean, then as_strided_: the gradient is row-major (and the input is not saved)
        geo = geo._replace(result_format=_batched_format(input, spatial))
    elif spatial < 3:
        geo = _formats(geo, _batched_format(input, spatial))
    out = _linear_pool(input, geo, "adaptive_avg_pool2d", saves=not mean)
    return _squeezed(out, input) if spatial == 1 else _adaptive_named(out, op, input, spatial)


def adaptive_avg_pool1d(input: Tensor, output_size) -> Tensor:
    """Average pooling of ((N,) C, L) `input` into `output_size` windows of (nearly) equal length."""
    return _adaptive_average("adaptive_avg_pool1d", 1, input, output_size)


def adaptive_avg_pool2d(input: Tensor, output_size) -> Tensor:
    """Average pooling of ((N,) C, H, W) `input` to `output_size` (an int, or a pair whose None keeps a size)."""
    return _adaptive_average("adaptive_avg_pool2d", 2, input, output_size)


def adaptive_max_pool1d(input: Tensor, output_size, return_indices: bool = False):
    """Max pooling of ((N,) C, L) `input` into `output_size` windows of (nearly) equal length."""
    geo = _adaptive_geometry("adaptive_max_pool1d", 1, input, output_size, _window_table)
    values, index = _max_pool("adaptive_max_pool2d", input, _formats(geo, _batched_format(input, 1)))
    _squeezed(values, input)
    return (values, index) if return_indices else values


def adaptive_max_pool2d(input: Tensor, output_size, return_indices: bool = False):
    """Max pooling of ((N,) C, H, W) `input` to `output_size` (an int, or a pair whose None keeps a size)."""
    geo = _adaptive_geometry("adaptive_max_pool2d", 2, input, output_size, _window_table)
    values, index = _max_pool("adaptive_max_pool2d", input, _formats(geo, _batched_format(input, 2)))
    return (values, index) if return_indices else values


def adaptive_avg_pool3d(input: Tensor, output_size) -> Tensor:
    """Average pooling of ((N,) C, D, H, W) `input` to `output_size` (an int, or a triple whose None keeps a size)."""
    return _adaptive_average("adaptive_avg_pool3d", 3, input, output_size)


def adaptive_max_pool3d(input: Tensor, output_size, return_indices: bool = False):
    """Max pooling of ((N,) C, D, H, W) `input` to `output_size` (an int, or a triple whose None keeps a size)."""
    geo = _adaptive_geometry("adaptive_max_pool3d", 3, input, output_size, _window_table)
    values, index = _max_pool("adaptive_max_pool3d", input, geo)
    return (values, index) if return_indices else values


def _adaptive_max_with_indices(spatial: int):
    pool = {1: adaptive_max_pool1d, 2: adaptive_max_pool2d, 3: adaptive_max_pool3d}[spatial]

    def with_indices(input: Tensor, output_size, return_indices: bool = False) -> tuple:
        return pool(input, output_size, True)
    with_indices.__name__ = f"adaptive_max_pool{spatial}d_with_indices"
    with_indices.__doc__ = f"adaptive_max_pool{spatial}d's values and flat argmax positions."
    return with_indices


adaptive_max_pool1d_with_indices = _adaptive_max_with_indices(1)
adaptive_max_pool2d_with_indices = _adaptive_max_with_indices(2)
adaptive_max_pool3d_with_indices = _adaptive_max_with_indices(3)
